"""Tokens of a rollout's model calls: read from each reader's shape, kept with the rollout
when it is stored, shown on the rollout page (its total, and each step's)."""

from __future__ import annotations

import doctest
import json

import pytest
from django.urls import reverse

import ingest.core.token_usage as token_usage
from ingest.core.token_usage import ROLLOUT_KEY, TokenUsage, rollout_usage, step_usage
from tests.conftest import ingest_file, shared_file


def test_its_examples_hold():
    assert doctest.testmod(token_usage).failed == 0


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        (
            {"attributes": {"gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": 3}},
            (12, 3),
        ),
        (
            {"attributes": {"gen_ai.usage.prompt_tokens": 7, "gen_ai.usage.completion_tokens": 1}},
            (7, 1),
        ),
        ({"attributes": {"llm.token_count.prompt": 5, "llm.token_count.completion": 2}}, (5, 2)),
        ({"span": {"usageDetails": {"input": 120, "output": 18, "total": 138}}}, (120, 18)),
        ({"span": {"prompt_tokens": 120, "completion_tokens": 9}}, (120, 9)),
        ({"span": {"usage_metadata": {"input_tokens": 4, "output_tokens": 6}}}, (4, 6)),
        (
            {
                "tool_call_metadata": {
                    "model_response": {
                        "id": "x",
                        "usage": {"prompt_tokens": 8, "completion_tokens": 1},
                    }
                }
            },
            (8, 1),
        ),
    ],
    ids=[
        "genai",
        "genai-older",
        "openinference",
        "langfuse",
        "langsmith",
        "langsmith-usage-metadata",
        "openhands",
    ],
)
def test_it_reads_each_readers_shape(metadata, expected):
    assert step_usage(metadata) == TokenUsage(*expected)


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        {},
        {"attributes": {"gen_ai.usage.input_tokens": -1}},
        {"attributes": {"gen_ai.usage.input_tokens": True}},
        {"span": "text"},
    ],
)
def test_it_reads_no_usage_where_there_is_none_or_it_is_no_count(metadata):
    assert step_usage(metadata) is None


def test_it_counts_a_response_that_several_steps_repeat_once():
    response = {
        "tool_call_metadata": {
            "model_response": {"id": "r", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}
        }
    }
    assert rollout_usage([response, response]) == TokenUsage(10, 2, 1)
    assert rollout_usage([{"content": "no usage"}]) is None


@pytest.mark.django_db
def test_it_keeps_a_rollouts_tokens_and_the_page_shows_them(client, member, project):
    path = shared_file("otel_genai_any_agent/tests/assets/OPENAI_trace.json")
    ingest_file(project, path)
    rollout = project.trajectories.get()
    spans = json.loads(path.read_text())["spans"]
    usages = [
        (
            s["attributes"]["gen_ai.usage.input_tokens"],
            s["attributes"]["gen_ai.usage.output_tokens"],
        )
        for s in spans
        if "gen_ai.usage.input_tokens" in (s.get("attributes") or {})
    ]
    assert usages
    assert rollout.metadata[ROLLOUT_KEY] == {
        "input": sum(u[0] for u in usages),
        "output": sum(u[1] for u in usages),
        "calls": len(usages),
    }
    client.force_login(member)
    html = client.get(
        reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk])
    ).content.decode()
    total = rollout.metadata[ROLLOUT_KEY]
    assert (
        f"{total['input']:,} in · {total['output']:,} out tokens, {len(usages)} model calls" in html
    )
    assert html.count('class="muted small step-tokens"') == len(usages)


@pytest.mark.django_db
def test_an_openhands_responses_tokens_count_once_though_its_steps_repeat_them(project):
    path = shared_file("openhands/tests/runtime/trajs/basic.json")
    ingest_file(project, path)
    rollout = project.trajectories.get()
    events = json.loads(path.read_text())
    responses = {
        e["tool_call_metadata"]["model_response"]["id"]: e["tool_call_metadata"]["model_response"][
            "usage"
        ]
        for e in events
        if isinstance(e.get("tool_call_metadata"), dict)
        and (e["tool_call_metadata"].get("model_response") or {}).get("usage")
    }
    assert responses
    assert rollout.metadata[ROLLOUT_KEY] == {
        "input": sum(u["prompt_tokens"] for u in responses.values()),
        "output": sum(u["completion_tokens"] for u in responses.values()),
        "calls": len(responses),
    }
