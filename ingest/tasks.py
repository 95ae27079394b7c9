from __future__ import annotations

from celery import shared_task

from ingest.services import upload_ingest


@shared_task(acks_late=True)
def ingest_upload(upload_id: int) -> str:
    """Parse one stored upload. Takes only the id; a second run is a no-op."""
    return upload_ingest(upload_id=upload_id).status
