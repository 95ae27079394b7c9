"""A progress bar never fails an ingest, and a cache that cannot be reached costs one line
of warning, not a traceback (ingest.progress)."""

from __future__ import annotations

import logging

import pytest

import ingest.progress as progress


class _Unreachable:
    def set_many(self, *args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    def delete_many(self, *args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


class _Broken:
    def set_many(self, *args, **kwargs):
        raise ValueError("a bug")


def test_an_unreachable_cache_is_one_line_naming_it(monkeypatch, caplog):
    monkeypatch.setattr(progress, "cache", _Unreachable())
    with caplog.at_level(logging.WARNING, logger="ingest.progress"):
        progress.progress_publish(upload_id=7, done=1, total=2)
        progress.progress_clear(upload_id=7)
    assert [r.getMessage() for r in caplog.records] == [
        "could not publish progress of upload 7: Error 111 connecting to 127.0.0.1:6379. "
        "Connection refused.",
        "could not clear progress of upload 7: Error 111 connecting to 127.0.0.1:6379. "
        "Connection refused.",
    ]
    assert not any(r.exc_info for r in caplog.records)


@pytest.mark.parametrize("cache", [_Broken()])
def test_any_other_failure_keeps_its_traceback(monkeypatch, caplog, cache):
    monkeypatch.setattr(progress, "cache", cache)
    with caplog.at_level(logging.WARNING, logger="ingest.progress"):
        progress.progress_publish(upload_id=7, done=1, total=2)
    assert caplog.records[0].exc_info
