"""The receiver's settings, read from environment variables when used.

They live here, not in faultline/settings.py, until the settings module takes them over;
each is read through faultline.env so a bad value fails loudly. The back-pressure limits
(``FAULTLINE_OTLP_MAX_PENDING_SPANS``, ``FAULTLINE_OTLP_LOCK_TIMEOUT_SECONDS``) are
already in the settings module and read from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from faultline.env import env_float, env_int

MAX_BODY_BYTES_ENV = "FAULTLINE_OTLP_MAX_BODY_BYTES"
CLOSE_AFTER_ENV = "FAULTLINE_OTLP_CLOSE_AFTER_SECONDS"
ABANDON_AFTER_ENV = "FAULTLINE_OTLP_ABANDON_AFTER_SECONDS"
SWEEP_AFTER_ENV = "FAULTLINE_OTLP_SWEEP_AFTER_SECONDS"
RETRY_AFTER_ENV = "FAULTLINE_OTLP_RETRY_AFTER_SECONDS"
REBUILD_PER_SPAN_ENV = "FAULTLINE_OTLP_REBUILD_SECONDS_PER_SPAN"


@dataclass(frozen=True)
class ReceiverConfig:
    # The limit holds for the body as sent and after gzip: 16 MiB is 30 full default
    # exporter batches (512 spans) of 1 KB spans.
    max_body_bytes: int = 16 * 1024 * 1024
    # Closed when the root span has ended and nothing arrived for this long...
    close_after_seconds: float = 30.0
    # ...or, root or not, after this long (an agent that crashed never ends its root).
    abandon_after_seconds: float = 3600.0
    # Pending traces whose assembly task never ran (broker down) are assembled by the
    # periodic task once they have been quiet this long.
    sweep_after_seconds: float = 60.0
    # Retry-After of a 429 (backlog full) or 503 (database unavailable). The Python
    # exporter retries only within its whole export timeout (10 s by default) and gives up
    # at once when Retry-After is longer than what is left: 2 s gives it five tries over
    # 8 s, where 5 s gave it two.
    retry_after_seconds: int = 2
    # The backlog: spans stored for the project but not assembled yet. At or over this
    # the receiver answers 429 (retried), so the span table cannot outgrow the workers.
    max_pending_spans: int = 100_000
    # How long storing a request waits for a database lock before answering 503 (SQLite
    # "database is locked", a PostgreSQL row lock): well inside the exporter's timeout.
    lock_timeout_seconds: float = 2.0
    # A trace of 200 spans or more is rebuilt at most once per (its spans x this) seconds
    # (ingest.core.otlp_trace.rebuild_wait): 2 ms a span, about thirty times what a
    # rebuild costs per span (bench/live_trace.py), so a 1,000-span trace shows new spans
    # within 2 s and its rebuilds take a few percent of a core, where one rebuild per
    # request grew with the square of its length.
    rebuild_seconds_per_span: float = 0.002
    rebuild_free_below_spans: int = 200

    @classmethod
    def from_env(cls) -> ReceiverConfig:
        default = cls()
        return cls(
            max_body_bytes=env_int(MAX_BODY_BYTES_ENV, default.max_body_bytes, minimum=1),
            close_after_seconds=env_float(CLOSE_AFTER_ENV, default.close_after_seconds),
            abandon_after_seconds=env_float(ABANDON_AFTER_ENV, default.abandon_after_seconds),
            sweep_after_seconds=env_float(SWEEP_AFTER_ENV, default.sweep_after_seconds),
            retry_after_seconds=env_int(RETRY_AFTER_ENV, default.retry_after_seconds, minimum=0),
            max_pending_spans=settings.FAULTLINE_OTLP_MAX_PENDING_SPANS,
            lock_timeout_seconds=settings.FAULTLINE_OTLP_LOCK_TIMEOUT_SECONDS,
            rebuild_seconds_per_span=env_float(
                REBUILD_PER_SPAN_ENV, default.rebuild_seconds_per_span
            ),
        )
