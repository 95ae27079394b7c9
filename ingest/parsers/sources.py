"""The readable sources inside one stored file.

A plain file is one source; an archive (.gz, .zip) is opened member by member so a
folder of rollouts uploads as one file while each member is detected, parsed and
reported on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Callable

from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits


@dataclass
class Source:
    """One readable member: its display name and a way to open it as a byte stream."""

    name: str
    opener: Callable[[], IO[bytes]]
    # Bytes of the stored file this member stands for (progress is reported in these).
    stored_bytes: int = 0

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        stream = self.opener()
        try:
            yield stream
        finally:
            stream.close()


def iter_sources(
    path: str, *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[Source]:
    """Yield the sources of the file at ``path`` (shown to users as ``filename``)."""
    import os

    yield Source(name=filename, opener=lambda: open(path, "rb"), stored_bytes=os.path.getsize(path))
