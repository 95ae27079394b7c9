"""The overview's cards stay current without the request counting the project: the pipeline
moves the stored counters by the live rollouts assembled since each closing sweep and as
an upload finishes (pipeline.live, pipeline.overview_pending, pipeline.tasks), so the
cards equal a full recount."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.receive import spans_receive
from ingest.otlp.services import live_traces_close
from ingest.selectors import project_counts
from ingest.services import upload_create
from pipeline.live import live_traces_assemble_run, live_traces_close_run, rollouts_assembled
from pipeline.models import OverviewPendingShare, ProjectOverview
from pipeline.overview import overview_aggregates
from pipeline.overview_cards import overview_cards_state
from pipeline.overview_pending import overview_counts_catch_up
from pipeline.refresh import refresh_project_run
from pipeline.tasks import ingest_upload
from tests.conftest import ingest_bytes
from tests.ingest.core.otlp_builders import json_body, json_span

pytestmark = pytest.mark.django_db

CONFIG = ReceiverConfig(close_after_seconds=30, abandon_after_seconds=3600, sweep_after_seconds=60)
CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.input.messages": '[{"role": "user", "content": "Book a room."}]',
    "gen_ai.output.messages": '[{"role": "assistant", "content": "Which city?"}]',
}
TRACE_A, TRACE_B, TRACE_C = ("a1" * 16, "b2" * 16, "c3" * 16)


def _upload_through_the_task(project, name: str, *outcomes: str) -> None:
    lines = [
        json.dumps(
            {
                "id": f"{name}-{n}",
                "outcome": outcome,
                "environment": "shop",
                "steps": [{"role": "user", "content": "x"}] * 4,
                **({"labels": [{"step": 2}]} if outcome == "failure" else {}),
            }
        )
        for n, outcome in enumerate(outcomes)
    ]
    outcome = upload_create(
        project=project,
        stream=io.BytesIO(("\n".join(lines) + "\n").encode()),
        original_name=f"{name}.jsonl",
    )
    assert ingest_upload(outcome.upload.pk) == "done"  # what the worker runs


def _receive(project, spans, **resource):
    decoded = decode_request(
        json_body(spans, {"service.name": "hotel-bot", **resource}), CONTENT_JSON
    )
    return spans_receive(project=project, spans=decoded.spans)


def _recount_matches(project) -> None:
    """The stored cards and charts are what a count of the whole project gives."""
    stored = ProjectOverview.objects.get(project=project).data
    recount = overview_aggregates(project=project)
    assert stored["cards"] == recount["cards"]
    assert stored["failures"] == recount["failures"]
    assert stored["positions"] == recount["positions"]
    assert stored["tools"] == recount["tools"]
    cards = overview_cards_state(project=project)
    assert cards.counts == project_counts(project=project) and cards.newer == 0


def _is_full_count(sql: str) -> bool:
    """The queries of ingest.selectors.project_counts: the outcome counts, the labelled."""
    return 'AS "rollouts"' in sql or ("ingest_label" in sql and "COUNT(" in sql.upper())


def test_it_moves_the_cards_when_an_upload_finishes(project):
    _upload_through_the_task(project, "first", "failure", "success")
    _upload_through_the_task(project, "second", "failure", "unknown", "success")
    _recount_matches(project)
    assert overview_cards_state(project=project).counts["rollouts"] == 5


def test_the_cards_after_closing_live_traces_equal_a_full_recount(
    project, django_capture_on_commit_callbacks
):
    _upload_through_the_task(project, "file", "failure", "success")
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        # An open trace: its rollout is written at once, with no outcome yet.
        _receive(
            project, [json_span(2, parent=1, name="chat", end=2, attributes=CHAT, trace=TRACE_A)]
        )
        live_traces_assemble_run(project.pk, [TRACE_A])
    # Until the sweep's catch-up, the cards show it as newer than the counters.
    assert overview_cards_state(project=project).newer == 1
    assert overview_counts_catch_up() == 1
    _recount_matches(project)
    with django_capture_on_commit_callbacks(execute=True):
        # Its root ends failed: the same rollout is rebuilt and its share moves.
        root = json_span(
            1, name="root", end=9, trace=TRACE_A, attributes={"faultline.outcome": "failure"}
        )
        # ...with a tool call that failed: the tools table moves with it.
        tool = json_span(
            3,
            parent=1,
            name="execute_tool search_hotels",
            start=3,
            end=4,
            trace=TRACE_A,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search_hotels",
            },
            status={"code": 2, "message": "timeout"},
        )
        _receive(project, [root, tool])
        live_traces_assemble_run(project.pk, [TRACE_A])
        # Two more traces: one assembled, one whose assembly task never ran.
        _receive(
            project,
            [json_span(1, name="root", end=9, attributes=CHAT, trace=TRACE_B)],
            **{"faultline.reward": 1},
        )
        live_traces_assemble_run(project.pk, [TRACE_B])
        _receive(project, [json_span(1, name="root", end=9, attributes=CHAT, trace=TRACE_C)])
    later = now + timedelta(seconds=CONFIG.sweep_after_seconds + CONFIG.close_after_seconds + 5)
    with django_capture_on_commit_callbacks(execute=True):
        assert live_traces_close(now=later, config=CONFIG, on_assembled=rollouts_assembled) == 3
    # TRACE_A rebuilt, B, and C assembled by the sweep: noted once each since the catch-up.
    assert OverviewPendingShare.objects.count() == 3
    assert overview_counts_catch_up() == 3
    assert overview_counts_catch_up() == 0
    _recount_matches(project)
    counts = overview_cards_state(project=project).counts
    assert (counts["rollouts"], counts["failed"], counts["succeeded"]) == (5, 2, 2)
    tools = ProjectOverview.objects.get(project=project).data["tools"]
    assert [(t["tool"], t["errors"], t["rollouts"], t["failed"]) for t in tools] == [
        ("search_hotels", 1, 1, 1)
    ]
    # The refresh the closed traces queue moves the same shares again: still exact.
    refresh = refresh_project_run(project.pk)
    assert refresh is not None and refresh.status == "done", refresh.error_message
    _recount_matches(project)


def test_the_overview_request_counts_no_project_when_newer_rollouts_exist(client, member, project):
    _upload_through_the_task(project, "first", "failure", "success")
    # Stored without the pipeline's task: newer than the cards.
    ingest_bytes(
        project,
        b'{"id": "late", "outcome": "failure", "steps": [{"role": "user", "content": "x"}]}\n',
        "late.jsonl",
    )
    with CaptureQueriesContext(connection) as counting:
        project_counts(project=project)
    assert any(_is_full_count(q["sql"]) for q in counting.captured_queries)  # the detector works
    client.force_login(member)
    with CaptureQueriesContext(connection) as page:
        response = client.get(reverse("dashboard:project_detail", args=[project.slug]))
    assert response.status_code == 200
    assert not [q["sql"] for q in page.captured_queries if _is_full_count(q["sql"])]
    assert response.context["counts"]["rollouts"] == 2
    lag = overview_cards_state(project=project).lag_message
    assert "1 newer rollout is being analysed" in lag
    assert f'<p class="muted small" id="cards-lag">{lag}</p>' in response.content.decode()


def test_the_overview_request_shows_no_lag_once_the_sweep_counted_live_rollouts(
    client, member, project, django_capture_on_commit_callbacks
):
    _upload_through_the_task(project, "first", "failure")
    with django_capture_on_commit_callbacks(execute=True):
        _receive(project, [json_span(1, name="root", end=9, attributes=CHAT, trace=TRACE_A)])
        live_traces_assemble_run(project.pk, [TRACE_A])
    overview_counts_catch_up()  # what the closing sweep runs
    client.force_login(member)
    with CaptureQueriesContext(connection) as page:
        response = client.get(reverse("dashboard:project_detail", args=[project.slug]))
    assert not [q["sql"] for q in page.captured_queries if _is_full_count(q["sql"])]
    assert response.context["counts"]["rollouts"] == 2
    assert 'id="cards-lag"' not in response.content.decode()


def test_the_closing_sweep_moves_the_counters_of_live_rollouts(project):
    _upload_through_the_task(project, "first", "failure")
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT, trace=TRACE_A)])
    live_traces_assemble_run(project.pk, [TRACE_A])
    assert overview_cards_state(project=project).newer == 1
    live_traces_close_run()  # what Celery beat's close_quiet_traces runs
    assert not OverviewPendingShare.objects.exists()
    _recount_matches(project)


def test_a_catch_up_takes_only_the_rows_it_read_and_leaves_the_rest(project, monkeypatch):
    _upload_through_the_task(project, "first", "failure")
    for trace in (TRACE_A, TRACE_B):
        _receive(project, [json_span(1, name="root", end=9, attributes=CHAT, trace=trace)])
        live_traces_assemble_run(project.pk, [trace])
    monkeypatch.setattr("pipeline.overview_pending.CATCH_UP_ROWS", 1)
    assert overview_counts_catch_up() == 1
    assert OverviewPendingShare.objects.count() == 1
    assert overview_counts_catch_up() == 1
    _recount_matches(project)
