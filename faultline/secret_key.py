"""SECRET_KEY without a published default: read from a file under var/, created on first
use with a random key. Imported by settings.py, so it imports nothing of Django."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from pathlib import Path


def secret_key_from_file(path: Path) -> str:
    """The key stored in ``path``; written first (random, mode 600) when the file is absent.

    Creation is atomic (a link that fails if the file exists), so two processes starting at
    once end up with the same key.

    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     key = secret_key_from_file(pathlib.Path(folder) / "secret_key")
    ...     len(key) >= 50 and key == secret_key_from_file(pathlib.Path(folder) / "secret_key")
    True
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")
        try:
            with os.fdopen(descriptor, "w") as stream:
                stream.write(secrets.token_urlsafe(64) + "\n")
            os.chmod(draft, 0o600)
            with contextlib.suppress(FileExistsError):  # another process won the race
                os.link(draft, path)
        finally:
            os.unlink(draft)
    return path.read_text().strip()
