"""Which code read a file: a fingerprint of the ingest readers' own source.

A file that failed on its content fails the same way as long as the code that read it is
the same, so sending it again returns that failure. Once the readers change (a release
that reads a new shape, or fixes one), the same file may read: the fingerprint of the
modules that parse (``ingest/core`` and ``ingest/parsers``) tells the two apart without a
version number anyone has to remember to bump.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent
_READERS = ("core", "parsers")


@cache
def reader_version() -> str:
    """16 hex digits of the sha256 of the readers' sources, in path order.

    Example:
        >>> len(reader_version()), reader_version() == reader_version()
        (16, True)
    """
    digest = hashlib.sha256()
    for folder in _READERS:
        for path in sorted((_PACKAGE / folder).rglob("*.py")):
            digest.update(path.relative_to(_PACKAGE).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
