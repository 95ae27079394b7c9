"""iter_sources: plain files, .gz, .zip member by member, inspect .eval kept whole, and the
archive limits (bombs, member counts, unsafe names)."""

from __future__ import annotations

import gzip
import io
import zipfile

import pytest

from ingest.core.errors import TraceParseError
from ingest.parsers import detect_format, get_parser
from ingest.parsers.sources import (
    MSG_ARCHIVE_TOO_LARGE,
    MSG_BAD_ARCHIVE,
    MSG_TOO_MANY_MEMBERS,
    MSG_UNSAFE_MEMBER,
    iter_sources,
)
from tests.conftest import shared_file
from tests.ingest.parsers.parser_cases import filled

CHAT = filled("openai_chat")


def _zip(path, members, method=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _ingest(path, filename, limits=None):
    """What the Django pipeline does: per source, detect on the head, then parse."""
    kwargs = {"limits": limits} if limits else {}
    found = []
    for source in iter_sources(str(path), filename=filename, **kwargs):
        with source.open() as stream:
            head = stream.read(64 * 1024)
        fmt = detect_format(head, source.name)
        with source.open() as stream:
            records = list(get_parser(fmt).parse(stream, filename=source.name, **kwargs))
        found.append((source.name, fmt, len(records)))
    return found


def test_it_yields_a_plain_file_as_one_source(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_bytes(CHAT)
    (source,) = iter_sources(str(path), filename="chat.jsonl")
    assert (source.name, source.stored_bytes) == ("chat.jsonl", len(CHAT))


def test_it_decompresses_a_gz_as_one_source_named_without_gz(tmp_path):
    path = tmp_path / "upload.bin"
    path.write_bytes(gzip.compress(CHAT * 3))
    assert _ingest(path, "chat.jsonl.gz") == [("chat.jsonl", "openai_chat", 3)]


def test_it_reads_a_gz_of_a_sample_file(tmp_path):
    original = shared_file("openhands/tests/runtime/trajs/basic.json")
    path = tmp_path / "basic.json.gz"
    path.write_bytes(gzip.compress(original.read_bytes()))
    assert _ingest(path, "basic.json.gz") == [("basic.json", "openhands", 1)]


def test_it_yields_one_source_per_zip_member_and_skips_folders_and_resource_forks(tmp_path):
    traj = shared_file(
        "swe_agent/trajectories/demonstrations/ctf/misc/networking_1.traj"
    ).read_bytes()
    members = {
        "runs/": b"",
        "runs/a.jsonl": CHAT,
        "runs/b.jsonl.gz": gzip.compress(CHAT * 2),
        "runs/networking_1.traj": traj,
        "__MACOSX/runs/._a.jsonl": b"\x00\x05junk",
    }
    path = _zip(tmp_path / "runs.zip", members)
    assert _ingest(path, "runs.zip") == [
        ("runs.zip/runs/a.jsonl", "openai_chat", 1),
        ("runs.zip/runs/b.jsonl", "openai_chat", 2),
        ("runs.zip/runs/networking_1.traj", "swe_agent", 1),
    ]


def test_it_reports_progress_in_stored_bytes_per_member(tmp_path):
    path = _zip(tmp_path / "runs.zip", {"a.jsonl": CHAT, "b.jsonl": CHAT * 50})
    sources = list(iter_sources(str(path), filename="runs.zip"))
    assert all(0 < source.stored_bytes < path.stat().st_size for source in sources)


def test_it_keeps_an_inspect_eval_whole(tmp_path):
    original = shared_file("inspect_ai/tests/log/test_eval_log/log_read_sample.eval")
    assert _ingest(original, "log_read_sample.eval") == [("log_read_sample.eval", "inspect_ai", 1)]
    renamed = tmp_path / "log.zip"
    renamed.write_bytes(original.read_bytes())
    assert _ingest(renamed, "log.zip") == [("log.zip", "inspect_ai", 1)]


def test_it_refuses_a_zip_bomb_naming_archive_and_member(tmp_path, small_limits):
    path = _zip(tmp_path / "bomb.zip", {"ok.jsonl": CHAT, "bomb.jsonl": b"\n" * (16 * 1024 * 1024)})
    assert path.stat().st_size < 100_000
    with pytest.raises(TraceParseError) as caught:
        list(iter_sources(str(path), filename="bomb.zip", limits=small_limits))
    assert caught.value.message == MSG_ARCHIVE_TOO_LARGE.format(
        limit=small_limits.max_archive_bytes
    )
    assert (caught.value.file, caught.value.record) == ("bomb.zip", "member bomb.jsonl")


def test_it_refuses_a_gz_bomb_while_reading(tmp_path, small_limits):
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n" * (16 * 1024 * 1024)))
    (source,) = iter_sources(str(path), filename="bomb.jsonl.gz", limits=small_limits)
    with pytest.raises(TraceParseError) as caught, source.open() as stream:
        while stream.read(64 * 1024):
            pass
    assert caught.value.message == MSG_ARCHIVE_TOO_LARGE.format(
        limit=small_limits.max_archive_bytes
    )
    assert (caught.value.file, caught.value.record) == ("bomb.jsonl.gz", "member bomb.jsonl")


def test_it_refuses_too_many_members(tmp_path, small_limits):
    path = _zip(tmp_path / "many.zip", {f"{i}.jsonl": CHAT for i in range(21)})
    with pytest.raises(TraceParseError) as caught:
        list(iter_sources(str(path), filename="many.zip", limits=small_limits))
    assert caught.value.message == MSG_TOO_MANY_MEMBERS.format(
        limit=small_limits.max_archive_members
    )
    assert (caught.value.file, caught.value.record) == ("many.zip", "member 20.jsonl")


@pytest.mark.parametrize(
    "member",
    ["../evil.jsonl", "runs/../../evil.jsonl", "/etc/passwd", "C:/evil.jsonl", "..\\evil.jsonl"],
)
def test_it_refuses_unsafe_member_names(tmp_path, member):
    path = _zip(tmp_path / "evil.zip", {"ok.jsonl": CHAT, member: CHAT})
    with pytest.raises(TraceParseError) as caught:
        list(iter_sources(str(path), filename="evil.zip"))
    assert caught.value.message == MSG_UNSAFE_MEMBER
    assert caught.value.file == "evil.zip"
    assert caught.value.record == f"member {member}"


def test_it_rejects_a_truncated_gz_naming_the_archive(tmp_path):
    path = tmp_path / "cut.jsonl.gz"
    data = gzip.compress(CHAT * 100)
    path.write_bytes(data[: len(data) // 2])
    (source,) = iter_sources(str(path), filename="cut.jsonl.gz")
    with pytest.raises(TraceParseError) as caught, source.open() as stream:
        stream.read()
    assert caught.value.message.startswith(MSG_BAD_ARCHIVE.split("{")[0])
    assert caught.value.file == "cut.jsonl.gz"


def test_it_rejects_a_truncated_zip(tmp_path):
    path = _zip(tmp_path / "cut.zip", {"a.jsonl": CHAT * 100})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceParseError) as caught:
        list(iter_sources(str(path), filename="cut.zip"))
    assert caught.value.message.startswith(MSG_BAD_ARCHIVE.split("{")[0])


def test_it_streams_members_without_reading_the_whole_archive(tmp_path):
    path = _zip(tmp_path / "big.zip", {"big.jsonl": CHAT * 20_000})
    (source,) = iter_sources(str(path), filename="big.zip")
    with source.open() as stream:
        first = stream.readline()
        assert first == CHAT
        assert stream.tell() == len(CHAT)


def test_it_lets_a_parser_seek_back_in_a_member(tmp_path):
    tau = b'[{"task_id": 0, "trial": 0, "reward": 1.0, "traj": [{"role": "user", "content": "x"}]}]'
    path = tmp_path / "gpt-4o-airline.json.gz"
    path.write_bytes(gzip.compress(tau))
    assert _ingest(path, "gpt-4o-airline.json.gz") == [("gpt-4o-airline.json", "tau_bench", 1)]
    assert io.BytesIO  # the pipeline's streams are seekable files, gzip and zip members alike


def test_it_tells_how_many_bytes_each_source_expands_to(tmp_path):
    plain = tmp_path / "chat.jsonl"
    plain.write_bytes(CHAT)
    gz = tmp_path / "chat.jsonl.gz"
    gz.write_bytes(gzip.compress(CHAT * 7))
    zipped = _zip(tmp_path / "runs.zip", {"a.jsonl": CHAT * 3})
    sizes = [
        source.expanded_bytes
        for path, name in ((plain, "chat.jsonl"), (gz, "chat.jsonl.gz"), (zipped, "runs.zip"))
        for source in iter_sources(str(path), filename=name)
    ]
    assert sizes == [len(CHAT), len(CHAT) * 7, len(CHAT) * 3]
