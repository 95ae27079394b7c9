"""Live rollouts rebuilt from their stored spans: labels follow their steps, through a late
span and through ``manage.py otlp_reassemble`` after the assembly reads spans differently."""

from __future__ import annotations

import dataclasses
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from ingest.core.otlp_receive import CONTENT_JSON, decode_request
from ingest.core.records import LabelSource
from ingest.core.step_identity import StepIdentity, followed_index
from ingest.models import Label, LiveTrace, Trajectory
from ingest.otlp import services
from ingest.otlp.receive import spans_receive
from ingest.otlp.services import live_traces_assemble, live_traces_reassemble
from pipeline.models import ProjectRefresh
from tests.ingest.core.otlp_builders import TRACE, json_body, json_span

pytestmark = pytest.mark.django_db

OTHER = "1bf7651916cd43dd8448eb211c80319d"


def _chat(question: str, answer: str, agent: str = "planner") -> dict[str, str]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.agent.name": agent,
        "gen_ai.input.messages": f'[{{"role": "user", "content": "{question}"}}]',
        "gen_ai.output.messages": f'[{{"role": "assistant", "content": "{answer}"}}]',
    }


def _receive(project, spans) -> None:
    spans_receive(project=project, spans=decode_request(json_body(spans), CONTENT_JSON).spans)


def _rollout(trace: str = TRACE) -> Trajectory:
    rollout = LiveTrace.objects.get(trace_id=trace).rollout
    assert rollout is not None
    return rollout


def _contents(rollout: Trajectory) -> list[str]:
    return list(rollout.steps.order_by("index").values_list("content", flat=True))


def _label(rollout: Trajectory, content: str, agent: str = "") -> Label:
    index = _contents(rollout).index(content)
    return Label.objects.create(
        trajectory=rollout, step_index=index, agent=agent, source=LabelSource.HUMAN
    )


def _turn(n: int, start: int, question: str, answer: str, trace: str = TRACE):
    """One model call, a child of the root span 1, from ``start`` to ``start + 10``."""
    attributes = _chat(question, answer)
    return json_span(
        n, parent=1, name="chat", start=start, end=start + 10, trace=trace, attributes=attributes
    )


def _two_turns(project, trace: str = TRACE) -> Trajectory:
    root = json_span(1, name="root", end=90, trace=trace)
    first = _turn(2, 10, "Book a room in Oslo.", "Which dates?", trace)
    _receive(
        project, [root, first, _turn(3, 30, "From May 2.", "Booked the Grand for May 3.", trace)]
    )
    live_traces_assemble(project_id=project.pk, trace_ids=[trace])
    return _rollout(trace)


def test_a_label_follows_its_step_when_a_late_span_puts_steps_before_it(project):
    rollout = _two_turns(project)
    label = _label(rollout, "Booked the Grand for May 3.", agent="planner")
    before = label.step_index
    # A late span that started before the others: its two steps go in front.
    _receive(project, [_turn(4, 0, "Hello.", "Hi, how can I help?")])
    live_traces_assemble(project_id=project.pk, trace_ids=[TRACE])
    label.refresh_from_db()
    assert _rollout().pk == rollout.pk
    assert label.step_index == before + 2
    assert _contents(rollout)[label.step_index] == "Booked the Grand for May 3."
    assert label.agent == "planner"


def _reading(monkeypatch, change) -> None:
    """Make the assembly read spans differently, as a newer version of it would."""
    assemble = services.assemble_spans

    def newer(received, *, trace_id):
        record = assemble(received, trace_id=trace_id)
        steps = [dataclasses.replace(step, index=i) for i, step in enumerate(change(record.steps))]
        return dataclasses.replace(record, steps=steps)

    monkeypatch.setattr(services, "assemble_spans", newer)


def test_reassembling_rebuilds_every_trace_and_moves_labels_with_their_steps(project, monkeypatch):
    first, second = _two_turns(project), _two_turns(project, trace=OTHER)
    moved = _label(first, "From May 2.", agent="planner")
    kept = _label(second, "Book a room in Oslo.")
    # The newer reading drops the repeated user turn and gives each answer to the "booker".
    _reading(
        monkeypatch,
        lambda steps: [
            dataclasses.replace(step, agent="booker") if step.role == "assistant" else step
            for step in steps
            if step.content != "Book a room in Oslo."
        ],
    )
    done = live_traces_reassemble(project_id=project.pk, trace_ids=[TRACE])
    assert (done.traces, done.rollouts, done.labels_moved) == (1, 1, 1)
    assert (done.steps_before, done.steps_after) == (4, 3)
    moved.refresh_from_db()
    assert _contents(first)[moved.step_index] == "From May 2." and moved.step_index == 1
    assert _contents(second)[0] == "Book a room in Oslo."  # not asked for: untouched
    done = live_traces_reassemble(project_id=project.pk)
    assert done.traces == 2 and done.labels_unplaced == [second.pk]
    kept.refresh_from_db()
    assert kept.step_index == 0  # its step is gone: the label stays, and is reported
    answers = first.steps.filter(role="assistant").values_list("agent", flat=True)
    assert set(answers) == {"booker"}
    assert Trajectory.objects.filter(project=project).count() == 2


def test_a_label_on_an_answer_takes_the_agent_the_newer_reading_gives_its_step(
    project, monkeypatch
):
    rollout = _two_turns(project)
    label = _label(rollout, "Which dates?", agent="planner")
    other = _label(rollout, "Booked the Grand for May 3.", agent="a human's choice")
    _reading(
        monkeypatch,
        lambda steps: [
            dataclasses.replace(step, agent="booker") if step.role == "assistant" else step
            for step in steps
        ],
    )
    live_traces_reassemble(project_id=project.pk)
    label.refresh_from_db()
    other.refresh_from_db()
    assert (label.agent, other.agent) == ("booker", "a human's choice")


def test_the_command_rebuilds_and_queues_one_full_refresh(project, monkeypatch):
    rollout = _two_turns(project)
    label = _label(rollout, "From May 2.")
    _reading(monkeypatch, lambda steps: steps[1:])
    out = StringIO()
    call_command("otlp_reassemble", "--project", project.slug, stdout=out)
    text = out.getvalue()
    assert "Rebuilt 1 rollouts from the spans of 1 traces" in text
    assert "4 steps before, 3 now; 1 labels moved" in text
    label.refresh_from_db()
    assert _contents(rollout)[label.step_index] == "From May 2."
    refresh = ProjectRefresh.objects.get(project=project)
    assert refresh.full_requested and "rebuilt" in refresh.request_reason


def test_the_command_names_what_it_cannot_find(project):
    with pytest.raises(CommandError, match="--project nowhere: no project"):
        call_command("otlp_reassemble", "--project", "nowhere")
    _two_turns(project)
    with pytest.raises(CommandError, match=f"--trace {OTHER}: no spans of this trace"):
        call_command("otlp_reassemble", "--project", project.slug, "--trace", OTHER.upper())


def test_the_command_says_when_a_project_has_no_live_traces(project):
    out = StringIO()
    call_command("otlp_reassemble", "--project", project.slug, stdout=out)
    assert "has received no OTLP traces" in out.getvalue()
    assert not ProjectRefresh.objects.filter(project=project).exists()


def test_followed_index_keeps_the_order_of_identical_steps():
    retry = StepIdentity("tool_call", "bot", "search", '{"q": "x"}')
    answer = StepIdentity("message", "bot", "", "Done.")
    before = [retry, retry, retry, answer]
    after = [retry, retry, answer]  # one retry was a duplicate span
    followed = [followed_index(before, after, i) for i in range(4)]
    # Which retry was the duplicate cannot be told; the order can, and the answer is found.
    assert followed == sorted(followed) and followed[3] == 2
    assert {followed[0], followed[1], followed[2]} == {0, 1}
