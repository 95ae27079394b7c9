"""The readable sources inside one stored file.

A plain file is one source; an archive (.gz, .zip) is opened member by member so a
folder of rollouts uploads as one file while each member is detected, parsed and
reported on its own.

- Any source starting with a UTF-8 byte-order mark is read from after it.
- ``.gz`` (recognised by its magic bytes): one source, decompressed on the fly, named
  after the archive without ``.gz`` (``runs.jsonl.gz`` -> ``runs.jsonl``).
- ``.zip``: one source per member, named ``<archive>/<member>``, in central-directory
  order. A member ending in ``.gz`` is decompressed too. Directories and macOS resource
  forks (``__MACOSX/``, ``._*``) are not traces and are skipped; so is a member that no
  reader recognises and whose name is not a trace file's (a README: ``may_hold_trace``).
- An inspect_ai ``.eval`` log is a zip too, but it is one log: it stays one source (by its
  extension, or because it holds ``header.json``/``_journal/start.json`` and ``samples/``).

Nothing is extracted to disk or memory: each member is streamed when its source is
opened. The central directory is checked before the first source is yielded, so a zip
bomb (too many members, or more than ``max_archive_bytes`` once expanded) and a member
named with ``..`` or an absolute path are refused before anything is parsed. A gzip
stream cannot announce its size, so it is counted while it is read.

Example:
    >>> import tempfile, gzip, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "a.jsonl.gz")
    ...     with gzip.open(path, "wb") as out:
    ...         _ = out.write(b'{"id": "x", "steps": []}')
    ...     for source in iter_sources(path, filename="a.jsonl.gz"):
    ...         with source.open() as stream:
    ...             print(source.name, stream.read())
    a.jsonl b'{"id": "x", "steps": []}'
"""

from __future__ import annotations

import gzip
import io
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, cast

from ingest.core.errors import TraceParseError
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

BOM = b"\xef\xbb\xbf"
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"
ARCHIVE_MAGICS = (GZIP_MAGIC, ZIP_MAGIC, EMPTY_ZIP_MAGIC)
INSPECT_EVAL_SUFFIX = ".eval"
INSPECT_HEADERS = ("header.json", "_journal/start.json")

MSG_TOO_MANY_MEMBERS = "The archive has more than {limit} members."
MSG_ARCHIVE_TOO_LARGE = "The archive expands to more than {limit} bytes."
MSG_UNSAFE_MEMBER = "Archive member names must be relative paths without '..'."
MSG_BAD_ARCHIVE = "The archive is damaged or truncated: {detail}."
MSG_ENCRYPTED_MEMBER = "Encrypted archive members cannot be read."


@dataclass
class Source:
    """One readable member: its display name and a way to open it as a byte stream."""

    name: str
    opener: Callable[[], IO[bytes]]
    # Bytes of the stored file this member stands for (progress is reported in these).
    stored_bytes: int = 0
    # Bytes the opened stream will yield (0 when unknown), so progress inside a compressed
    # member is ``stream.tell() / expanded_bytes * stored_bytes``.
    expanded_bytes: int = 0
    # A member of a zip archive (a README zipped with the runs may be skipped: may_hold_trace).
    member: bool = False

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        """The member's bytes, past a UTF-8 byte-order mark when it starts with one."""
        stream = self.opener()
        try:
            skip_bom(stream)
            yield stream
        finally:
            stream.close()


#: Names of files that hold traces, or archives of them. A member of an archive with any
#: other name (README.md, LICENSE, a script) that no reader recognises is skipped and
#: listed, as ``manage.py ingest`` skips such files in a folder; one with a trace name is
#: an error that fails the upload, since it should have been read.
TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".traj", ".eval", ".gz", ".zip")


def may_hold_trace(name: str) -> bool:
    """Whether a file's name says it holds traces.

    Example:
        >>> may_hold_trace("runs.zip/a.JSONL"), may_hold_trace("runs.zip/README.md")
        (True, False)
    """
    return name.lower().endswith(TRACE_SUFFIXES)


def skip_bom(stream: IO[bytes]) -> None:
    """Leave ``stream`` after a leading UTF-8 byte-order mark, else where it started.

    Notepad, PowerShell 5's ``Out-File -Encoding utf8`` and Excel write one: a file that
    was fine apart from it read as "Unknown trace format" or "Unexpected UTF-8 BOM".

    Example:
        >>> stream = io.BytesIO(BOM + b'{"id": 1}')
        >>> skip_bom(stream); stream.read()
        b'{"id": 1}'
        >>> stream = io.BytesIO(b'{"id": 1}')
        >>> skip_bom(stream); stream.read()
        b'{"id": 1}'
    """
    start = stream.tell()
    if stream.read(len(BOM)) != BOM:
        stream.seek(start)


class LimitedReader(io.BufferedIOBase):
    """A read-only byte stream over a decompressing one, refusing to expand past a limit.

    Decompression errors become TraceParseError naming the archive and member.
    """

    def __init__(self, inner: Any, *, limit: int, archive: str, member: str) -> None:
        super().__init__()
        self._inner = inner
        self._limit = limit
        self._archive = archive
        self._member = member
        self._position = 0

    def _error(self, message: str) -> TraceParseError:
        return TraceParseError(message, file=self._archive, record=f"member {self._member}")

    def _guard(self, call: Callable[[int], bytes], size: int | None) -> bytes:
        room = self._limit - self._position + 1
        wanted = room if size is None or size < 0 else min(size, room)
        try:
            data = call(wanted)
        except TraceParseError:
            raise
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile, ValueError) as exc:
            raise self._error(
                MSG_BAD_ARCHIVE.format(detail=str(exc) or type(exc).__name__)
            ) from None
        self._position += len(data)
        if self._position > self._limit:
            raise self._error(MSG_ARCHIVE_TOO_LARGE.format(limit=self._limit))
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self._inner.seekable())

    def read(self, size: int | None = -1) -> bytes:
        return self._guard(self._inner.read, size)

    def read1(self, size: int = -1) -> bytes:
        return self._guard(self._inner.read, size)

    def readline(self, size: int | None = -1) -> bytes:
        return self._guard(self._inner.readline, size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        try:
            self._position = self._inner.seek(offset, whence)
        except (OSError, EOFError, zlib.error, zipfile.BadZipFile, ValueError) as exc:
            raise self._error(
                MSG_BAD_ARCHIVE.format(detail=str(exc) or type(exc).__name__)
            ) from None
        return self._position

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()


def _file_opener(path: str) -> Callable[[], IO[bytes]]:
    def opener() -> IO[bytes]:
        return open(path, "rb")  # noqa: SIM115 - Source.open closes it

    return opener


def _magic(path: str) -> bytes:
    with open(path, "rb") as stream:
        return stream.read(4)


def _stem_without_gz(name: str) -> str:
    return name[:-3] if name.lower().endswith(".gz") else name


def _is_unsafe(name: str) -> bool:
    normalised = name.replace("\\", "/")
    if normalised.startswith("/") or (len(normalised) > 1 and normalised[1] == ":"):
        return True
    return ".." in normalised.split("/")


def _is_junk(name: str) -> bool:
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return name.startswith("__MACOSX/") or base.startswith("._")


def _is_inspect_eval(names: list[str]) -> bool:
    return any(name in INSPECT_HEADERS for name in names) and any(
        name.startswith("samples/") for name in names
    )


def _gzip_size(path: str, size: int) -> int:
    """The uncompressed size from a gzip trailer (modulo 4 GiB, as gzip stores it)."""
    if size < 18:
        return 0
    with open(path, "rb") as stream:
        stream.seek(size - 4)
        return int.from_bytes(stream.read(4), "little")


def _gzip_source(path: str, filename: str, limits: ParseLimits) -> Source:
    name = _stem_without_gz(filename)

    def opener() -> IO[bytes]:
        inner = gzip.GzipFile(filename=path, mode="rb")
        return cast(
            IO[bytes],
            LimitedReader(inner, limit=limits.max_archive_bytes, archive=filename, member=name),
        )

    size = os.path.getsize(path)
    return Source(
        name=name, opener=opener, stored_bytes=size, expanded_bytes=_gzip_size(path, size)
    )


def check_zip_members(
    archive: zipfile.ZipFile, filename: str, limits: ParseLimits
) -> list[zipfile.ZipInfo]:
    """The members worth reading, after refusing bombs, unsafe names and encryption."""
    members: list[zipfile.ZipInfo] = []
    total = 0
    for info in archive.infolist():
        if _is_unsafe(info.filename):
            raise TraceParseError(
                MSG_UNSAFE_MEMBER, file=filename, record=f"member {info.filename}"
            )
        if info.is_dir() or _is_junk(info.filename):
            continue
        members.append(info)
        if len(members) > limits.max_archive_members:
            raise TraceParseError(
                MSG_TOO_MANY_MEMBERS.format(limit=limits.max_archive_members),
                file=filename,
                record=f"member {info.filename}",
            )
        total += info.file_size
        if total > limits.max_archive_bytes:
            raise TraceParseError(
                MSG_ARCHIVE_TOO_LARGE.format(limit=limits.max_archive_bytes),
                file=filename,
                record=f"member {info.filename}",
            )
        if info.flag_bits & 0x1:
            raise TraceParseError(
                MSG_ENCRYPTED_MEMBER, file=filename, record=f"member {info.filename}"
            )
    return members


def _zip_sources(path: str, filename: str, limits: ParseLimits) -> Iterator[Source]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise TraceParseError(MSG_BAD_ARCHIVE.format(detail=str(exc)), file=filename) from None
    # The archive stays open as long as any of its sources lives (the sources hold it), so a
    # caller may collect the sources first and open them later; it closes when they are gone.
    try:
        members = check_zip_members(archive, filename, limits)
    except TraceParseError:
        archive.close()
        raise
    if _is_inspect_eval([info.filename for info in archive.infolist()]):
        archive.close()
        size = os.path.getsize(path)
        yield Source(
            name=filename, opener=_file_opener(path), stored_bytes=size, expanded_bytes=size
        )
        return
    for info in members:
        yield _zip_member_source(archive, info, filename, limits)


def _zip_member_source(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, filename: str, limits: ParseLimits
) -> Source:
    member = info.filename
    compressed_gz = member.lower().endswith(".gz")
    name = f"{filename}/{_stem_without_gz(member) if compressed_gz else member}"

    def opener() -> IO[bytes]:
        try:
            raw = archive.open(info)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            raise TraceParseError(
                MSG_BAD_ARCHIVE.format(detail=str(exc)), file=filename, record=f"member {member}"
            ) from None
        inner: Any = gzip.GzipFile(fileobj=raw, mode="rb") if compressed_gz else raw
        return cast(
            IO[bytes],
            LimitedReader(inner, limit=limits.max_archive_bytes, archive=filename, member=member),
        )

    return Source(
        name=name,
        opener=opener,
        stored_bytes=info.compress_size,
        expanded_bytes=0 if compressed_gz else info.file_size,
        member=True,
    )


def iter_sources(
    path: str, *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[Source]:
    """Yield the sources of the file at ``path`` (shown to users as ``filename``).

    Sources may be kept and opened in any order, more than once (the pipeline reads the
    head for detection, then parses from the start).
    """
    magic = _magic(path)
    if magic.startswith(GZIP_MAGIC):
        yield _gzip_source(path, filename, limits)
        return
    is_zip = magic in (ZIP_MAGIC, EMPTY_ZIP_MAGIC)
    if is_zip and not filename.lower().endswith(INSPECT_EVAL_SUFFIX):
        yield from _zip_sources(path, filename, limits)
        return
    size = os.path.getsize(path)
    yield Source(name=filename, opener=_file_opener(path), stored_bytes=size, expanded_bytes=size)
