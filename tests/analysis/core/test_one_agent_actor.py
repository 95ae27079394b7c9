"""One agent is one agent to the clustering, whatever name each format gave it: a chat
file's "assistant" and the same agent's OpenTelemetry trace, "travel-concierge"."""

from __future__ import annotations

import numpy as np

from analysis.core.behaviour import step_vector
from analysis.core.representation import StepRepresenter, structure_key
from analysis.core.selection import RolloutFacts, make_wrong_step
from ingest.core.records import StepRecord


def _booking(agent: str, *, helper: str = "") -> list[StepRecord]:
    steps = [
        StepRecord(index=0, role="user", content="Book the 9:00 flight."),
        StepRecord(index=1, role="assistant", agent=agent, kind="tool_call",
                   tool_name="book_flight", tool_args={"flight": "LX318"}),
        StepRecord(index=2, role="tool", agent="tool", kind="tool_result", content="ok"),
    ]  # fmt: skip
    if helper:
        steps.append(StepRecord(index=3, role="assistant", agent=helper, content="Checked."))
    return steps


def test_a_rollouts_only_agent_is_compared_by_its_role():
    chat, trace = _booking("assistant"), _booking("travel-concierge")
    a = make_wrong_step(RolloutFacts("a", True), chat, 1, source="error")
    b = make_wrong_step(RolloutFacts("b", True), trace, 1, source="error")
    assert a.one_agent and b.one_agent
    assert structure_key(a) == structure_key(b) == "assistant|tool_call|book_flight"
    assert np.array_equal(step_vector(a), step_vector(b))
    representer = StepRepresenter().fit([a, b])
    assert representer.action(a) == representer.action(b)
    # Its name is still what the pages show.
    assert b.agent == "travel-concierge"


def test_in_a_crew_each_agent_keeps_its_name():
    crew = _booking("booker", helper="checker")
    step = make_wrong_step(RolloutFacts("c", True), crew, 1, source="error")
    assert not step.one_agent
    assert structure_key(step) == "booker|tool_call|book_flight"
