from __future__ import annotations

import hashlib
import json

import pytest

from exports.core.writer import JsonlWriter, file_sha256


def test_it_hashes_what_it_writes(tmp_path):
    with JsonlWriter(tmp_path / "a.jsonl") as writer:
        writer.write({"x": "é"})
        writer.write([1, 2])
    data = (tmp_path / "a.jsonl").read_bytes()
    assert (
        writer.digest.sha256
        == hashlib.sha256(data).hexdigest()
        == file_sha256(tmp_path / "a.jsonl")
    )
    assert (writer.digest.lines, writer.digest.bytes) == (2, len(data))
    assert [json.loads(line) for line in data.decode().splitlines()] == [{"x": "é"}, [1, 2]]


def test_it_leaves_no_file_when_writing_fails(tmp_path):
    with pytest.raises(RuntimeError), JsonlWriter(tmp_path / "a.jsonl") as writer:
        writer.write({"x": 1})
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
