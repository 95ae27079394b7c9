"""Auto-detection picks the right format for every sample file in the shared data, and
refuses the files there that are not traces."""

from __future__ import annotations

import pytest

from ingest.core.errors import TraceParseError
from ingest.parsers import HEAD_BYTES, MSG_UNKNOWN_FORMAT, detect_format, format_labels
from tests.conftest import SHARED_DATA, shared_file
from tests.ingest.parsers.parser_cases import FIXTURES, TEMPLATES, filled

# folder under shared data -> (glob, format, number of files)
SAMPLE_SETS = {
    "who_and_when/Who&When": ("**/*.json", "who_and_when", 184),
    "tau_bench/historical_trajectories": ("*.json", "tau_bench", 1),
    "swe_agent": ("**/*.traj", "swe_agent", 22),
    "otel_genai_any_agent/tests/assets": ("*_trace.json", "otel_sdk_spans", 7),
    "otlp_json/examples": ("trace.json", "otlp_json", 1),
    "inspect_ai/tests/log": ("**/*.json", "inspect_ai", 3),
    "inspect_ai/tests/log/test_eval_log": ("*.eval", "inspect_ai", 1),
    "openhands/tests/runtime/trajs": ("*.json", "openhands", 4),
    "mast_taxonomy/adamast/examples": ("*.jsonl", "openai_chat", 1),
}
NOT_TRACES = [
    "otlp_json/examples/logs.json",
    "mast_taxonomy/adamast/core/mast.json",
    "mast_taxonomy/adamast/examples/taxonomy.sample.json",
]


def _detect(path):
    with open(path, "rb") as stream:
        return detect_format(stream.read(HEAD_BYTES), path.name)


@pytest.mark.parametrize("folder", sorted(SAMPLE_SETS))
def test_it_detects_every_sample_file(folder):
    pattern, fmt, count = SAMPLE_SETS[folder]
    files = sorted(shared_file(folder).glob(pattern))
    assert len(files) == count
    assert {path.name: _detect(path) for path in files} == {path.name: fmt for path in files}


def test_it_covers_every_trace_file_in_the_shared_data():
    if not SHARED_DATA.exists():
        pytest.skip("shared data not present")
    covered = {
        path
        for folder, (pattern, _, _) in SAMPLE_SETS.items()
        for path in (SHARED_DATA / folder).glob(pattern)
    }
    every = {
        path
        for path in SHARED_DATA.rglob("*")
        if path.suffix in {".json", ".jsonl", ".traj", ".eval"}
    }
    assert every - covered == {SHARED_DATA / name for name in NOT_TRACES}


@pytest.mark.parametrize("relative", NOT_TRACES)
def test_it_refuses_files_that_are_not_traces(relative):
    with pytest.raises(TraceParseError) as caught:
        _detect(shared_file(relative))
    assert caught.value.message == MSG_UNKNOWN_FORMAT.format(formats=format_labels())


@pytest.mark.parametrize("fmt", sorted(TEMPLATES))
def test_it_detects_each_template(fmt):
    filename, _ = TEMPLATES[fmt]
    assert detect_format(filled(fmt), filename) == fmt


@pytest.mark.parametrize(
    "name, fmt",
    [
        ("openinference_agent.jsonl", "openinference"),
        ("openai_chat_airline.jsonl", "openai_chat"),
        ("langfuse/agent_trace.json", "langfuse"),
        ("langsmith/langgraph_supervisor.json", "langsmith"),
        ("langsmith/wrap_openai_refunds.jsonl", "langsmith"),
    ],
)
def test_it_detects_the_fixtures(name, fmt):
    assert _detect(FIXTURES / name) == fmt


def test_it_detects_native_lines_written_by_the_native_writer():
    line = b'{"format": "faultline.trajectory.v1", "id": "x", "steps": [], "metadata": {"messages": [{"role": "user"}]}}\n'
    assert detect_format(line, "export.jsonl") == "native"


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": "x", "steps": "nope"}',
        b'{"id": "x", "steps": {"role": "user"}}',
        b'{"id": 7, "steps": null}',
        b'{"steps": [{"role": "user", "index": "0"}]}',
        b'{"id": "x", "outcome": "failure"}',
        # A first line longer than the head: cut inside a step, its id still unread.
        b'{"outcome": "failure", "steps": [{"role": "user", "content": "' + b"a" * HEAD_BYTES,
    ],
)
def test_it_detects_native_lines_by_their_keys_whatever_their_values(line):
    assert detect_format(line + b"\n", "runs.jsonl") == "native"


def test_it_leaves_every_other_formats_sample_to_its_own_sniffer():
    from ingest.parsers import native

    files = [
        path
        for folder, (pattern, _, _) in SAMPLE_SETS.items()
        for path in shared_file(folder).glob(pattern)
    ]
    looking_native = []
    for path in files:
        with open(path, "rb") as stream:
            head = stream.read(HEAD_BYTES)
        if native.sniff_keys(head, path.name) or native.sniff_document(head, path.name):
            looking_native.append(path.name)
    assert len(files) == sum(count for _, _, count in SAMPLE_SETS.values())
    assert looking_native == []


@pytest.mark.parametrize(
    "document",
    [
        b'[{"id": "x", "steps": [{"role": "user"}]}, {"id": "y", "steps": []}]',
        b'{\n  "id": "x",\n  "outcome": "failure",\n  "steps": []\n}\n',
    ],
)
def test_it_says_native_records_go_one_per_line(document):
    from ingest.parsers.native import MSG_NOT_LINES

    with pytest.raises(TraceParseError) as caught:
        detect_format(document, "runs.json")
    assert str(caught.value) == f"runs.json: {MSG_NOT_LINES}"


def test_it_still_refuses_objects_that_only_share_a_key_with_native():
    with pytest.raises(TraceParseError) as caught:
        detect_format(b'{"steps": 3, "name": "a build log"}\n', "build.jsonl")
    assert caught.value.message == MSG_UNKNOWN_FORMAT.format(formats=format_labels())


@pytest.mark.parametrize(
    ("content", "where"),
    [
        (b'{"run": "r1", "events": [{"who": "user", "said": "hi"}', "line 1 column 55"),
        (b'[\n  {"run": 0,\n   "events": [\n', "line 4 column 1"),
        (b'{"run": "r1",, "events": []}\n', "line 1 column 14"),
    ],
    ids=["cut short", "cut short on several lines", "a stray comma"],
)
def test_it_says_a_small_broken_json_file_is_not_valid_json(content, where):
    # (A broken file whose keys name a format is detected, and its parser names the line.)
    with pytest.raises(TraceParseError) as caught:
        detect_format(content, "rollout.json")
    assert caught.value.message.startswith("The file is not valid JSON: ")
    assert where in caught.value.message and caught.value.file == "rollout.json"


def test_a_head_of_a_larger_file_is_not_judged_as_broken_json():
    head = b'{"unrelated": "' + b"x" * HEAD_BYTES
    with pytest.raises(TraceParseError) as caught:
        detect_format(head[:HEAD_BYTES], "big.json")
    assert caught.value.message == MSG_UNKNOWN_FORMAT.format(formats=format_labels())
