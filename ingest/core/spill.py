"""Spans grouped by trace with bounded memory.

A trace's spans may be spread over a whole file, so span formats cannot emit a trajectory
before the end. Holding every decoded span would make memory grow with the file; instead
spans are kept in memory up to a limit and then spilled to a temporary SQLite file on
disk, from which each trace is read back at the end, one at a time.

Example:
    >>> from ingest.core.spans import Span
    >>> buffer = TraceBuffer(max_in_memory=2)
    >>> for i, trace in enumerate("abab"):
    ...     buffer.add(Span(trace_id=trace, span_id=str(i), parent_id="", name="s"))
    >>> [(trace, [s.span_id for s in spans]) for trace, spans in buffer.traces()]
    [('a', ['0', '2']), ('b', ['1', '3'])]
    >>> buffer.close()
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import tempfile
from collections.abc import Iterator

from ingest.core.spans import Span

DEFAULT_MAX_IN_MEMORY = 20_000


class TraceBuffer:
    def __init__(self, *, max_in_memory: int = DEFAULT_MAX_IN_MEMORY) -> None:
        self.max_in_memory = max_in_memory
        self._trace_order: dict[str, int] = {}
        self._memory: list[Span] = []
        self._count = 0
        self._db: sqlite3.Connection | None = None
        self._path = ""

    def __len__(self) -> int:
        return self._count

    def add(self, span: Span) -> None:
        self._trace_order.setdefault(span.trace_id, len(self._trace_order))
        self._memory.append(span)
        self._count += 1
        if len(self._memory) >= self.max_in_memory:
            self._spill()

    def _spill(self) -> None:
        if self._db is None:
            fd, self._path = tempfile.mkstemp(prefix="faultline-spans-", suffix=".sqlite3")
            os.close(fd)
            self._db = sqlite3.connect(self._path)
            self._db.execute("PRAGMA journal_mode=OFF")
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.execute("CREATE TABLE spans (trace INTEGER, seq INTEGER, data BLOB)")
        rows = (
            (self._trace_order[span.trace_id], span.position, pickle.dumps(span, protocol=5))
            for span in self._memory
        )
        self._db.executemany("INSERT INTO spans VALUES (?, ?, ?)", rows)
        self._db.commit()
        self._memory = []

    def traces(self) -> Iterator[tuple[str, list[Span]]]:
        """(trace id, spans in file order) for each trace, in order of first appearance."""
        if self._db is None:
            grouped: dict[str, list[Span]] = {}
            for span in self._memory:
                grouped.setdefault(span.trace_id, []).append(span)
            yield from grouped.items()
            return
        self._spill()
        self._db.execute("CREATE INDEX spans_by_trace ON spans (trace, seq)")
        for trace_id, number in self._trace_order.items():
            rows = self._db.execute(
                "SELECT data FROM spans WHERE trace = ? ORDER BY seq", (number,)
            )
            # Our own temp file, written just above from our own objects.
            yield trace_id, [pickle.loads(data) for (data,) in rows]  # noqa: S301

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._path and os.path.exists(self._path):
            os.unlink(self._path)
        self._path = ""
