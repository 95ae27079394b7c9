"""One model read from an inspect_ai log ("openai/gpt-4o") and from another format
("gpt-4o") is one policy model of the project: the provider prefix is not stored."""

from __future__ import annotations

import json

import pytest

from ingest.models import Trajectory
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db


def _native(rollout_id: str, model: str) -> bytes:
    return (
        json.dumps(
            {
                "id": rollout_id,
                "outcome": "failure",
                "policy_model": model,
                "steps": [{"role": "user", "content": "revenue per month"}],
            }
        ).encode()
        + b"\n"
    )


def _inspect(model: str) -> bytes:
    sample = {"id": 1, "epoch": 1, "messages": [{"role": "user", "content": "revenue"}]}
    log = {"version": 2, "eval": {"task": "shop", "model": model}, "samples": [sample]}
    return json.dumps(log).encode()


def test_one_model_from_two_formats_is_one_policy_model(project):
    for name, body in (
        ("a.jsonl", _native("a", "gpt-4o-2024-08-06")),
        ("b.json", _inspect("openai/gpt-4o-2024-08-06")),
        ("c.jsonl", _native("c", "meta-llama/Llama-3-8B")),
    ):
        upload = ingest_bytes(project, body, name)
        assert upload.status == "done", upload.error_message
    models = set(Trajectory.objects.filter(project=project).values_list("policy_model", flat=True))
    # An organisation's name is part of the model's, not a provider's.
    assert models == {"gpt-4o-2024-08-06", "meta-llama/Llama-3-8B"}
