"""The snippets of docs/send-traces.md, run as written against a live server."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from ingest.core.records import Outcome
from ingest.models import LiveTrace, LiveTraceState, Trajectory
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.services import live_traces_close
from projects.tokens import project_token_issue
from tests.ingest.otlp.exporters import REPO_ROOT, exporter_env, run_python

pytestmark = pytest.mark.django_db(transaction=True)

DOC = REPO_ROOT / "docs" / "send-traces.md"
SNIPPET = re.compile(r"<!-- snippet: (\S+)[^>]*-->\n```python\n(.*?)```", re.DOTALL)


def snippets() -> dict[str, str]:
    return dict(SNIPPET.findall(DOC.read_text()))


def _run(name: str, live_server, token: str, tmp_path: Path, **env: str) -> str:
    script = tmp_path / f"{name}.py"
    script.write_text(snippets()[name])
    return run_python([str(script)], exporter_env(live_server.url, token, **env))


@pytest.fixture
def token(project):
    return project_token_issue(project=project)


def _traceparent(output: str) -> str:
    return re.search(r"traceparent=(\S+)", output).group(1)


def test_it_documents_the_snippets_it_runs():
    assert set(snippets()) == {
        "sdk-genai",
        "openinference-instrumentor",
        "openinference-spans",
        "later-outcome",
    }


def test_it_turns_the_sdk_snippet_into_a_rollout(live_server, token, tmp_path, eager_celery):
    trace_id = _traceparent(_run("sdk-genai", live_server, token, tmp_path)).split("-")[1]
    rollout = Trajectory.objects.get(external_id=trace_id)
    assert [(s.kind, s.agent, s.tool_name) for s in rollout.steps.order_by("index")] == [
        ("message", "user", ""),
        ("message", "support", ""),
        ("tool_call", "support", "refund_order"),
        ("tool_result", "tool", "refund_order"),
    ]
    assert (rollout.task_id, rollout.environment, rollout.agent_system) == (
        "refund-17",
        "retail",
        "support",
    )
    assert rollout.outcome == Outcome.UNKNOWN


def test_it_attaches_an_outcome_sent_later_from_another_process(
    live_server, token, tmp_path, eager_celery
):
    traceparent = _traceparent(_run("sdk-genai", live_server, token, tmp_path))
    later = timezone.now() + timedelta(seconds=31)
    assert live_traces_close(now=later, config=ReceiverConfig(close_after_seconds=30)) == 1
    _run("later-outcome", live_server, token, tmp_path, TRACEPARENT=traceparent)
    live = LiveTrace.objects.get(trace_id=traceparent.split("-")[1])
    assert live.state == LiveTraceState.CLOSED and live.rollout.outcome == Outcome.FAILURE
    assert live.rollout.metadata["evaluations"][0]["name"] == "refund_policy"
    assert live.rollout.step_count == 4  # the evaluator's span is not a step


def test_it_reads_the_spans_of_an_openinference_instrumentation(
    live_server, token, tmp_path, eager_celery
):
    _run("openinference-spans", live_server, token, tmp_path)
    rollout = Trajectory.objects.get()
    assert [(s.kind, s.tool_name) for s in rollout.steps.order_by("index")] == [
        ("message", ""),
        ("message", ""),
        ("tool_call", "get_weather"),
        ("tool_result", "get_weather"),
    ]
    assert rollout.policy_model == "gpt-4o-mini"
    assert rollout.task_text == "What is the weather in Oslo?"


def test_it_runs_the_openinference_instrumentor_snippet(live_server, token, tmp_path):
    pytest.importorskip("openinference.instrumentation.openai")
    assert _run("openinference-instrumentor", live_server, token, tmp_path) == ""
