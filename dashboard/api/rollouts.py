"""Rollouts: the filtered list (every filter of the rollouts page) with cursor pagination,
one rollout with its steps, and the native JSONL download of a filtered list."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, StreamingHttpResponse
from ninja import Field, Query, Router, Schema

from analysis.rollout_filters import (
    SEARCH_CHARS,
    SET_SIZES,
    SORTS,
    RolloutFilters,
    rollouts_filtered,
)
from analysis.selectors import misbehaviour_exists
from attribution.models import TrajectoryAttribution
from dashboard.api.auth import request_project
from dashboard.api.errors import ApiError, errors_documented
from dashboard.api.pagination import DEFAULT_LIMIT, MAX_LIMIT, Order, keyset_page
from dashboard.api.schemas import (
    ID_MAX,
    NO_NUL,
    AttributionBrief,
    LabelOut,
    RolloutDetail,
    RolloutOut,
    RolloutPage,
    StepOut,
)
from dashboard.rollout_download import native_download
from ingest.deadline import ReadTooSlow, step_search_deadline
from ingest.models import Label, Trajectory, Upload
from ingest.outcomes import rollout_by_external_id
from ingest.selectors import rollout_labels, rollout_steps
from projects.models import Project

MSG_NO_ROLLOUT = "No rollout with this external id in the project."
MSG_NO_SUCH = "No {what} {pk} in this project."
MSG_SEARCH_TOO_SLOW = (
    "says: the search read the project's steps for {seconds:g} s without finishing and was "
    "stopped; narrow it with outcome, environment, model, system, tool, upload or task"
)
# The rollouts page's sorts, as keyset orders (field, direction, type of the field).
ORDERS = {
    "oldest": Order("oldest", "id"),
    "newest": Order("newest", "id", descending=True),
    "steps": Order("steps", "step_count"),
    "-steps": Order("-steps", "step_count", descending=True),
    "reward": Order("reward", "reward", kind=float),
    "-reward": Order("-reward", "reward", descending=True, kind=float),
    "task": Order("task", "task_id", kind=str),
    "environment": Order("environment", "environment", kind=str),
    "model": Order("model", "policy_model", kind=str),
}
assert set(ORDERS) == set(SORTS), "every sort of the rollouts page pages by cursor"
SetSize = Literal["empty", "1", "2-5", "6-20", "21+"]
assert {value for value, _, _, _ in SET_SIZES} == set(SetSize.__args__)  # type: ignore[attr-defined]
Sort = Literal[
    "oldest", "newest", "steps", "-steps", "reward", "-reward", "task", "environment", "model"
]
# The rollout routes take the external id as a path (ids such as inspect_ai's hold "/").
ROLLOUT = "/projects/{slug:slug}/rollouts/{path:external_id}"

router = Router(tags=["rollouts"])


class RolloutQuery(Schema):
    """The rollouts page's filters, by the same names as its URL."""

    outcome: Literal["success", "failure", "unknown"] | None = None
    environment: str | None = Field(None, max_length=100, pattern=NO_NUL)
    model: str | None = Field(None, max_length=100, pattern=NO_NUL)
    system: str | None = Field(None, max_length=100, pattern=NO_NUL, description="Agent system")
    task: str | None = Field(None, max_length=255, pattern=NO_NUL)
    q: str | None = Field(
        None,
        max_length=SEARCH_CHARS,
        pattern=NO_NUL,
        description="Text in the task, its id or the rollout's",
    )
    says: str | None = Field(
        None,
        max_length=SEARCH_CHARS,
        pattern=NO_NUL,
        description="Text one of the rollout's steps holds (content or call arguments), any case",
    )
    labelled: Literal["yes", "given", "rule", "no"] | None = Field(
        None, description="Labelled at all, by hand or data set, by a rule only, or not"
    )
    tool: str | None = Field(
        None,
        max_length=SEARCH_CHARS,
        pattern=NO_NUL,
        description="A tool the rollout calls (exact name)",
    )
    errors: Literal["yes", "no"] | None = Field(
        None,
        description="With a step marked as an error, or without any (with `tool`: of that tool)",
    )
    upload: int | None = Field(None, ge=1, le=ID_MAX)
    misbehaviour: int | None = Field(None, ge=1, le=ID_MAX)
    set_size: SetSize | None = None
    sort: Sort = "oldest"

    def filters(self, project: Project) -> RolloutFilters:
        """The filters; an upload or misbehaviour id the project does not have is a 400
        (an empty page read as "no rollout has it"; the exports refuse such ids too)."""
        if self.upload and not Upload.objects.filter(project=project, pk=self.upload).exists():
            raise ApiError(400, MSG_NO_SUCH.format(what="upload", pk=self.upload), field="upload")
        if self.misbehaviour and not misbehaviour_exists(project=project, pk=self.misbehaviour):
            message = MSG_NO_SUCH.format(what="misbehaviour", pk=self.misbehaviour)
            raise ApiError(400, message, field="misbehaviour")
        given = {key: str(value) for key, value in self.model_dump().items() if value is not None}
        return RolloutFilters.from_query(given)


class PageQuery(Schema):
    cursor: str | None = Field(None, max_length=1000)
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)


def rollout_or_404(project: Project, external_id: str) -> Trajectory:
    rollout = rollout_by_external_id(project=project, external_id=external_id)
    if rollout is None:
        raise Http404(MSG_NO_ROLLOUT)
    return rollout


def _brief(row: TrajectoryAttribution | None) -> AttributionBrief | None:
    if row is None:
        return None
    return AttributionBrief.model_construct(
        lo=row.lo,
        hi=row.hi,
        rollback_step=row.rollback_step,
        point_step=row.point_step,
        calibrated=row.is_calibrated,
    )


def rollout_out(
    rollout: Trajectory, attribution: TrajectoryAttribution | None, labelled: bool
) -> RolloutOut:
    # Built unvalidated from stored rows: ninja validates the whole answer against its
    # response schema anyway, and validating each row twice was half of a list's time.
    return RolloutOut.model_construct(
        id=rollout.pk,
        external_id=rollout.external_id,
        task_id=rollout.task_id,
        environment=rollout.environment,
        agent_system=rollout.agent_system,
        policy_model=rollout.policy_model,
        outcome=rollout.outcome,
        reward=rollout.reward,
        step_count=rollout.step_count,
        labelled=labelled,
        upload_id=rollout.upload_id,
        created_at=rollout.created_at,
        attribution=_brief(attribution),
    )


def rollout_summary(rollout: Trajectory) -> RolloutOut:
    """One rollout as the list shows it, read on its own."""
    attribution = TrajectoryAttribution.objects.filter(trajectory=rollout).first()
    labelled = Label.objects.filter(trajectory=rollout).exists()
    return rollout_out(rollout, attribution, labelled)


def label_out(label: Label) -> LabelOut:
    return LabelOut(
        id=label.pk,
        step=label.step_index,
        agent=label.agent,
        reason=label.reason,
        source=label.source,
        author=label.author.get_username() if label.author else "",
        token=label.token.name if label.token else "",
        created_at=label.created_at,
        step_agent=None,
    )


def next_url(request: HttpRequest, cursor: str | None) -> str | None:
    if cursor is None:
        return None
    params = request.GET.copy()
    params["cursor"] = cursor
    return request.build_absolute_uri(
        f"{request.path}?{urlencode(list(params.lists()), doseq=True)}"
    )


@router.get(
    "/projects/{slug:slug}/rollouts",
    response={200: RolloutPage, **errors_documented(400, 404, 422)},
    url_name="rollout_list",
    summary="Rollouts, filtered like the rollouts page, a page at a time",
)
def rollout_list(
    request: HttpRequest, slug: str, filters: Query[RolloutQuery], page: Query[PageQuery]
) -> RolloutPage:
    project = request_project(request)
    chosen = filters.filters(project)
    rows = rollouts_filtered(project=project, filters=chosen)
    try:
        with step_search_deadline(chosen.says):
            rollouts, cursor = keyset_page(
                rows, order=ORDERS[filters.sort], cursor=page.cursor, limit=page.limit
            )
    except ReadTooSlow as stopped:
        raise ApiError(
            422, MSG_SEARCH_TOO_SLOW.format(seconds=stopped.seconds), field="says"
        ) from stopped
    attributions = {
        row.trajectory_id: row
        for row in TrajectoryAttribution.objects.filter(trajectory__in=[r.pk for r in rollouts])
    }
    return RolloutPage(
        results=[
            rollout_out(r, attributions.get(r.pk), bool(getattr(r, "has_label", False)))
            for r in rollouts
        ],
        next_cursor=cursor,
        next=next_url(request, cursor),
    )


@router.get(
    "/projects/{slug:slug}/rollouts.jsonl",
    response={200: None, **errors_documented(400, 404)},
    url_name="rollout_download",
    summary="Rollouts in the native JSONL format (same filters as the list)",
    openapi_extra={
        "responses": {
            200: {
                "description": "One native rollout per line",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        }
    },
)
def rollout_download(
    request: HttpRequest, slug: str, filters: Query[RolloutQuery]
) -> StreamingHttpResponse:
    project = request_project(request)
    rows = rollouts_filtered(project=project, filters=filters.filters(project))
    return native_download(rows, filename=f"{project.slug}-rollouts")


@router.get(
    ROLLOUT,
    response={200: RolloutDetail, **errors_documented(404)},
    url_name="rollout_detail",
    summary="One rollout with its steps and labels, by external id",
)
def rollout_detail(request: HttpRequest, slug: str, external_id: str) -> RolloutDetail:
    rollout = rollout_or_404(request_project(request), external_id)
    summary = rollout_summary(rollout)
    steps = [
        StepOut.model_validate(step, from_attributes=True)
        for step in rollout_steps(rollout=rollout)
    ]
    return RolloutDetail(
        **summary.model_dump(),
        task_text=rollout.task_text,
        metadata=rollout.metadata or {},
        steps=steps,
        labels=[label_out(label) for label in rollout_labels(rollout=rollout)],
    )
