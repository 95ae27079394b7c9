"""Live rollouts from the OTLP receiver: what runs after spans arrive and after a trace
closes. Ingest stores and assembles; the pipeline decides what follows (the refresh)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError

from ingest.otlp.services import live_traces_assemble, live_traces_close
from pipeline.overview_pending import overview_counts_catch_up, overview_shares_pending_add
from pipeline.refresh import project_refresh_dispatch

logger = logging.getLogger(__name__)


def _assembly_send(
    project_id: int, trace_ids: list[str], *, scheduled: bool = False, countdown: float = 0.0
) -> None:
    """Queue an assembly task; with the broker down the spans are safe (stored, their
    traces pending) and the closing sweep assembles them later, so nothing fails for it."""
    from pipeline.tasks import assemble_live_traces

    try:
        assemble_live_traces.apply_async(
            (project_id, trace_ids), {"scheduled": scheduled}, countdown=countdown or None
        )
    except Exception:  # kombu's OperationalError: the broker is down
        logger.warning("broker unavailable: %d traces wait for the sweep", len(trace_ids))


def live_traces_assemble_dispatch(project_id: int, trace_ids: list[str]) -> None:
    """Queue the assembly of a request's traces (the request succeeds with the broker down)."""
    _assembly_send(project_id, trace_ids)


def rollouts_changed(project_id: int) -> None:
    """Closed live rollouts were created or changed: the project needs its refresh.

    It starts FAULTLINE_STREAM_REFRESH_DELAY_S later, and the traces that close meanwhile
    join it (a waiting refresh takes every later request): under a burst of traces the
    analysis runs once over a batch, which costs far less per rollout than one refresh per
    closing sweep, and leaves the cores to the receiver and the assembly while it lasts.
    """
    project_refresh_dispatch(
        project_id=project_id, countdown=settings.FAULTLINE_STREAM_REFRESH_DELAY_S
    )


def rollouts_assembled(project_id: int, rollout_ids: list[int]) -> None:
    """Live rollouts were written (open ones too), in the assembly's transaction: note them
    for the overview's counters, which the closing sweep moves for all of them at once
    (pipeline.overview_pending)."""
    overview_shares_pending_add(project_id=project_id, rollout_ids=rollout_ids)


def live_traces_assemble_later(project_id: int, trace_ids: list[str], seconds: float) -> None:
    """Long traces rebuilt moments ago wait for their next rebuild (ingest's rebuild_wait):
    queue it, as the scheduled rebuild, for when the wait is over."""
    _assembly_send(project_id, trace_ids, scheduled=True, countdown=seconds)


def live_traces_assemble_run(
    project_id: int, trace_ids: list[str], *, scheduled: bool = False
) -> int:
    return live_traces_assemble(
        project_id=project_id,
        trace_ids=trace_ids,
        on_changed=rollouts_changed,
        on_assembled=rollouts_assembled,
        on_deferred=live_traces_assemble_later,
        scheduled=scheduled,
    )


def live_traces_close_run() -> int:
    """The closing sweep: close quiet traces (assembling any whose task was lost), then move
    the overview's counters by the live rollouts written since the last sweep. A refused
    counter move only leaves the cards behind until the next sweep or refresh: the closed
    traces, committed already, are not failed for it."""
    closed = live_traces_close(on_changed=rollouts_changed, on_assembled=rollouts_assembled)
    try:
        overview_counts_catch_up()
    except DatabaseError:
        logger.warning("overview counters wait for the next sweep", exc_info=True)
    return closed
