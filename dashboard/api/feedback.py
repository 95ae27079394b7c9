"""What arrives after a rollout, from another process: its outcome (success, failure, a
reward, how it was judged) and a human's decisive-step label, by the rollout's external id
(the trace id of an OTLP rollout).

An outcome that changes queues the project's refresh once it commits: a rollout turning
failed is attributed (and its wrong steps placed in the misbehaviours) by it, one turning
successful leaves them. A label queues the recalibration (attribution.labels).
"""

from __future__ import annotations

import logging

from django.http import Http404, HttpRequest
from kombu.exceptions import OperationalError
from ninja import Path, Router, Status

from attribution.labels import LabelError, human_label_add, token_label_delete
from dashboard.api.auth import request_project, request_token
from dashboard.api.errors import BODY_PARAM, ApiError, errors_documented, field_name
from dashboard.api.rollouts import ROLLOUT, label_out, rollout_or_404, rollout_summary
from dashboard.api.schemas import (
    ID_MAX,
    LabelIn,
    LabelList,
    LabelOut,
    OutcomeIn,
    OutcomeOut,
    OutcomesIn,
    OutcomesOut,
)
from ingest.models import Label
from ingest.outcomes import OutcomeError
from ingest.selectors import rollout_labels
from pipeline.outcomes import (
    OutcomeItem,
    OutcomeItemError,
    rollout_outcome_change,
    rollouts_outcome_change,
)
from pipeline.refresh import refresh_project_queue

logger = logging.getLogger(__name__)

MSG_NO_LABEL = "This rollout has no such label."

router = Router(tags=["outcomes and labels"])
assert BODY_PARAM == "payload", "the body parameters below are named like errors.BODY_PARAM"


@router.post(
    ROLLOUT + "/outcome",
    response={200: OutcomeOut, **errors_documented(400, 404)},
    url_name="rollout_outcome",
    summary="Attach an outcome, reward or metadata to a stored rollout",
)
def rollout_outcome(
    request: HttpRequest, slug: str, external_id: str, payload: OutcomeIn
) -> OutcomeOut:
    rollout = rollout_or_404(request_project(request), external_id)
    try:
        change = rollout_outcome_change(
            rollout=rollout,
            outcome=payload.outcome,
            reward=payload.reward,
            metadata=payload.metadata,
        )
    except OutcomeError as exc:
        raise ApiError(400, str(exc), field=exc.field) from None
    return OutcomeOut(
        rollout=rollout_summary(change.rollout), attribution_queued=change.outcome_changed
    )


@router.post(
    "/projects/{slug:slug}/outcomes",
    response={200: OutcomesOut, **errors_documented(400, 404)},
    url_name="rollouts_outcome",
    summary="Attach outcomes, rewards or metadata to many stored rollouts at once",
)
def rollouts_outcome(request: HttpRequest, slug: str, payload: OutcomesIn) -> OutcomesOut:
    """All or nothing: an item naming no rollout of the project, a rollout named twice or a
    bad value is a 400 naming the item (``outcomes.3.id``), and nothing is stored. One
    refresh is queued for the rollouts whose outcome changed."""
    project = request_project(request)
    items = [
        OutcomeItem(item.id, outcome=item.outcome, reward=item.reward, metadata=item.metadata)
        for item in payload.outcomes
    ]
    try:
        changes = rollouts_outcome_change(project=project, items=items)
    except OutcomeItemError as exc:
        # Named as the schema's own errors name an item's field ("outcomes.3.id"); the
        # item's message may start with its field ("metadata: ..."): said once.
        field = field_name(["outcomes", exc.position, *([exc.field] if exc.field else [])])
        message = str(exc).removeprefix(f"{exc.field}: ") if exc.field else str(exc)
        raise ApiError(400, f"{field}: {message}", field=field) from None
    return OutcomesOut(
        updated=len(changes),
        attribution_queued=[c.rollout.external_id for c in changes if c.outcome_changed],
    )


@router.get(
    ROLLOUT + "/labels",
    response={200: LabelList, **errors_documented(404)},
    url_name="rollout_labels",
    summary="The rollout's decisive-step labels, newest first",
)
def rollout_label_list(request: HttpRequest, slug: str, external_id: str) -> LabelList:
    rollout = rollout_or_404(request_project(request), external_id)
    return LabelList(labels=[label_out(label) for label in rollout_labels(rollout=rollout)])


@router.post(
    ROLLOUT + "/labels",
    response={201: LabelOut, **errors_documented(400, 404)},
    url_name="rollout_label_add",
    summary="Label the decisive step of a failed rollout (again: moves this token's label)",
)
def rollout_label_add(
    request: HttpRequest, slug: str, external_id: str, payload: LabelIn
) -> Status[LabelOut]:
    rollout = rollout_or_404(request_project(request), external_id)
    step_agent: str | None = None
    try:
        saved = human_label_add(
            trajectory=rollout,
            step_index=payload.step,
            reason=payload.reason,
            agent=payload.agent,
            token=request_token(request),
        )
        label, step_agent = saved.label, saved.step_agent
    except LabelError as exc:
        raise ApiError(400, str(exc), field=exc.field) from None
    except OperationalError:
        # The label is committed; only the recalibration's dispatch failed (the broker is
        # down). A refresh row recalibrates too, and the sweeper sends it once it can.
        logger.warning("broker down after label on rollout %s: refresh left queued", rollout.pk)
        refresh_project_queue(project_id=rollout.project_id)
        label = rollout_labels(rollout=rollout)[0]
    answer = label_out(label)
    answer.step_agent = step_agent
    return Status(201, answer)


@router.delete(
    ROLLOUT + "/labels/{label_pk}",
    response={204: None, **errors_documented(403, 404)},
    url_name="rollout_label_delete",
    summary="Remove a label this token wrote",
)
def rollout_label_delete(
    request: HttpRequest,
    slug: str,
    external_id: str,
    label_pk: int = Path(..., ge=1, le=ID_MAX),
) -> Status[None]:
    rollout = rollout_or_404(request_project(request), external_id)
    label = Label.objects.filter(trajectory=rollout, pk=label_pk).first()
    if label is None:
        raise Http404(MSG_NO_LABEL)
    try:
        token_label_delete(label=label, token=request_token(request))
    except (PermissionError, ValueError) as exc:
        raise ApiError(403, str(exc)) from None
    return Status(204, None)
