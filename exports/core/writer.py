"""JSONL files written one line at a time, hashed as they are written.

A file is written under a temporary name and renamed when closed, so a crashed export
never leaves a file that looks complete.

Example:
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as name:
    ...     folder = pathlib.Path(name)
    ...     with JsonlWriter(folder / "sft.jsonl") as writer:
    ...         writer.write({"a": 1})
    ...     writer.digest.lines, writer.digest.sha256 == file_sha256(folder / "sft.jsonl")
    (1, True)
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

CHUNK = 1 << 20


@dataclass(frozen=True)
class FileDigest:
    name: str
    lines: int
    bytes: int
    sha256: str
    largest_line_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def dumps_line(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class JsonlWriter:
    """Append JSON lines to ``path``; ``digest`` is set once the writer is closed."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._partial = self.path.with_name(self.path.name + ".partial")
        self._stream = self._partial.open("wb")
        self._hash = hashlib.sha256()
        self.lines = 0
        self.bytes = 0
        self.largest_line = 0
        self.digest: FileDigest | None = None

    def write(self, obj: Any) -> None:
        line = dumps_line(obj)
        self._stream.write(line)
        self._hash.update(line)
        self.lines += 1
        self.bytes += len(line)
        self.largest_line = max(self.largest_line, len(line))

    def close(self) -> FileDigest:
        if self.digest is None:
            self._stream.flush()
            os.fsync(self._stream.fileno())
            self._stream.close()
            os.replace(self._partial, self.path)
            self.digest = FileDigest(
                self.path.name, self.lines, self.bytes, self._hash.hexdigest(), self.largest_line
            )
        return self.digest

    def abort(self) -> None:
        self._stream.close()
        self._partial.unlink(missing_ok=True)

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
