"""Fixtures of the REST API tests: a project with a few rollouts of every kind, ingested
through the real upload path, its token, another project's token and a revoked one."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from projects.models import Project
from projects.tokens import project_token_issue, token_issue, token_revoke
from tests.conftest import SHARED_DATA, ingest_bytes

# An external id with "/" in it, as inspect_ai's are (run/sample/epoch).
SLASHED_ID = "run-7/sample 3/epoch1"


def native(
    external_id: str,
    *,
    outcome: str = "failure",
    environment: str = "airline",
    model: str = "gpt-4o",
    task_id: str = "t1",
    reward: float | None = None,
    steps: int = 4,
    label: int | None = None,
) -> dict[str, object]:
    row: dict[str, object] = {
        "id": external_id,
        "outcome": outcome,
        "environment": environment,
        "policy_model": model,
        "task_id": task_id,
        "task_text": f"Task {task_id}: change the reservation",
        "steps": [
            {"role": "user", "content": "Please change my flight."},
            *[
                {"role": "assistant", "agent": "planner", "content": f"Step {i} of the plan."}
                for i in range(1, steps)
            ],
        ],
    }
    if reward is not None:
        row["reward"] = reward
    if label is not None:
        row["labels"] = [{"step": label, "reason": "booked before confirming"}]
    return row


ROLLOUTS = [
    native("f1", environment="airline", model="gpt-4o", task_id="t1", reward=0.0, steps=5, label=2),
    native("f2", environment="airline", model="gpt-4o-mini", task_id="t2", reward=0.2, steps=3),
    native("f3", environment="retail", model="gpt-4o", task_id="t3", steps=7),
    native("f4", environment="retail", model="gpt-4o-mini", task_id="t4", reward=0.2, steps=4),
    native("s1", outcome="success", environment="airline", task_id="t1", reward=1.0, steps=6),
    native("s2", outcome="success", environment="retail", task_id="t3", steps=2),
    native(SLASHED_ID, outcome="unknown", environment="retail", task_id="t5", steps=3),
]


def jsonl(rows: list[dict[str, object]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    # The standing users' passwords are hashed at the production cost otherwise (~0.5 s each).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_token_counts():
    # Refused tokens are counted in the (shared, per-process) test cache.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def api_project(project: Project) -> Project:
    upload = ingest_bytes(project, jsonl(ROLLOUTS), "rollouts.jsonl")
    assert upload.status == "done", upload.error_message
    return project


@pytest.fixture
def token(api_project: Project) -> str:
    return project_token_issue(project=api_project, name="CI job")


@pytest.fixture
def other_project(outsider) -> Project:
    return Project.objects.create(name="Other team", slug="other")


@pytest.fixture
def other_token(other_project: Project) -> str:
    return project_token_issue(project=other_project)


@pytest.fixture
def revoked_token(project: Project) -> str:
    row, value = token_issue(project=project, name="leaked")
    token_revoke(token=row)
    return value


def auth(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def tau_project(project: Project) -> Project:
    """tau-bench airline rollouts after the real refresh: attributions and misbehaviours."""
    from pipeline.refresh import refresh_project_run
    from tests.conftest import TAU_AIRLINE, ingest_file, shared_file

    ingest_file(project, shared_file(str(TAU_AIRLINE.relative_to(SHARED_DATA))))
    refresh = refresh_project_run(project.pk)
    assert refresh is not None and refresh.status == "done", refresh
    return project


@pytest.fixture
def token_of_project(project: Project) -> str:
    """A token of the standing project before any rollout is stored."""
    return project_token_issue(project=project)
