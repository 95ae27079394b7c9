"""Bad input: the upload fails with a message naming file, record and field, and nothing
of the file is stored."""

from __future__ import annotations

import json

import pytest

from ingest.core.jsonio import MSG_BAD_UTF8, MSG_EMPTY
from ingest.core.validate import MSG_NOT_BOOL, MSG_NOT_LIST, MSG_NOT_STRING, MSG_REQUIRED
from ingest.models import Label, Step, Trajectory
from ingest.parsers import MSG_UNKNOWN_FORMAT, format_labels
from ingest.parsers.native import MSG_NOT_LINES
from ingest.services import MSG_BAD_FILENAME, MSG_EMPTY_UPLOAD, MSG_NOT_A_TRACE, UploadRejected
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

GOOD_LINE = {"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}


def _jsonl(*objects) -> bytes:
    return "\n".join(json.dumps(o) for o in objects).encode() + b"\n"


def _assert_nothing_stored():
    assert Trajectory.objects.count() == 0
    assert Step.objects.count() == 0
    assert Label.objects.count() == 0


def test_it_rejects_malformed_json_naming_the_line(project):
    data = _jsonl(GOOD_LINE) + b'{"id": "r2", "steps": [\n'
    upload = ingest_bytes(project, data, "runs.jsonl", requested_format="native")
    assert upload.status == "failed"
    assert upload.error_message.startswith("runs.jsonl, line 2: Malformed JSON")
    _assert_nothing_stored()


def test_it_rejects_a_missing_required_field_naming_record_and_field(project):
    bad = {"id": "r2", "steps": [{"content": "no role"}]}
    upload = ingest_bytes(project, _jsonl(GOOD_LINE, bad), "runs.jsonl")
    assert upload.error_message == f"runs.jsonl, line 2, field steps[0].role: {MSG_REQUIRED}"
    _assert_nothing_stored()


def test_it_rejects_wrong_types(project):
    bad = {"id": 7, "steps": []}
    upload = ingest_bytes(project, _jsonl(GOOD_LINE, bad), "runs.jsonl", requested_format="native")
    assert upload.error_message == f"runs.jsonl, line 2, field id: {MSG_NOT_STRING}"
    bad = {"id": "x", "steps": "nope"}
    upload = ingest_bytes(project, _jsonl(bad), "other.jsonl", requested_format="native")
    assert upload.error_message == f"other.jsonl, line 1, field steps: {MSG_NOT_LIST}"
    _assert_nothing_stored()


def test_it_names_the_field_of_a_first_line_with_a_bad_value_without_a_format_asked(project):
    # Detection used to want the values right too, and refused this as an unknown format.
    upload = ingest_bytes(project, _jsonl({"id": "x", "steps": "nope"}), "runs.jsonl")
    assert upload.status == "failed"
    assert upload.error_message == f"runs.jsonl, line 1, field steps: {MSG_NOT_LIST}"
    _assert_nothing_stored()


def test_it_names_the_step_field_of_a_first_line_with_a_bad_step(project):
    bad = {"id": "x", "steps": [{"role": "user"}, {"role": "tool", "is_error": "yes"}]}
    upload = ingest_bytes(project, _jsonl(bad, GOOD_LINE), "runs.jsonl")
    assert upload.error_message == f"runs.jsonl, line 1, field steps[1].is_error: {MSG_NOT_BOOL}"
    _assert_nothing_stored()


def test_it_names_the_missing_steps_of_a_first_line(project):
    upload = ingest_bytes(project, _jsonl({"id": "x", "outcome": "failure"}), "runs.jsonl")
    assert upload.error_message == f"runs.jsonl, line 1, field steps: {MSG_REQUIRED}"
    _assert_nothing_stored()


def test_it_says_native_records_in_one_json_document_go_one_per_line(project):
    upload = ingest_bytes(project, json.dumps([GOOD_LINE], indent=2).encode(), "runs.json")
    assert upload.status == "failed"
    assert upload.error_message == f"runs.json: {MSG_NOT_LINES}"
    _assert_nothing_stored()


def test_it_rejects_a_bad_record_after_good_ones_and_stores_none_of_them(project):
    lines = [dict(GOOD_LINE, id=f"r{i}") for i in range(50)] + [{"id": "bad", "steps": [{}]}]
    upload = ingest_bytes(project, _jsonl(*lines), "many.jsonl")
    assert upload.status == "failed"
    assert "line 51, field steps[0].role" in upload.error_message
    _assert_nothing_stored()


def test_it_rejects_an_unknown_format(project):
    upload = ingest_bytes(project, b"hello, this is not a trace\n", "notes.txt")
    assert upload.status == "failed"
    assert upload.error_message == "notes.txt: " + MSG_UNKNOWN_FORMAT.format(
        formats=format_labels()
    )
    _assert_nothing_stored()


def test_it_rejects_an_empty_file_at_once(project):
    with pytest.raises(UploadRejected) as info:
        ingest_bytes(project, b"", "empty.jsonl")
    assert str(info.value) == MSG_EMPTY_UPLOAD.format(name="empty.jsonl")
    _assert_nothing_stored()


def test_it_rejects_a_blank_file(project):
    upload = ingest_bytes(project, b"\n\n  \n", "blank.json")
    assert upload.status == "failed"
    assert MSG_EMPTY.rstrip(".") in upload.error_message
    _assert_nothing_stored()


def test_it_rejects_invalid_utf8_naming_the_line(project):
    data = _jsonl(GOOD_LINE) + b'{"id": "r2", "steps": [{"role": "user", "content": "\xff\xfe"}]}\n'
    upload = ingest_bytes(project, data, "latin.jsonl", requested_format="native")
    assert upload.status == "failed"
    assert upload.error_message.startswith("latin.jsonl, line 2: ")
    assert MSG_BAD_UTF8.split(" (")[0] in upload.error_message
    _assert_nothing_stored()


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "/etc/passwd", "a\\b.json", "..", "bad\x00name"]
)
def test_it_rejects_path_like_file_names(project, name):
    with pytest.raises(UploadRejected) as info:
        ingest_bytes(project, json.dumps(GOOD_LINE).encode(), name)
    assert str(info.value) == MSG_BAD_FILENAME.format(name=name)
    _assert_nothing_stored()


def test_it_rejects_a_label_outside_the_trajectory(project):
    bad = dict(GOOD_LINE, labels=[{"step": 5}])
    upload = ingest_bytes(project, _jsonl(bad), "labels.jsonl")
    assert "line 1, field labels[0].step" in upload.error_message
    _assert_nothing_stored()


def test_it_rejects_tau_bench_items_missing_reward(project):
    items = [{"task_id": 0, "trial": 0, "traj": [{"role": "user", "content": "x"}]}]
    upload = ingest_bytes(
        project, json.dumps(items).encode(), "gpt-4o-airline.json", requested_format="tau_bench"
    )
    assert upload.error_message == f"gpt-4o-airline.json, item 0, field reward: {MSG_REQUIRED}"
    _assert_nothing_stored()


def test_it_rejects_a_truncated_tau_bench_file(project):
    items = [
        {"task_id": 0, "trial": 0, "reward": 1, "traj": [{"role": "user", "content": "x"}]}
    ] * 3
    data = json.dumps(items).encode()[:-40]
    upload = ingest_bytes(project, data, "gpt-4o-airline.json", requested_format="tau_bench")
    assert upload.status == "failed"
    assert "gpt-4o-airline.json, item 2: Malformed JSON" in upload.error_message
    _assert_nothing_stored()


def test_it_rejects_who_and_when_with_a_bad_mistake_step(project):
    doc = {"history": [{"role": "user", "content": "q"}], "mistake_step": "7", "question_ID": "q1"}
    upload = ingest_bytes(project, json.dumps(doc).encode(), "w.json")
    assert upload.error_message.startswith("w.json, document, field mistake_step:")
    _assert_nothing_stored()


def test_it_rejects_deeply_nested_json(project):
    data = b'{"id": "x", "steps": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    upload = ingest_bytes(project, data, "deep.jsonl", requested_format="native")
    assert upload.status == "failed"
    assert "nested too deeply" in upload.error_message
    _assert_nothing_stored()


def test_it_names_the_archive_member_that_is_broken(project):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("good.jsonl", _jsonl(GOOD_LINE))
        archive.writestr("runs/bad.jsonl", _jsonl(GOOD_LINE, {"id": "b", "steps": [{}]}))
    upload = ingest_bytes(project, buffer.getvalue(), "runs.zip")
    assert upload.status == "failed"
    assert "bad.jsonl, line 2, field steps[0].role" in upload.error_message
    assert "runs.zip" in upload.error_message
    _assert_nothing_stored()


def test_it_reports_each_archive_member(project):
    import gzip
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.jsonl", _jsonl(GOOD_LINE))
        archive.writestr(
            "b.jsonl.gz", gzip.compress(_jsonl(dict(GOOD_LINE, id="r2"), dict(GOOD_LINE, id="r3")))
        )
    upload = ingest_bytes(project, buffer.getvalue(), "two.zip")
    assert upload.status == "done", upload.error_message
    assert upload.trajectory_count == 3
    assert [(m["trajectories"], m["format"]) for m in upload.member_reports] == [
        (1, "native"),
        (2, "native"),
    ]


def test_it_skips_and_lists_an_archive_member_that_is_no_trace_file(project):
    # Zipping a run folder takes its README along: that refused the whole upload.
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("runs/a.jsonl", _jsonl(GOOD_LINE))
        archive.writestr("runs/README.md", b"# How these runs were made\n\nSee the paper.\n")
        archive.writestr("runs/LICENSE", b"MIT License\n")
    upload = ingest_bytes(project, buffer.getvalue(), "runs.zip")
    assert upload.status == "done", upload.error_message
    assert upload.trajectory_count == 1 and upload.detected_format == "native"
    skipped = {m["name"]: m.get("skipped", "") for m in upload.member_reports}
    assert skipped["runs.zip/runs/a.jsonl"] == ""
    assert skipped["runs.zip/runs/README.md"] == MSG_NOT_A_TRACE
    assert skipped["runs.zip/runs/LICENSE"] == MSG_NOT_A_TRACE


def test_it_skips_a_json_member_no_reader_recognises_as_the_cli_skips_it(project):
    """A run folder's config.json failed the zip of that folder, while the CLI sending the
    folder skipped it: both skip it now, and list it."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.jsonl", _jsonl(GOOD_LINE))
        archive.writestr("notes.json", b'{"comment": "not a rollout"}')
    upload = ingest_bytes(project, buffer.getvalue(), "runs.zip")
    assert upload.status == "done" and upload.trajectory_count == 1
    skipped = {m["name"]: m.get("skipped", "") for m in upload.member_reports}
    assert skipped["runs.zip/notes.json"] == MSG_NOT_A_TRACE


def test_it_fails_an_archive_whose_only_member_no_reader_recognises(project):
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("notes.json", b'{"comment": "not a rollout"}')
    upload = ingest_bytes(project, buffer.getvalue(), "runs.zip")
    assert upload.status == "failed" and "runs.zip" in upload.error_message
    _assert_nothing_stored()


def test_it_refuses_a_traj_whose_tool_call_ids_are_not_a_list_naming_file_and_field(project):
    # A user trial's hand-broken .traj was stored, its result's call id dropped.
    history = [
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": "Look.",
            "action": "ls",
            "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "content": "a.py", "tool_call_ids": "c1"},
    ]
    data = json.dumps({"history": history, "trajectory": [], "info": {}}).encode()
    upload = ingest_bytes(project, data, "wrongtype-run.traj")
    assert upload.status == "failed"
    assert upload.error_message == (
        f"wrongtype-run.traj, document, field history[2].tool_call_ids: {MSG_NOT_LIST}"
    )
    _assert_nothing_stored()
