"""Misbehaviours: the project's active ones (largest share first), one with its spread over
environments and models, and its member wrong steps a page at a time."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from ninja import Path, Query, Router

from analysis.models import Misbehaviour, WrongStepMembership
from analysis.selectors import active_misbehaviours, misbehaviour_for_project, misbehaviours_now
from dashboard.api.auth import request_project
from dashboard.api.errors import errors_documented
from dashboard.api.pagination import Order, keyset_page
from dashboard.api.rollouts import PageQuery, next_url
from dashboard.api.schemas import (
    ID_MAX,
    MemberOut,
    MemberPage,
    MisbehaviourDetail,
    MisbehaviourList,
    MisbehaviourOut,
    SuggestionOut,
)
from projects.models import Project

MSG_NO_MISBEHAVIOUR = "No such misbehaviour in the project."
MEMBER_ORDER = Order("members", "id")

router = Router(tags=["misbehaviours"])


def _fields(m: Misbehaviour) -> dict[str, object]:
    merged_into = misbehaviours_now(m.project, [m.pk]) if m.merged_into_id else []
    return {
        "id": m.pk,
        "key": m.key,
        "name": m.display_name,
        "category": m.category.name if m.category else "",
        "category_code": m.category.code if m.category else "",
        "suggested_category": _suggestion(m),
        "share": m.share,
        "size": m.size,
        "rollout_count": m.rollout_count,
        "environment_count": m.environment_count,
        "task_count": m.task_count,
        "model_count": m.model_count,
        "recurs": {key: int(value) for key, value in (m.recurs or {}).items()},
        "generalises": m.generalises,
        "lift": m.lift,
        "lift_unadjusted": m.lift_unadjusted,
        "lift_adjusted": m.lift_adjusted,
        "lift_adjusted_rollouts": m.lift_adjusted_rollouts,
        "lift_gap": m.lift_gap,
        "pattern": m.pattern,
        "loose": m.loose,
        "terms": list(m.terms or []),
        "merged_into": merged_into[0] if merged_into else None,
    }


def _suggestion(m: Misbehaviour) -> SuggestionOut | None:
    """The suggestion the pages show: only while no user has chosen a category."""
    suggested = m.suggested_category
    if suggested is None or m.category_id is not None:
        return None
    return SuggestionOut(
        code=suggested.code,
        name=suggested.name,
        support=m.suggestion_support,
        strong=m.suggestion_is_strong,
        basis=m.suggestion_basis,
    )


def _misbehaviour(project: Project, pk: int) -> Misbehaviour:
    try:
        return misbehaviour_for_project(project, pk)
    except Misbehaviour.DoesNotExist:
        raise Http404(MSG_NO_MISBEHAVIOUR) from None


@router.get(
    "/projects/{slug:slug}/misbehaviours",
    response={200: MisbehaviourList, **errors_documented(404)},
    url_name="misbehaviour_list",
    summary="The project's misbehaviours, largest share of wrong steps first",
)
def misbehaviour_list(request: HttpRequest, slug: str) -> MisbehaviourList:
    rows = active_misbehaviours(request_project(request))
    return MisbehaviourList(misbehaviours=[MisbehaviourOut(**_fields(m)) for m in rows])  # type: ignore[arg-type]


@router.get(
    "/projects/{slug:slug}/misbehaviours/{pk}",
    response={200: MisbehaviourDetail, **errors_documented(404)},
    url_name="misbehaviour_detail",
    summary="One misbehaviour",
)
def misbehaviour_detail(
    request: HttpRequest, slug: str, pk: int = Path(..., ge=1, le=ID_MAX)
) -> MisbehaviourDetail:
    m = _misbehaviour(request_project(request), pk)
    return MisbehaviourDetail(
        **_fields(m),  # type: ignore[arg-type]
        environments=dict(m.environments or {}),
        policy_models=dict(m.policy_models or {}),
        exemplar_step_ids=[int(step) for step in m.exemplars or []],
    )


@router.get(
    "/projects/{slug:slug}/misbehaviours/{pk}/members",
    response={200: MemberPage, **errors_documented(400, 404)},
    url_name="misbehaviour_members",
    summary="The misbehaviour's wrong steps, a page at a time",
)
def misbehaviour_members(
    request: HttpRequest, slug: str, page: Query[PageQuery], pk: int = Path(..., ge=1, le=ID_MAX)
) -> MemberPage:
    m = _misbehaviour(request_project(request), pk)
    rows = WrongStepMembership.objects.filter(misbehaviour=m).select_related("step__trajectory")
    members, cursor = keyset_page(rows, order=MEMBER_ORDER, cursor=page.cursor, limit=page.limit)
    return MemberPage(
        results=[
            MemberOut(
                id=row.pk,
                step_id=row.step_id,
                step_index=row.step.index,
                rollout_id=row.step.trajectory_id,
                rollout_external_id=row.step.trajectory.external_id,
                probability=row.probability,
                weight=row.weight,
                source=row.source,
                assigned=row.assigned,
            )
            for row in members
        ],
        next_cursor=cursor,
        next=next_url(request, cursor),
    )
