"""What a parser module provides, and the limits every parser honours.

A parser is a module with:
- ``FORMAT``: the format's short name (``"who_and_when"``), used by ``--format``;
- ``LABEL``: a human-readable name;
- ``sniff(head: bytes, filename: str) -> bool``: does the start of the file look like ours;
- ``parse(stream, *, filename, limits) -> Iterator[TrajectoryRecord]``: stream the records,
  raising only ``TraceParseError``, each with its ``source`` (``"line 2"``);
- optionally ``STEPS_FIELD``: the source field a rollout's steps come from (``"messages"``),
  named when a record has none (``ingest.parsers.read_records``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Protocol

from ingest.core.records import TrajectoryRecord


@dataclass(frozen=True)
class ParseLimits:
    """Bounds that keep one hostile file from exhausting the worker."""

    max_document_bytes: int = 256 * 1024 * 1024
    max_line_bytes: int = 64 * 1024 * 1024
    max_archive_bytes: int = 2 * 1024 * 1024 * 1024
    max_archive_members: int = 10_000


DEFAULT_LIMITS = ParseLimits()


class ParserModule(Protocol):
    FORMAT: str
    LABEL: str
    EXTENSIONS: tuple[str, ...]

    def sniff(self, head: bytes, filename: str) -> bool: ...

    def parse(
        self, stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
    ) -> Iterator[TrajectoryRecord]: ...
