"""Live progress of a running upload.

The ingest task writes all rows of a file inside one transaction, so progress written to
the database would stay invisible until the end. It goes to the cache (Redis in a real
deployment, shared by the worker and the web server) and the status view reads it from
there; the Upload row keeps the final numbers.
"""

from __future__ import annotations

import logging

from django.core.cache import cache

logger = logging.getLogger(__name__)
_TIMEOUT = 24 * 3600


def _key(upload_id: int) -> str:
    return f"faultline:upload:{upload_id}:progress"


def progress_publish(*, upload_id: int, done: int, total: int) -> None:
    try:
        cache.set(_key(upload_id), (done, total), _TIMEOUT)
    except Exception:  # a progress bar must never fail an ingest
        logger.warning("could not publish progress of upload %s", upload_id, exc_info=True)


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
        cache.delete(_key(upload_id))
    except Exception:
        logger.warning("could not clear progress of upload %s", upload_id, exc_info=True)
