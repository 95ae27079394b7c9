from __future__ import annotations

from celery import shared_task

from ingest.services import upload_ingest


@shared_task(acks_late=True)
def ingest_upload(upload_id: int) -> str:
    """Parse one stored upload. Takes only the id; a second run is a no-op."""
    return upload_ingest(upload_id=upload_id).status


@shared_task(acks_late=True)
def assemble_live_traces(project_id: int, trace_ids: list[str]) -> int:
    """Rebuild the rollouts of these OTLP traces from their stored spans (pending ones only,
    so a second delivery does nothing)."""
    from ingest.otlp.services import live_traces_assemble

    return live_traces_assemble(project_id=project_id, trace_ids=trace_ids)


@shared_task(acks_late=True)
def close_quiet_traces() -> int:
    """Periodic (Celery beat): close quiet OTLP traces, assemble any whose task was lost."""
    from ingest.otlp.services import live_traces_close

    return live_traces_close()
