"""Span requests refused for good, counted per project (``ingest.models.SpanRefusals``).

An exporter drops a batch answered 400, 413 or 415, and the spans refused in a partial
success: nothing of them reaches the product, and a trace that lost a batch can look
complete. The count, the first and the latest refusal are what the uploads page shows.
Retried answers (429, 503) lose nothing and are not counted.

A request refused whole and a partial success are counted apart: ``requests`` counts the
requests refused whole (their spans are unknown: the body was not read), ``spans`` the
spans refused inside requests that were otherwise taken. A partial success is no refused
request: counted as one, "5 refused requests" stood for 4 refused and 1 taken but for a span.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from ingest.models import SpanRefusals

logger = logging.getLogger(__name__)

LOST_STATUSES = frozenset({400, 413, 415})


def span_refusal_record(*, project_id: int, status: int, message: str, spans: int = 0) -> None:
    """Count one request refused whole (``status`` in LOST_STATUSES), or the ``spans``
    refused in a partial success (answered 200: the request is not counted). Never
    raises: the exporter's answer must not turn into a 500 because this could not be
    written (the refusal is logged either way)."""
    logger.warning(
        "OTLP spans of project %s lost (%s%s): %s",
        project_id,
        status,
        f", {spans} spans" if spans else "",
        message,
    )
    now = timezone.now()
    latest = {"last_at": now, "last_status": status, "last_message": message}
    requests = 1 if status in LOST_STATUSES else 0
    try:
        with transaction.atomic():
            if _count(project_id, requests, spans, latest):
                return
            _, created = SpanRefusals.objects.get_or_create(
                project_id=project_id,
                defaults={"requests": requests, "spans": spans, "first_at": now, **latest},
            )
            if not created:  # another request made the row in between
                _count(project_id, requests, spans, latest)
    except DatabaseError:
        logger.exception("the refusal of project %s's spans could not be counted", project_id)


def _count(project_id: int, requests: int, spans: int, latest: dict[str, object]) -> int:
    return SpanRefusals.objects.filter(project_id=project_id).update(
        requests=F("requests") + requests, spans=F("spans") + spans, **latest
    )
