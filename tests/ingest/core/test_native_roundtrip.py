"""parse -> write native -> parse native gives records equal to the first parse, for every
sample file of every format (and the fixtures of the formats without shared samples)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ingest.core.native_writer import FORMAT_TAG, trajectory_to_native, write_native_jsonl
from ingest.core.records import LabelRecord, StepKind, StepRecord, TrajectoryRecord
from ingest.parsers import HEAD_BYTES, detect_format, get_parser, native
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import FIXTURES

SAMPLES = {
    "who_and_when": ("who_and_when/Who&When", "**/*.json"),
    "tau_bench": ("tau_bench/historical_trajectories", "*.json"),
    "swe_agent": ("swe_agent", "**/*.traj"),
    "otel_sdk_spans": ("otel_genai_any_agent/tests/assets", "*_trace.json"),
    "otlp_json": ("otlp_json/examples", "trace.json"),
    "inspect_ai": ("inspect_ai/tests/log", "**/*.*"),
    "openhands": ("openhands/tests/runtime/trajs", "*.json"),
    "openai_chat": ("mast_taxonomy/adamast/examples", "*.jsonl"),
}


def _parse(path, filename):
    with open(path, "rb") as stream:
        fmt = detect_format(stream.read(HEAD_BYTES), filename)
    with open(path, "rb") as stream:
        return list(get_parser(fmt).parse(stream, filename=filename))


def _round_trip(records):
    buffer = io.BytesIO()
    assert write_native_jsonl(records, buffer) == len(records)
    buffer.seek(0)
    return list(native.parse(buffer, filename="export.jsonl"))


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_it_round_trips_every_sample_file_of_the_format(fmt):
    folder, pattern = SAMPLES[fmt]
    files = sorted(
        path
        for path in shared_file(folder).glob(pattern)
        if path.suffix in {".json", ".jsonl", ".traj", ".eval"}
    )
    assert files
    for path in files:
        first = _parse(path, str(path))
        assert first, path
        assert _round_trip(first) == first, path


@pytest.mark.parametrize("name", ["openinference_agent.jsonl", "openai_chat_airline.jsonl"])
def test_it_round_trips_the_fixtures(name):
    first = _parse(FIXTURES / name, name)
    assert _round_trip(first) == first


def test_it_writes_every_field_with_labels_and_iso_times():
    started = datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=timezone(timedelta(hours=2)))
    record = TrajectoryRecord(
        external_id="r1",
        task_id="t",
        outcome="failure",
        reward=0.0,
        metadata={"k": [1, {"x": None}]},
        steps=[
            StepRecord(index=0, role="user", content="hi \ud800 \u00e9"),
            StepRecord(
                index=1,
                role="assistant",
                kind=StepKind.TOOL_CALL,
                tool_name="book",
                tool_args={"a": 1},
                is_mutating=True,
                started_at=started,
                ended_at=datetime(2025, 1, 2, 3, 4, 6),
            ),
        ],
        labels=[LabelRecord(step=1, agent="assistant", reason="booked too early")],
    )
    line = trajectory_to_native(record)
    assert line["format"] == FORMAT_TAG
    assert line["steps"][1]["started_at"] == "2025-01-02T03:04:05.123456+02:00"
    assert line["steps"][1]["ended_at"] == "2025-01-02T03:04:06+00:00"
    assert line["labels"] == [
        {"step": 1, "agent": "assistant", "reason": "booked too early", "source": "dataset"}
    ]
    (back,) = _round_trip([record])
    record.steps[1].ended_at = record.steps[1].ended_at.replace(tzinfo=UTC)
    assert back == record


def test_it_writes_to_text_streams_too():
    buffer = io.StringIO()
    write_native_jsonl(
        [TrajectoryRecord(external_id="a"), TrajectoryRecord(external_id="b")], buffer
    )
    assert [json.loads(line)["id"] for line in buffer.getvalue().splitlines()] == ["a", "b"]
