"""A rollout with no steps is bad input in every format: the upload is refused whole,
naming the file, the record and the field its steps come from, and nothing is stored."""

from __future__ import annotations

import json

import pytest

from ingest.models import Step, Trajectory
from ingest.parsers import MSG_NO_STEPS
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

EMPTY_CHAT = {"id": "x", "reward": 0.0, "messages": []}
GOOD_CHAT = {"id": "ok", "reward": 1.0, "messages": [{"role": "user", "content": "hi"}]}


def _jsonl(*objects) -> bytes:
    return "\n".join(json.dumps(o) for o in objects).encode() + b"\n"


def _assert_refused(upload, expected: str) -> None:
    assert upload.status == "failed"
    assert upload.error_message == expected
    assert Trajectory.objects.count() == 0
    assert Step.objects.count() == 0


def test_it_refuses_a_sole_conversation_with_no_messages_naming_line_and_field(project):
    upload = ingest_bytes(project, _jsonl(EMPTY_CHAT), "chat.jsonl")
    _assert_refused(upload, f"chat.jsonl, line 1, field messages: {MSG_NO_STEPS}")


def test_it_refuses_a_conversation_with_no_messages_with_the_format_named(project):
    upload = ingest_bytes(project, _jsonl(EMPTY_CHAT), "chat.jsonl", requested_format="openai_chat")
    _assert_refused(upload, f"chat.jsonl, line 1, field messages: {MSG_NO_STEPS}")


def test_it_refuses_a_conversation_with_no_messages_after_a_good_line(project):
    upload = ingest_bytes(project, _jsonl(GOOD_CHAT, EMPTY_CHAT), "chat.jsonl")
    _assert_refused(upload, f"chat.jsonl, line 2, field messages: {MSG_NO_STEPS}")


def test_it_refuses_a_native_record_with_no_steps(project):
    good = {"id": "r1", "steps": [{"role": "user", "content": "hi"}]}
    upload = ingest_bytes(project, _jsonl(good, {"id": "r2", "steps": []}), "runs.jsonl")
    _assert_refused(upload, f"runs.jsonl, line 2, field steps: {MSG_NO_STEPS}")


def test_it_refuses_a_tau_bench_rollout_with_no_traj(project):
    items = [{"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": []}]
    upload = ingest_bytes(project, json.dumps(items).encode(), "gpt-4o-airline.json")
    _assert_refused(upload, f"gpt-4o-airline.json, item 0, field traj: {MSG_NO_STEPS}")


def test_it_refuses_a_who_and_when_log_with_an_empty_history(project):
    log = {"history": [], "question": "q", "question_ID": "q1", "is_correct": False}
    upload = ingest_bytes(project, json.dumps(log).encode(), "1.json")
    _assert_refused(upload, f"1.json, document, field history: {MSG_NO_STEPS}")


def test_it_refuses_an_inspect_ai_sample_with_no_messages(project):
    log = {
        "version": 2,
        "status": "success",
        "eval": {"task": "t", "model": "m"},
        "plan": {},
        "samples": [{"id": 1, "epoch": 1, "input": "q", "messages": []}],
    }
    upload = ingest_bytes(project, json.dumps(log).encode(), "log.json")
    _assert_refused(upload, f"log.json, samples[0], field messages: {MSG_NO_STEPS}")


def test_it_refuses_openhands_events_that_make_no_step(project):
    events = [
        {
            "id": 0,
            "timestamp": "2025-01-01T00:00:00",
            "source": "environment",
            "observation": "agent_state_changed",
            "content": "",
            "extras": {"agent_state": "running"},
        }
    ]
    upload = ingest_bytes(project, json.dumps(events).encode(), "events.json")
    _assert_refused(upload, f"events.json, document: {MSG_NO_STEPS}")
