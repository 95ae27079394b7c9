"""inspect_ai logs: .json documents and .eval zips, exact counts, scores to outcome, and the
archive checks on .eval files."""

from __future__ import annotations

import json
import zipfile

import pytest

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import MAX_DEPTH, MSG_TOO_DEEP
from ingest.core.records import Outcome, StepKind
from ingest.parsers.inspect_ai import MSG_NO_HEADER, MSG_NO_SAMPLES
from ingest.parsers.sources import MSG_ARCHIVE_TOO_LARGE, MSG_TOO_MANY_MEMBERS, MSG_UNSAFE_MEMBER
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import parse_bytes, parse_path

LOGS = "inspect_ai/tests/log"
# file -> (trajectories, steps of each)
EXPECTED = {
    "test_eval_log/log_read_sample.eval": (1, [3]),
    "test_eval_log/log_read_sample.json": (1, [3]),
    "test_eval_log/log_tool_call_error.json": (1, [11]),
    "test_list_logs/2024-11-05T13-31-45-05-00_input-task_8zXjbRzCWrL9GXiXo2vus9.json": (1, [3]),
}


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_it_reads_every_sample_log_with_exact_counts(relative):
    records = parse_path("inspect_ai", shared_file(f"{LOGS}/{relative}"))
    count, steps = EXPECTED[relative]
    assert len(records) == count
    assert [len(r.steps) for r in records] == steps


def test_it_reads_the_eval_zip_like_the_json_log():
    (zipped,) = parse_path("inspect_ai", shared_file(f"{LOGS}/test_eval_log/log_read_sample.eval"))
    (plain,) = parse_path("inspect_ai", shared_file(f"{LOGS}/test_eval_log/log_read_sample.json"))
    assert [(s.kind, s.content) for s in zipped.steps] == [(s.kind, s.content) for s in plain.steps]
    assert (zipped.outcome, zipped.reward, zipped.policy_model, zipped.environment) == (
        Outcome.SUCCESS,
        1.0,
        "ollama/gemma3",
        "popularity",
    )
    assert zipped.external_id == "C3pqnFnsCUx6ZpmsRU9Ape/1/epoch1"
    assert zipped.agent_system == "system_message + generate"


def test_it_marks_tool_errors_and_keeps_their_type():
    (record,) = parse_path(
        "inspect_ai", shared_file(f"{LOGS}/test_eval_log/log_tool_call_error.json")
    )
    assert all(s.kind == StepKind.TOOL_RESULT and s.is_error for s in record.steps)
    assert [s.metadata["extra"]["error"]["type"] for s in record.steps][:3] == [
        "parsing",
        "timeout",
        "parsing",
    ]
    assert record.steps[0].tool_name == "bash"
    assert record.outcome == Outcome.UNKNOWN
    assert record.external_id == ".../1/epoch4"


def _log(sample):
    return json.dumps(
        {"version": 2, "eval": {"task": "t", "model": "m"}, "samples": [sample]}
    ).encode()


@pytest.mark.parametrize(
    "scores, outcome, reward",
    [
        ({"s": {"value": "C"}}, Outcome.SUCCESS, 1.0),
        ({"s": {"value": "I"}}, Outcome.FAILURE, 0.0),
        ({"s": {"value": "P"}}, Outcome.FAILURE, 0.5),
        ({"s": {"value": True}}, Outcome.SUCCESS, 1.0),
        ({"s": {"value": 0.25}}, Outcome.FAILURE, 0.25),
        ({"s": {"value": {"a": 1}}}, Outcome.UNKNOWN, None),
        ({}, Outcome.UNKNOWN, None),
    ],
)
def test_it_derives_the_outcome_from_the_first_score(scores, outcome, reward):
    (record,) = parse_bytes(
        "inspect_ai", _log({"id": "x", "epoch": 2, "messages": [], "scores": scores})
    )
    assert (record.outcome, record.reward) == (outcome, reward)


def test_it_fails_a_sample_with_an_error_and_reads_inspect_tool_calls():
    sample = {
        "id": 3,
        "epoch": 1,
        "input": [{"role": "user", "content": "list files"}],
        "messages": [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "t1",
                        "function": "bash",
                        "arguments": {"cmd": "ls"},
                        "view": {"format": "markdown"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "function": "bash", "content": "a b"},
        ],
        "error": {"message": "sandbox died", "traceback": "..."},
    }
    (record,) = parse_bytes("inspect_ai", _log(sample))
    assert record.outcome == Outcome.FAILURE
    call = record.steps[1]
    assert (call.kind, call.tool_name, call.tool_args, call.tool_call_id) == (
        StepKind.TOOL_CALL,
        "bash",
        {"cmd": "ls"},
        "t1",
    )
    assert call.metadata["extra"]["tool_call_extras"] == [{"view": {"format": "markdown"}}]
    assert record.task_text == "list files"
    assert record.metadata["error"]["message"] == "sandbox died"


def test_a_tool_error_with_no_content_reads_as_the_error_inspect_showed_the_model():
    """inspect leaves a raising tool's content empty and shows the model ``Error: ...``;
    the step's text says it, so searches, error signals and templates find it."""
    sample = {
        "id": 1,
        "epoch": 1,
        "messages": [
            {"role": "user", "content": "revenue per month"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "t1", "function": "run_sql", "arguments": {"sql": "x"}}],
            },
            {
                "role": "tool",
                "tool_call_id": "t1",
                "function": "run_sql",
                "content": "",
                "error": {"type": "timeout", "message": "query timed out after 30 s"},
            },
            {
                "role": "tool",
                "tool_call_id": "t1",
                "function": "run_sql",
                "content": "partial rows",
                "error": {"type": "unicode_decode", "message": "bad byte"},
            },
        ],
    }
    (record,) = parse_bytes("inspect_ai", _log(sample))
    timed_out, kept = record.steps[2], record.steps[3]
    assert (timed_out.is_error, timed_out.content) == (True, "Error: query timed out after 30 s")
    assert timed_out.metadata["extra"]["error"]["type"] == "timeout"
    assert (kept.is_error, kept.content) == (True, "partial rows")


def _eval_zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


HEADER = json.dumps({"version": 2, "eval": {"task": "t", "model": "m"}})
SAMPLE = json.dumps({"id": 1, "epoch": 1, "messages": [{"role": "user", "content": "hi"}]})


def test_it_reads_samples_of_an_eval_member_by_member(tmp_path):
    path = _eval_zip(
        tmp_path / "run.eval",
        {
            "header.json": HEADER,
            "samples/1_epoch_1.json": SAMPLE,
            "samples/2_epoch_1.json": SAMPLE.replace('"id": 1', '"id": 2'),
        },
    )
    records = parse_path("inspect_ai", path)
    assert [r.external_id for r in records] == ["run/1/epoch1", "run/2/epoch1"]


def test_it_rejects_an_eval_without_header(tmp_path):
    path = _eval_zip(tmp_path / "run.eval", {"samples/1_epoch_1.json": SAMPLE})
    with pytest.raises(TraceParseError) as caught:
        parse_path("inspect_ai", path)
    assert caught.value.message == MSG_NO_HEADER


def test_it_rejects_an_eval_without_samples(tmp_path):
    path = _eval_zip(tmp_path / "run.eval", {"header.json": HEADER})
    with pytest.raises(TraceParseError) as caught:
        parse_path("inspect_ai", path)
    assert caught.value.message == MSG_NO_SAMPLES


def test_it_refuses_an_eval_zip_bomb_naming_the_member(tmp_path, small_limits):
    path = _eval_zip(
        tmp_path / "bomb.eval",
        {"header.json": HEADER, "samples/1_epoch_1.json": b"0" * (8 * 1024 * 1024)},
    )
    assert path.stat().st_size < 100_000
    with pytest.raises(TraceParseError) as caught:
        parse_path("inspect_ai", path, limits=small_limits, name="bomb.eval")
    assert caught.value.message == MSG_ARCHIVE_TOO_LARGE.format(
        limit=small_limits.max_archive_bytes
    )
    assert (caught.value.file, caught.value.record) == (
        "bomb.eval",
        "member samples/1_epoch_1.json",
    )


def test_it_refuses_an_eval_with_too_many_members(tmp_path, small_limits):
    members = {"header.json": HEADER} | {f"samples/{i}_epoch_1.json": SAMPLE for i in range(30)}
    path = _eval_zip(tmp_path / "many.eval", members)
    with pytest.raises(TraceParseError) as caught:
        parse_path("inspect_ai", path, limits=small_limits, name="many.eval")
    assert caught.value.message == MSG_TOO_MANY_MEMBERS.format(
        limit=small_limits.max_archive_members
    )


def test_it_refuses_an_eval_member_with_a_parent_path(tmp_path):
    path = _eval_zip(
        tmp_path / "evil.eval", {"header.json": HEADER, "../samples/1_epoch_1.json": SAMPLE}
    )
    with pytest.raises(TraceParseError) as caught:
        parse_path("inspect_ai", path, name="evil.eval")
    assert caught.value.message == MSG_UNSAFE_MEMBER
    assert (caught.value.file, caught.value.record) == (
        "evil.eval",
        "member ../samples/1_epoch_1.json",
    )


def test_it_refuses_deep_nesting_inside_an_eval_member(tmp_path):
    deep = '{"id": 1, "messages": ' + "[" * 100_000 + "]" * 100_000 + "}"
    path = _eval_zip(
        tmp_path / "deep.eval", {"header.json": HEADER, "samples/1_epoch_1.json": deep}
    )
    with pytest.raises(TraceParseError) as caught:
        parse_path("inspect_ai", path)
    assert caught.value.message == MSG_TOO_DEEP.format(limit=MAX_DEPTH)
    assert caught.value.record == "member samples/1_epoch_1.json"


def test_it_rejects_a_truncated_eval(tmp_path):
    path = _eval_zip(
        tmp_path / "cut.eval", {"header.json": HEADER, "samples/1_epoch_1.json": SAMPLE}
    )
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceParseError):
        parse_path("inspect_ai", path)
