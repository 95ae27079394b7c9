"""Live progress of a running upload.

The ingest task writes all rows of a file inside one transaction, so progress written to
the database would stay invisible until the end. It goes to the cache (Redis in a real
deployment, shared by the worker and the web server) and the status view reads it from
there; the Upload row keeps the final numbers.
"""

from __future__ import annotations

import logging
import time

from django.core.cache import cache

logger = logging.getLogger(__name__)
_TIMEOUT = 24 * 3600


def _key(upload_id: int) -> str:
    return f"faultline:upload:{upload_id}:progress"


def _beat_key(upload_id: int) -> str:
    return f"faultline:upload:{upload_id}:beat"


def _warn(action: str, upload_id: int, error: Exception) -> None:
    """One line for a cache that cannot be reached (Redis stopped: the message says where),
    a traceback only for anything else: a command-line ingest with Redis down printed two
    screens of traceback per file for what one line says."""
    unreachable = isinstance(error, (ConnectionError, OSError)) or type(error).__name__ in (
        "ConnectionError",
        "TimeoutError",
    )
    logger.warning(
        "could not %s progress of upload %s: %s",
        action,
        upload_id,
        error,
        exc_info=not unreachable,
    )


def progress_publish(*, upload_id: int, done: int, total: int) -> None:
    """The progress bar's numbers, and the heartbeat the reaper reads: the ingest's rows
    stay invisible until its one transaction commits, so its liveness lives here too."""
    try:
        cache.set_many(
            {_key(upload_id): (done, total), _beat_key(upload_id): time.time()}, _TIMEOUT
        )
    except Exception as error:  # a progress bar must never fail an ingest
        _warn("publish", upload_id, error)


def heartbeat_read(*, upload_id: int) -> float | None:
    """When the running ingest last reported progress (a Unix time), if the cache knows."""
    try:
        value = cache.get(_beat_key(upload_id))
    except Exception:
        return None
    return float(value) if isinstance(value, (int, float)) else None


def progress_read(*, upload_id: int) -> tuple[int, int] | None:
    try:
        value = cache.get(_key(upload_id))
    except Exception:
        return None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None


def progress_clear(*, upload_id: int) -> None:
    try:
        cache.delete_many([_key(upload_id), _beat_key(upload_id)])
    except Exception as error:
        _warn("clear", upload_id, error)
