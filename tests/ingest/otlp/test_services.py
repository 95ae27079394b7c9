"""Stored spans become one rollout: growth, duplicates, closing, late spans, idempotency."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.core.records import Outcome
from ingest.models import LiveTrace, LiveTraceState, ReceivedSpan, Trajectory, Upload
from ingest.otlp.config import ReceiverConfig
from ingest.otlp.receive import spans_receive
from ingest.otlp.rollouts import STREAM_UPLOAD_NAME
from ingest.otlp.services import live_trace_assemble, live_traces_assemble, live_traces_close
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

pytestmark = pytest.mark.django_db

CONFIG = ReceiverConfig(close_after_seconds=30, abandon_after_seconds=3600, sweep_after_seconds=60)
CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.input.messages": '[{"role": "user", "content": "Book a room."}]',
    "gen_ai.output.messages": '[{"role": "assistant", "content": "Which city?"}]',
}
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "find_hotel"}


def _receive(project, spans, resource=None):
    decoded = decode_request(json_body(spans, resource), CONTENT_JSON)
    return spans_receive(project=project, spans=decoded.spans)


def _refresh(project_id: int) -> None:
    """What the pipeline passes as on_changed (it queues the refresh); a no-op here, the
    tests count the on-commit callbacks the services schedule for it."""


def _assemble(project) -> Trajectory:
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE], on_changed=_refresh)
    return LiveTrace.objects.get(trace_id=TRACE).rollout


def _later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


def test_it_creates_the_rollout_when_the_first_spans_arrive(project):
    _receive(project, [json_span(2, parent=1, name="chat", start=1, end=2, attributes=CHAT)])
    rollout = _assemble(project)
    assert rollout.external_id == TRACE and rollout.project == project
    assert [step.content for step in rollout.steps.order_by("index")] == [
        "Book a room.",
        "Which city?",
    ]
    assert rollout.upload.original_name == STREAM_UPLOAD_NAME
    assert LiveTrace.objects.get(trace_id=TRACE).state == LiveTraceState.OPEN


def test_it_grows_the_same_rollout_as_more_spans_arrive(project):
    _receive(project, [json_span(2, parent=1, name="chat", start=1, end=2, attributes=CHAT)])
    first = _assemble(project)
    _receive(project, [json_span(3, parent=1, name="tool", start=3, end=4, attributes=TOOL)])
    _receive(project, [json_span(1, name="root", end=9)])
    grown = _assemble(project)
    assert grown.pk == first.pk and Trajectory.objects.count() == 1
    assert [step.kind for step in grown.steps.order_by("index")] == [
        "message",
        "message",
        "tool_call",
        "tool_result",
    ]
    assert grown.step_count == 4


def test_it_does_nothing_when_the_assembly_task_is_delivered_twice(project):
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert live_trace_assemble(live_trace_id=live.pk) is True
    assert live_trace_assemble(live_trace_id=live.pk) is False
    assert Trajectory.objects.count() == 1


def test_it_keeps_an_outcome_attached_later_when_the_trace_states_none(project):
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    rollout = _assemble(project)
    Trajectory.objects.filter(pk=rollout.pk).update(outcome=Outcome.FAILURE, reward=0.0)
    _receive(project, [json_span(2, parent=1, name="tool", start=3, end=4, attributes=TOOL)])
    rollout = _assemble(project)
    assert (rollout.outcome, rollout.reward) == (Outcome.FAILURE, 0.0)
    assert rollout.step_count == 4


def test_an_outcome_attached_through_the_api_stays_over_what_the_trace_states(project):
    # The trace's root says success; an evaluator attaches failure and a reward; one late
    # span rebuilt the rollout from the trace alone and undid the verdict.
    from ingest.outcomes import rollout_outcome_set

    _receive(
        project,
        [json_span(1, name="root", end=9, attributes={**CHAT, "faultline.outcome": "success"})],
    )
    rollout = _assemble(project)
    assert rollout.outcome == Outcome.SUCCESS
    rollout_outcome_set(rollout=rollout, outcome=Outcome.FAILURE, reward=0.25)
    _receive(project, [json_span(2, parent=1, name="tool", start=3, end=4, attributes=TOOL)])
    rollout = _assemble(project)
    assert (rollout.outcome, rollout.reward) == (Outcome.FAILURE, 0.25)
    assert rollout.step_count == 4


def test_a_reward_attached_alone_stays_while_the_trace_states_the_outcome(project):
    from ingest.outcomes import rollout_outcome_set

    _receive(
        project,
        [json_span(1, name="root", end=9, attributes={**CHAT, "faultline.outcome": "failure"})],
    )
    rollout_outcome_set(rollout=_assemble(project), reward=0.7)
    _receive(project, [json_span(2, parent=1, name="tool", start=3, end=4, attributes=TOOL)])
    rollout = _assemble(project)
    assert (rollout.outcome, rollout.reward) == (Outcome.FAILURE, 0.7)


def test_it_reads_grouping_and_outcome_from_the_resource(project):
    resource = {"service.name": "hotel-bot", "faultline.task.id": "t-1", "faultline.reward": 1}
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)], resource)
    rollout = _assemble(project)
    assert (rollout.task_id, rollout.outcome, rollout.reward) == ("t-1", Outcome.SUCCESS, 1.0)
    assert rollout.agent_system == "hotel-bot"


def test_it_closes_a_trace_when_its_root_ended_and_it_was_quiet(
    project, django_capture_on_commit_callbacks
):
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    _assemble(project)
    assert live_traces_close(now=_later(10), config=CONFIG) == 0
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert live_traces_close(now=_later(31), config=CONFIG, on_changed=_refresh) == 1
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert live.state == LiveTraceState.CLOSED and live.closed_at is not None
    assert len(callbacks) == 1  # the project's refresh
    assert live_traces_close(now=_later(62), config=CONFIG) == 0


def test_it_keeps_a_trace_open_while_its_root_has_not_ended(project):
    _receive(project, [json_span(2, parent=1, name="chat", start=1, end=2, attributes=CHAT)])
    _assemble(project)
    assert live_traces_close(now=_later(600), config=CONFIG) == 0
    assert live_traces_close(now=_later(3601), config=CONFIG) == 1  # abandoned


def test_it_assembles_a_trace_whose_task_was_never_delivered_when_closing(
    project, django_capture_on_commit_callbacks
):
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    with django_capture_on_commit_callbacks(execute=False):
        assert live_traces_close(now=_later(61), config=CONFIG) == 1
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert not live.pending and live.rollout.step_count == 2


def test_it_leaves_a_quiet_trace_open_while_its_assembly_task_is_on_its_way(project):
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    assert live_traces_close(now=_later(31), config=CONFIG) == 0  # quiet, not yet stale
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert live.pending and live.state == LiveTraceState.OPEN
    _assemble(project)
    assert live_traces_close(now=_later(31), config=CONFIG) == 1


def test_it_sweeps_pending_traces_of_an_open_trace_whose_task_was_lost(project):
    _receive(project, [json_span(2, parent=1, name="chat", start=1, end=2, attributes=CHAT)])
    live_traces_close(now=_later(61), config=CONFIG)
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert not live.pending and live.rollout is not None and live.state == LiveTraceState.OPEN


def test_it_updates_a_closed_rollout_with_a_late_span_and_queues_its_refresh(
    project, django_capture_on_commit_callbacks
):
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    _assemble(project)
    with django_capture_on_commit_callbacks(execute=False):
        live_traces_close(now=_later(31), config=CONFIG, on_changed=_refresh)
    _receive(project, [json_span(2, parent=1, name="tool", start=3, end=4, attributes=TOOL)])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        rollout = _assemble(project)
    assert rollout.step_count == 4 and len(callbacks) == 1
    assert LiveTrace.objects.get(trace_id=TRACE).state == LiveTraceState.CLOSED


def test_it_records_why_a_broken_trace_cannot_become_a_rollout(project):
    _receive(
        project,
        [json_span(1, parent=2, name="a", end=9), json_span(2, parent=1, name="b", end=9)],
    )
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    live = LiveTrace.objects.get(trace_id=TRACE)
    assert "parent cycle" in live.error_message and not live.pending and live.rollout is None


def test_it_keeps_traces_of_different_projects_apart(project, django_user_model):
    from projects.models import Project

    other = Project.objects.create(name="Other", slug="other")
    spans = [json_span(1, name="root", end=9, attributes=CHAT)]
    _receive(project, spans)
    _receive(other, spans)
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    live_traces_assemble(project_id=other.pk, trace_ids=[TRACE])
    assert sorted(Trajectory.objects.values_list("project__slug", flat=True)) == ["acme", "other"]


def test_it_counts_the_stream_uploads_rollouts_when_closing(
    project, django_capture_on_commit_callbacks
):
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    _assemble(project)
    with django_capture_on_commit_callbacks(execute=False):
        live_traces_close(now=_later(31), config=CONFIG, on_changed=_refresh)
    upload = Upload.objects.get(original_name=STREAM_UPLOAD_NAME)
    assert (upload.trajectory_count, upload.step_count) == (1, 2)


def test_it_assembles_the_traces_of_one_request_together(project):
    other_trace = "1" * 32
    broken_trace = "2" * 32
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT)])
    first = _assemble(project)
    spans = [
        json_span(2, parent=1, name="tool", start=3, end=4, attributes=TOOL),
        json_span(1, name="root", end=9, attributes=CHAT, trace=other_trace),
        json_span(1, parent=2, name="a", trace=broken_trace),
        json_span(2, parent=1, name="b", trace=broken_trace),
    ]
    trace_ids = _receive(project, spans)
    assert live_traces_assemble(project_id=project.pk, trace_ids=trace_ids) == 3
    rollouts = {live.trace_id: live for live in LiveTrace.objects.select_related("rollout")}
    assert rollouts[TRACE].rollout.pk == first.pk and rollouts[TRACE].rollout.step_count == 4
    assert rollouts[other_trace].rollout.step_count == 2
    assert rollouts[broken_trace].rollout is None and rollouts[broken_trace].error_message
    assert not any(live.pending for live in rollouts.values())


def test_it_names_the_rollouts_of_every_assembly_on_commit(
    project, django_capture_on_commit_callbacks
):
    assembled: list[tuple[int, list[int]]] = []

    def on_assembled(project_id: int, rollout_ids: list[int]) -> None:
        assembled.append((project_id, rollout_ids))

    _receive(project, [json_span(2, parent=1, name="chat", start=1, end=2, attributes=CHAT)])
    with django_capture_on_commit_callbacks(execute=True):
        live_traces_assemble(project_id=project.pk, trace_ids=[TRACE], on_assembled=on_assembled)
    rollout = LiveTrace.objects.get(trace_id=TRACE).rollout
    assert assembled == [(project.pk, [rollout.pk])]  # an open trace's too
    _receive(project, [json_span(1, name="root", end=9)])
    with django_capture_on_commit_callbacks(execute=True):
        assert live_traces_close(now=_later(3601), config=CONFIG, on_assembled=on_assembled) == 1
    assert assembled == [(project.pk, [rollout.pk])] * 2  # the sweep assembled it again


def test_it_stores_a_span_once_when_a_request_repeats_one_stored_before(project):
    first = json_span(2, parent=1, name="chat", end=2, attributes=CHAT)
    _receive(project, [first])
    # A retry carrying the stored span with a new one, and a span twice in one request.
    second = json_span(3, parent=1, name="tool", end=3, attributes=TOOL)
    _receive(project, [first, second])
    third = json_span(4, parent=1, name="chat", end=4, attributes=CHAT)
    _receive(project, [third, third])
    assert sorted(ReceivedSpan.objects.values_list("span_id", flat=True)) == sorted(
        {span["spanId"] for span in (first, second, third)}
    )


def test_it_clears_the_claims_of_a_request_larger_than_one_update(project, monkeypatch):
    monkeypatch.setattr("ingest.otlp.services.CLEAR_BATCH", 2)
    traces = [f"{n:032x}" for n in range(1, 6)]
    _receive(project, [json_span(1, name="root", end=9, attributes=CHAT, trace=t) for t in traces])
    assert live_traces_assemble(project_id=project.pk, trace_ids=traces) == 5
    rows = LiveTrace.objects.filter(project=project)
    assert not rows.filter(pending=True).exists()
    assert rows.filter(rollout__isnull=False, pending_spans=0).count() == 5


def test_it_assembles_rows_stored_before_spans_kept_their_wire_form(project):
    from ingest.core.otlp_stored import ENCODING_LEGACY, stored_spans
    from ingest.core.otlp_trace import span_to_json

    decoded = decode_request(
        json_body([json_span(1, name="root", end=9, attributes=CHAT)]), CONTENT_JSON
    )
    ((span, resource),) = stored_spans([(s.encoding, s.payload, None) for s in decoded.spans])
    ReceivedSpan.objects.create(
        project=project,
        trace_id=TRACE,
        span_id=span.span_id,
        encoding=ENCODING_LEGACY,
        span=span_to_json(span, resource),
        received_at=timezone.now(),
    )
    LiveTrace.objects.create(
        project=project,
        trace_id=TRACE,
        pending=True,
        pending_spans=1,
        root_ended=True,
        first_span_at=timezone.now(),
        last_span_at=timezone.now(),
    )
    assert live_traces_assemble(project_id=project.pk, trace_ids=[TRACE]) == 1
    rollout = LiveTrace.objects.get(project=project, trace_id=TRACE).rollout
    assert rollout is not None and rollout.steps.count() >= 1


def test_it_marks_the_traces_of_a_request_larger_than_one_upsert(project, monkeypatch):
    monkeypatch.setattr("ingest.otlp.receive.UPSERT_BATCH", 2)
    traces = [f"{n:032x}" for n in range(1, 6)]
    spans = [json_span(1, name="root", end=9, attributes=CHAT, trace=t) for t in traces]
    assert _receive(project, spans) == traces
    _receive(project, spans[:3])  # sent again: pending counts add up
    rows = dict(LiveTrace.objects.filter(project=project).values_list("trace_id", "pending_spans"))
    assert rows == {t: (2 if n < 3 else 1) for n, t in enumerate(traces)}


@pytest.fixture
def steps_refuse_poison():
    """The database itself refuses a step whose content says "poison" (a CHECK on
    PostgreSQL, a trigger on SQLite): a write that fails the same way every time."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "ALTER TABLE ingest_step ADD CONSTRAINT test_no_poison "
                "CHECK (content NOT LIKE '%%poison%%')"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER test_no_poison BEFORE INSERT ON ingest_step "
                "WHEN NEW.content LIKE '%poison%' BEGIN SELECT RAISE(ABORT, 'poison'); END"
            )
    yield
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE ingest_step DROP CONSTRAINT test_no_poison")
        else:
            cursor.execute("DROP TRIGGER test_no_poison")


def _chat(content: str) -> dict[str, str]:
    return {**CHAT, "gen_ai.input.messages": f'[{{"role": "user", "content": "{content}"}}]'}


def test_it_sets_aside_a_trace_the_database_refuses_and_assembles_the_rest(
    project, steps_refuse_poison
):
    bad, good = "a1" * 16, "b2" * 16
    _receive(
        project,
        [
            json_span(1, name="root", end=9, attributes=_chat("poison"), trace=bad),
            json_span(1, name="root", end=9, attributes=_chat("fine"), trace=good),
        ],
    )
    assert live_traces_assemble(project_id=project.pk, trace_ids=[bad, good]) == 1
    refused = LiveTrace.objects.get(project=project, trace_id=bad)
    assert not refused.pending and refused.rollout_id is None
    assert refused.error_message.startswith("The database refused this trace's rollout")
    assert LiveTrace.objects.get(project=project, trace_id=good).rollout is not None
    # Nothing is left for the sweep to fail on: it closes the good trace and goes on.
    later = timezone.now() + timedelta(seconds=CONFIG.close_after_seconds + 5)
    assert live_traces_close(now=later, config=CONFIG) == 2
