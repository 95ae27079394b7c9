"""A time limit for a read that scans steps: the search of what the steps say.

With no text index, a search for text few steps hold reads every step of the project
(about 5 s per million steps on PostgreSQL, 1.5 s on SQLite; docs/benchmarks.md). On a
project ten times the benchmark's it would hold a web worker for a minute and more, so
the read is stopped at a deadline and the page says to narrow the search instead.
PostgreSQL stops it itself (``statement_timeout`` for this transaction only); SQLite
through a progress handler that interrupts the statement once the time is up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from django.db import OperationalError, connection, transaction

# How often SQLite calls the progress handler, in virtual machine instructions: a few
# microseconds of work each time, so the deadline is kept to well under a millisecond.
_SQLITE_CHECK_EVERY = 10_000
_PG_QUERY_CANCELED = "57014"
# How long a search of what the steps say may read (the rollouts page and the API's list).
STEP_SEARCH_SECONDS = 20.0


class ReadTooSlow(Exception):
    """The read did not finish within its deadline of ``seconds``; nothing it read is kept."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def _statement_timeout(value: str) -> str:
    """Set PostgreSQL's statement timeout for the transaction; the value it had."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('statement_timeout')")
        previous = cursor.fetchone()[0]
        cursor.execute("SELECT set_config('statement_timeout', %s, true)", [value])
    return str(previous)


@contextmanager
def read_deadline(seconds: float) -> Iterator[None]:
    """Run the block's queries with a time limit; past it, :class:`ReadTooSlow`."""
    if connection.vendor == "postgresql":
        try:
            with transaction.atomic():
                limit = f"{max(1, round(seconds * 1000))}ms"
                previous = _statement_timeout(limit)
                yield
                # Inside an outer transaction (a test's) the setting would outlive the
                # block; a stopped read rolls it back with its savepoint.
                _statement_timeout(previous)
        except OperationalError as error:
            if getattr(error.__cause__, "sqlstate", None) == _PG_QUERY_CANCELED:
                raise ReadTooSlow(seconds) from error
            raise
        return
    connection.ensure_connection()
    raw = connection.connection
    deadline = time.monotonic() + seconds
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), _SQLITE_CHECK_EVERY)
    try:
        yield
    except OperationalError as error:
        if "interrupted" in str(error):
            raise ReadTooSlow(seconds) from error
        raise
    finally:
        raw.set_progress_handler(None, _SQLITE_CHECK_EVERY)


def step_search_deadline(text: str) -> AbstractContextManager[None]:
    """The deadline of a search for ``text`` in the steps; none when no text is searched
    (every other filter is answered from indexes)."""
    return read_deadline(STEP_SEARCH_SECONDS) if text else nullcontext()
