"""Small rollouts for the core tests."""

from __future__ import annotations

from typing import Any

from ingest.core.records import StepRecord, TrajectoryRecord


def user(index: int, text: str) -> StepRecord:
    return StepRecord(index=index, role="user", kind="message", content=text, agent="user")


def say(index: int, text: str, agent: str = "assistant") -> StepRecord:
    return StepRecord(index=index, role="assistant", kind="message", content=text, agent=agent)


def call(
    index: int, name: str, args: Any, call_id: str = "", message: int | None = None
) -> StepRecord:
    meta = {} if message is None else {"message_index": message}
    return StepRecord(
        index=index,
        role="assistant",
        kind="tool_call",
        agent="assistant",
        tool_name=name,
        tool_args=args,
        tool_call_id=call_id,
        metadata=meta,
    )


def result(index: int, text: str, call_id: str = "", name: str = "") -> StepRecord:
    return StepRecord(
        index=index,
        role="tool",
        kind="tool_result",
        agent="tool",
        content=text,
        tool_call_id=call_id,
        tool_name=name,
    )


def system(index: int, text: str) -> StepRecord:
    return StepRecord(index=index, role="system", kind="system", content=text, agent="system")


def airline(
    external_id: str = "r1",
    *,
    task_id: str = "airline/1",
    outcome: str = "failure",
    cancel: str = "WRONG",
) -> TrajectoryRecord:
    """system, user, lookup call + result, user, cancel call (the decisive step 5) + result, reply."""
    return TrajectoryRecord(
        external_id=external_id,
        task_id=task_id,
        task_text="Cancel reservation GOOD.",
        environment="airline",
        policy_model="gpt-4o",
        outcome=outcome,
        metadata={
            "info": {
                "task": {"actions": [{"name": "cancel", "kwargs": {"id": "GOOD"}}], "outputs": []}
            }
        },
        steps=[
            system(0, "You are an airline agent."),
            user(1, "Please cancel my trip, I am ana_1."),
            call(2, "get_user", {"user_id": "ana_1"}, f"{external_id}-c1", message=2),
            result(3, '{"reservations": ["GOOD", "WRONG"]}', f"{external_id}-c1", "get_user"),
            user(4, "Yes, go ahead."),
            call(5, "cancel", {"id": cancel}, f"{external_id}-c2", message=5),
            result(6, '{"status": "cancelled"}', f"{external_id}-c2", "cancel"),
            say(7, f"Reservation {cancel} is cancelled."),
        ],
    )


PLANNER_PROMPT = "You are the planner. Break the request into steps for the executor."
EXECUTOR_PROMPT = "You are the executor. Carry out each step with the booking tools."
VERIFIER_PROMPT = "You are the verifier. Check that the booking matches the request."
PROMPTS = {"planner": PLANNER_PROMPT, "executor": EXECUTOR_PROMPT, "verifier": VERIFIER_PROMPT}


def agent_call(index: int, agent: str, name: str, args: Any, call_id: str) -> StepRecord:
    step = call(index, name, args, call_id)
    step.agent = agent
    return step


def multi_agent(external_id: str = "m1") -> TrajectoryRecord:
    """Planner, executor and verifier as OpenTelemetry GenAI spans give them: each model
    call's system prompt is a system step (no agent named) just before that call's output;
    the executor books the wrong flight at step 7 and the verifier waves it through.
    """
    return TrajectoryRecord(
        external_id=external_id,
        task_id="flights/1",
        task_text="Book the cheapest flight from SFO to JFK on May 3.",
        environment="flights",
        policy_model="gpt-4o",
        outcome="failure",
        agent_system="planner",
        steps=[
            system(0, PLANNER_PROMPT),
            user(1, "Book the cheapest flight from SFO to JFK on May 3."),
            say(2, "1. Search flights SFO-JFK on May 3. 2. Book the cheapest.", "planner"),
            system(3, EXECUTOR_PROMPT),
            user(4, "Carry out the plan: search, then book the cheapest flight."),
            agent_call(5, "executor", "search_flights", {"from": "SFO", "to": "JFK"}, "c1"),
            result(6, '[{"flight": "UA2", "price": 420}, {"flight": "DL7", "price": 310}]', "c1"),
            agent_call(7, "executor", "book_flight", {"flight": "UA2"}, "c2"),
            result(8, '{"booked": "UA2"}', "c2", "book_flight"),
            system(9, VERIFIER_PROMPT),
            say(10, "UA2 is booked, as the user asked.", "verifier"),
        ],
    )
