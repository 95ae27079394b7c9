"""Celery beat's scheduler (``beat_scheduler`` in settings): Celery's own, except that a
periodic task which cannot be sent because the broker is down is one line in the log.

Celery logs every failed send with the stack and the whole chain of exceptions, about a
hundred lines, and beat fails again at every tick while Redis is away, so an outage of a
few minutes buried the log. Nothing is lost by not sending: the sweeper and the closer of
quiet traces are sent at their next run. Any other failure (a task that cannot be encoded,
a bug) keeps Celery's full traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.beat import PersistentScheduler, ScheduleEntry
from kombu.exceptions import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger("celery.beat")

# What a send raises when the broker is away or refuses: kombu wraps the transport's
# connection and channel errors in OperationalError; the rest in case one comes unwrapped.
# Not the transport's whole list of connection errors, which holds OSError and KeyError.
BROKER_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError,
    RedisConnectionError,
    RedisTimeoutError,
    ConnectionError,
    TimeoutError,
)

MSG_NOT_SENT = "Could not send %s (%s): the broker is unreachable (%s); it is sent at its next run."


def broker_failure(exc: BaseException, errors: tuple[type[BaseException], ...]) -> str | None:
    """The broker's error behind ``exc`` (what Celery wraps it in, whatever it wrapped),
    as one line; None when no error in the chain is one of ``errors``.

    Example:
        >>> try:
        ...     try:
        ...         raise ConnectionRefusedError("Connection refused")
        ...     except OSError as refused:
        ...         raise RuntimeError("Couldn't apply scheduled task") from refused
        ... except RuntimeError as wrapped:
        ...     broker_failure(wrapped, (OSError,))
        'Connection refused'
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, errors):
            return " ".join(str(current).split()) or type(current).__name__
        current = current.__cause__ or current.__context__
    return None


class Scheduler(PersistentScheduler):
    """Celery's default scheduler (the schedule kept in ``--schedule``'s file)."""

    def apply_entry(self, entry: ScheduleEntry, producer: Any = None) -> None:
        # Celery's apply_entry, with the broker's failures told in one line.
        logger.info("Scheduler: Sending due task %s (%s)", entry.name, entry.task)
        try:
            self.apply_async(entry, producer=producer, advance=False)
        except Exception as exc:
            reason = broker_failure(exc, BROKER_ERRORS)
            if reason is None:
                logger.error("Message Error: %s", exc, exc_info=True)
            else:
                logger.error(MSG_NOT_SENT, entry.name, entry.task, reason)
        else:
            logger.debug("%s sent.", entry.task)
