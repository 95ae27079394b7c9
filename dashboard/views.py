"""Pages of the dashboard. Views only check access, call a selector or a service, render."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, cast

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.db import transaction
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from pydantic import ValidationError

from analysis.rollout_filters import (
    ERROR_CHOICES,
    LABELLED_CHOICES,
    SET_SIZE_LABELS,
    SORT_LABELS,
    RolloutFilters,
    labelled_ids,
    project_facets,
    rollouts_filtered,
    search_text,
)
from dashboard.api.errors import MSG_INVALID_FIELD, ApiError, field_name
from dashboard.api.rollouts import ORDERS, RolloutQuery
from dashboard.api.schemas import ID_MAX
from dashboard.pages import compare_context, overview_context, rollout_context
from dashboard.rollout_download import native_download
from dashboard.rollout_paging import empty_page, rollout_page
from dashboard.serializers import upload_json, upload_outcome_json
from dashboard.snippets import Snippet, step_snippet
from ingest.core.records import Outcome
from ingest.deadline import ReadTooSlow, step_search_deadline
from ingest.models import SpanRefusals, Trajectory, Upload
from ingest.otlp.rollouts import STREAM_UPLOAD_SHA256, stream_upload_counts
from ingest.outcomes import OutcomeError
from ingest.parsers import PARSERS, format_label
from ingest.selectors import first_steps_saying, rollout_for_project, uploads_for_project
from ingest.services import AGENT_SYSTEM_CHARS, UploadRejected, UploadTooLarge
from pipeline.outcomes import rollout_outcome_change
from pipeline.overview import stored_tool_names
from pipeline.overview_cards import overview_cards_state
from pipeline.refresh import refresh_project_queue
from pipeline.uploads import UploadNotRetryable, upload_retry_submit, upload_submit
from projects.access import project_view
from projects.models import MAX_MISCOVERAGE, MIN_MISCOVERAGE, Membership, Project, Role
from projects.services import (
    ProjectError,
    project_create,
    project_member_remove,
    project_member_set,
    project_miscoverage_set,
)
from projects.tokens import TokenError, token_issue, token_revoke

UPLOADS_PER_PAGE = 200

# A text search matches by scanning candidate rows, and an exact count of a broad one
# doubles that scan for a number nobody reads: "more than 1,000 match" instead.
SEARCH_COUNT_CAP = 1_000
ROLLOUTS_PER_PAGE = 50
PAGING_PARAMS = ("page", "after", "before")


STEP_WINDOW = 400
MSG_USER_NOT_FOUND = "No user with that name."
MSG_NO_ROLLOUT_NAMED = "No rollout called “{name}” in this project."
MSG_NAMED_ITSELF = "“{name}” is this rollout itself: name another to compare with."
MSG_MEMBER_REMOVED = "{user} is no longer a member of this project."
MSG_NO_SUCH_TOKEN = "No such token in this project."
MSG_UPLOAD_RETRIED = "{name} is queued again."
MSG_NOT_FAILED = "Only a failed upload can be retried."
MSG_OUTCOME_SET = (
    "Outcome set to {outcome}. The attribution and the misbehaviours are refreshed with it."
)
MSG_OUTCOME_SAME = "The outcome already was {outcome}: nothing changed."
MSG_OUTCOME_INVALID = "The outcome was not set: {error}"
MSG_REFRESH_RETRIED = "The project's analysis is queued again."
MSG_TOKEN_REVOKED = "Token “{name}” revoked: requests with it are refused from now on."
MSG_MISCOVERAGE_SAVED = (
    "Miscoverage set to {alpha:g}: the attribution is being recalibrated at that level."
)


def _formats() -> list[tuple[str, str]]:
    return [(name, format_label(name)) for name in PARSERS]


def _id_or_none(raw: str) -> int | None:
    """A row id typed into a query or form field, None unless it is one a table can hold."""
    raw = raw.strip()
    return int(raw) if raw.isdigit() and 0 < int(raw) <= ID_MAX else None


@login_required
@require_http_methods(["GET", "POST"])
def project_list(request: HttpRequest) -> HttpResponse:
    user = cast(User, request.user)  # login_required
    if request.method == "POST":
        try:
            project = project_create(name=request.POST.get("name", ""), owner=user)
        except ProjectError as exc:
            messages.error(request, str(exc))
        else:
            return redirect("dashboard:project_detail", slug=project.slug)
    memberships = user.memberships.select_related("project").order_by("project__name")
    return render(request, "dashboard/project_list.html", {"memberships": memberships})


def sweep_minutes() -> int:
    """Whole minutes within which the sweeper sends a job accepted while the broker was
    down, once it is back: its interval plus the age a job must reach first."""
    seconds = settings.FAULTLINE_SWEEP_INTERVAL_S + settings.FAULTLINE_JOB_SWEEP_GRACE_S
    return max(1, math.ceil(seconds / 60))


@project_view()
def project_detail(request: HttpRequest, membership: Membership) -> HttpResponse:
    """The project overview: cards, failure taxonomy and the charts of where runs fail."""
    project = membership.project
    cards = overview_cards_state(project=project)
    counts = cards.counts
    context: dict[str, Any] = {
        "project": project,
        "membership": membership,
        "nav": "overview",
        "counts": counts,
        # A failure rate counts the rollouts whose outcome is known (a trace may carry none).
        "judged": counts["failed"] + counts["succeeded"],
        "unjudged": counts["rollouts"] - counts["failed"] - counts["succeeded"],
        "cards_lag": cards.lag_message,
        "formats": _formats(),
        "sweep_minutes": sweep_minutes(),
    }
    if counts["rollouts"]:
        context.update(overview_context(project=project))
    return render(request, "dashboard/overview.html", context)


@project_view()
def rollout_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    project = membership.project
    filters = RolloutFilters.from_query(request.GET.dict())
    # A parameter the API refuses (a typo in a shared link, a search past the limit) is
    # named, as the API names it, instead of being cut or dropped: "0 rollouts match"
    # would read as an answer. Nothing is searched; the form stays to fix it.
    filter_error = rollout_query_error(project, request.GET.dict())
    # The list never shows metadata (tau-bench's holds whole gold-action lists).
    rollouts = rollouts_filtered(project=project, filters=filters, label_flag=False)
    search_stopped_after: float | None = None  # seconds, when a step search was stopped
    # Text in the steps is found by reading them (no text index): a deadline keeps a
    # search of a very large project from holding the worker (ingest.deadline).
    page, quotes = empty_page(), {}
    if not filter_error:
        try:
            with step_search_deadline(filters.says):
                page = rollout_page(
                    rollouts.defer("metadata"),
                    order=ORDERS[filters.sort],
                    params=request.GET.dict(),
                    count_cap=SEARCH_COUNT_CAP if filters.searches else None,
                    per_page=ROLLOUTS_PER_PAGE,
                )
                # With "a step says", each row quotes its first step that says it.
                quotes = _step_quotes(page.object_list, filters.says) if filters.says else {}
        except ReadTooSlow as stopped:
            page, quotes, search_stopped_after = empty_page(), {}, stopped.seconds
    return render(
        request,
        "dashboard/rollout_list.html",
        {
            "project": project,
            "membership": membership,
            "nav": "rollouts",
            "filters": filters,
            "facets": project_facets(project=project),
            "tools": stored_tool_names(project=project, keep=filters.tool),
            "any_rollout": page.count > 0 or project.trajectories.exists(),
            "page": page,
            "rows": [(row, quotes.get(row.pk)) for row in page.object_list],
            # Only the rows shown are looked up, not every row the query reads.
            "labelled": labelled_ids([row.pk for row in page.object_list]),
            # The page-number form keeps the filters and the sort.
            "kept_params": [
                (key, value) for key, value in request.GET.items() if key not in PAGING_PARAMS
            ],
            "formats": _formats(),
            "sorts": SORT_LABELS,
            "set_sizes": SET_SIZE_LABELS,
            "labelled_choices": LABELLED_CHOICES,
            "error_choices": ERROR_CHOICES,
            "search_stopped_after": search_stopped_after,
            "filter_error": filter_error,
        },
        status=400 if filter_error else 200,
    )


def rollout_query_error(project: Project, params: dict[str, str]) -> str:
    """Why the API would refuse these rollout filters, in its words (its query schema is
    the one home of their rules), or "". The form sends a filter left at "any" empty, and
    the page's paging parameters are no filters.

    Example: ``{"outcome": "bogus"}`` gives "outcome: Input should be 'success', 'failure'
    or 'unknown'".
    """
    given = {key: value for key, value in params.items() if value and key not in PAGING_PARAMS}
    try:
        RolloutQuery.model_validate(given).filters(project)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        field = field_name(first.get("loc", ()))
        return MSG_INVALID_FIELD.format(field=field, message=first.get("msg", "invalid value"))
    except ApiError as refused:
        return refused.message
    return ""


@dataclass(frozen=True)
class StepQuote:
    """A step of a listed rollout that says the searched text, as the list shows it."""

    index: int
    window: int  # the first step of the rollout page's window that holds it
    who: str
    snippet: Snippet


def _step_quotes(rows: list[Trajectory], text: str) -> dict[int, StepQuote]:
    """Each shown rollout's first step that says ``text``, by rollout id."""
    return {
        rollout_id: StepQuote(
            index=step.index,
            window=step.index - step.index % STEP_WINDOW,
            who=step.agent or step.role,
            snippet=step_snippet(step.content, step.tool_args, text),
        )
        for rollout_id, step in first_steps_saying(text, [row.pk for row in rows]).items()
    }


def _rollout_or_404(project: Project, pk: int) -> Trajectory:
    try:
        return rollout_for_project(project=project, pk=pk)
    except Trajectory.DoesNotExist:
        raise Http404("No such rollout.") from None


@project_view()
def rollout_detail(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    project = membership.project
    rollout = _rollout_or_404(project, pk)
    start_raw = request.GET.get("from", "0")
    start = int(start_raw) if start_raw.isdigit() else 0
    start = min(start - start % STEP_WINDOW, max(rollout.step_count - 1, 0))
    start = max(start - start % STEP_WINDOW, 0)
    # The text the rollouts list searched steps for, cleaned as the list cleans it.
    says = search_text(request.GET.get("says", ""))
    context = rollout_context(
        rollout=rollout, start=start, window=STEP_WINDOW, user=request.user, says=says
    )
    context.update(
        {
            "project": project,
            "membership": membership,
            "nav": "rollouts",
            "rollout": rollout,
            "outcomes": Outcome.ALL,
        }
    )
    return render(request, "dashboard/rollout_detail.html", context)


@project_view(write=True)
@require_POST
def rollout_outcome(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """Set a stored rollout's outcome by hand (a trace that arrived without one, or a
    verdict that changed); the refresh it queues attributes a rollout turning failed."""
    project = membership.project
    rollout = _rollout_or_404(project, pk)
    outcome = request.POST.get("outcome", "")
    try:  # stored in its own transaction; the refresh is queued once that commits
        change = rollout_outcome_change(rollout=rollout, outcome=outcome)
    except OutcomeError as error:
        messages.error(request, MSG_OUTCOME_INVALID.format(error=error))
    else:
        message = MSG_OUTCOME_SET if change.outcome_changed else MSG_OUTCOME_SAME
        messages.success(request, message.format(outcome=outcome))
    return redirect("dashboard:rollout_detail", slug=project.slug, pk=pk)


@project_view()
def rollout_compare(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """This rollout beside a successful one of the same task, aligned step by step."""
    project = membership.project
    rollout = _rollout_or_404(project, pk)
    other_id = _id_or_none(request.GET.get("with", ""))
    named = request.GET.get("with_rollout", "").strip()[:255]
    named_problem = ""
    if named:  # any rollout of the project, by the id the lists show
        found = project.trajectories.filter(external_id=named).values_list("pk", flat=True)
        other_id = found.first()
        # Said on the page, beside what it shows instead: a message at the top above
        # "No other rollout of this task was uploaded" read as if that were the problem.
        if other_id is None:
            named_problem = MSG_NO_ROLLOUT_NAMED.format(name=named[:200])
        elif other_id == rollout.pk:
            named_problem, other_id = MSG_NAMED_ITSELF.format(name=named[:200]), None
    context = compare_context(rollout=rollout, other_id=other_id)
    context.update(
        {
            "project": project,
            "membership": membership,
            "nav": "rollouts",
            "rollout": rollout,
            "named": named,
            "named_problem": named_problem,
        }
    )
    return render(request, "dashboard/rollout_compare.html", context)


@project_view()
def rollout_download(
    request: HttpRequest, membership: Membership, pk: int
) -> StreamingHttpResponse:
    project = membership.project
    rollouts = Trajectory.objects.filter(project=project, pk=pk)
    if not rollouts.exists():
        raise Http404("No such rollout.")
    return native_download(rollouts, filename=f"{project.slug}-{rollouts[0].external_id}")


@project_view()
def rollouts_download(
    request: HttpRequest, membership: Membership
) -> StreamingHttpResponse | HttpResponse:
    """Every rollout that the current filters select, as native JSONL."""
    project = membership.project
    filter_error = rollout_query_error(project, request.GET.dict())
    if filter_error:  # as the list refuses it: a cut search would download other rollouts
        return render(request, "400.html", {"message": filter_error}, status=400)
    filters = RolloutFilters.from_query(request.GET.dict())
    return native_download(
        rollouts_filtered(project=project, filters=filters), filename=f"{project.slug}-rollouts"
    )


@project_view(write_unsafe=True)
@require_http_methods(["GET", "POST"])
def uploads(request: HttpRequest, membership: Membership) -> HttpResponse:
    project = membership.project
    if request.method == "POST":
        wants_json = request.headers.get("Accept", "").startswith("application/json")
        files = request.FILES.getlist("files")
        results: list[dict[str, object]] = []
        too_large = False
        for upload_file in files:
            try:
                outcome = upload_submit(
                    project=project,
                    stream=upload_file,
                    original_name=upload_file.name or "",
                    user=request.user,
                    requested_format=request.POST.get("format", ""),
                    agent_system=request.POST.get("agent_system", ""),
                )
            except UploadRejected as exc:
                too_large = too_large or isinstance(exc, UploadTooLarge)
                results.append({"name": upload_file.name, "error": str(exc)})
                if not wants_json:
                    messages.error(request, str(exc))
                continue
            answer = upload_outcome_json(outcome, sent_name=upload_file.name or "")
            results.append(answer)
            if outcome.same_content and not wants_json:
                messages.info(request, str(answer["message"]))
        if wants_json:
            status = 202 if any("id" in r for r in results) else 413 if too_large else 400
            if not files:
                results.append({"error": "Choose at least one file."})
            return JsonResponse({"uploads": results}, status=status)
        if not files:
            messages.error(request, "Choose at least one file.")
        return redirect("dashboard:uploads", slug=project.slug)
    # The page once listed the newest 200 and said nothing of the rest: now it says how
    # many there are and pages back through the older ones.
    upload_page = Paginator(uploads_for_project(project=project), UPLOADS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    uploads = list(upload_page.object_list)
    # Two different files of one name ("runs.jsonl" of two days) read alike in the list:
    # each of them shows the start of its content's hash.
    names = Counter(upload.original_name for upload in uploads)
    for upload in uploads:
        upload.same_name = names[upload.original_name] > 1
        if upload.sha256 == STREAM_UPLOAD_SHA256:
            # Counted now: its stored counts wait for the sweep that closes the traces.
            upload.trajectory_count, upload.step_count = stream_upload_counts(project_id=project.pk)
    return render(
        request,
        "dashboard/uploads.html",
        {
            "project": project,
            "membership": membership,
            "nav": "uploads",
            "uploads": uploads,
            "upload_page": upload_page,
            "sweep_minutes": sweep_minutes(),
            "formats": _formats(),
            "agent_system_chars": AGENT_SYSTEM_CHARS,
            # The row that holds every rollout sent over OTLP: a stream, not a file.
            "stream_sha256": STREAM_UPLOAD_SHA256,
            # Span requests refused for good: live traces sent then may miss spans.
            "span_refusals": SpanRefusals.objects.filter(project=project).first(),
        },
    )


@project_view()
def upload_status(request: HttpRequest, membership: Membership, pk: int) -> JsonResponse:
    project = membership.project
    upload = Upload.objects.filter(project=project, pk=pk).select_related("project").first()
    if upload is None:
        raise Http404("No such upload.")
    return JsonResponse(upload_json(upload))


@project_view(write=True)
@require_POST
def upload_retry(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """Queue a failed upload again; its reason stays on the page until it runs."""
    upload = Upload.objects.filter(project=membership.project, pk=pk).first()
    if upload is None:
        raise Http404("No such upload.")
    try:
        retried = upload_retry_submit(upload=upload)
    except UploadNotRetryable as exc:
        messages.error(request, str(exc))
    else:
        if retried:
            messages.success(request, MSG_UPLOAD_RETRIED.format(name=upload.original_name))
        else:
            messages.error(request, MSG_NOT_FAILED)
    return redirect("dashboard:uploads", slug=membership.project.slug)


@project_view(write=True)
@require_POST
def refresh_retry(request: HttpRequest, membership: Membership) -> HttpResponse:
    """Run the project's analysis again after a failed refresh."""
    project_id = membership.project.pk
    transaction.on_commit(lambda: refresh_project_queue(project_id=project_id))
    messages.success(request, MSG_REFRESH_RETRIED)
    return redirect("dashboard:project_detail", slug=membership.project.slug)


@project_view(owner_unsafe=True)
@require_http_methods(["GET", "POST"])
def project_settings(request: HttpRequest, membership: Membership) -> HttpResponse:
    project = membership.project
    is_owner = membership.is_owner
    new_token = new_token_name = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "token":
            try:
                token_row, new_token = token_issue(
                    project=project, name=request.POST.get("name", ""), user=request.user
                )
            except TokenError as exc:
                messages.error(request, str(exc))
            else:
                new_token_name = token_row.name
        elif action == "revoke":
            token_pk = _id_or_none(request.POST.get("token", ""))
            revoked = project.api_tokens.filter(pk=token_pk).first() if token_pk else None
            if revoked is None:
                messages.error(request, MSG_NO_SUCH_TOKEN)
            else:
                token_revoke(token=revoked)
                messages.success(request, MSG_TOKEN_REVOKED.format(name=revoked.name))
            return redirect("dashboard:project_settings", slug=project.slug)
        elif action == "miscoverage":
            try:
                changed = project_miscoverage_set(
                    project=project, value=request.POST.get("miscoverage", "")
                )
            except ProjectError as exc:
                messages.error(request, str(exc))
            else:
                if changed:
                    project_id = project.pk
                    transaction.on_commit(lambda: refresh_project_queue(project_id=project_id))
                    messages.success(
                        request, MSG_MISCOVERAGE_SAVED.format(alpha=project.miscoverage)
                    )
            return redirect("dashboard:project_settings", slug=project.slug)
        elif action == "member":
            user = (
                get_user_model().objects.filter(username=request.POST.get("username", "")).first()
            )
            role = request.POST.get("role", Role.MEMBER)
            if user is None:
                messages.error(request, MSG_USER_NOT_FOUND)
            elif role not in Role.values:
                messages.error(request, "Unknown role.")
            else:
                try:
                    project_member_set(project=project, user=user, role=role)
                except ProjectError as exc:
                    messages.error(request, str(exc))
                else:
                    messages.success(request, f"{user.get_username()} is now {role}.")
            return redirect("dashboard:project_settings", slug=project.slug)
        elif action == "remove_member":
            user_pk = _id_or_none(request.POST.get("user", ""))
            user = get_user_model().objects.filter(pk=user_pk).first() if user_pk else None
            try:
                if user is None:
                    raise ProjectError(MSG_USER_NOT_FOUND)
                project_member_remove(project=project, user=user)
            except ProjectError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, MSG_MEMBER_REMOVED.format(user=user.get_username()))
                if user.pk == request.user.pk:  # they removed themselves: nothing to see here
                    return redirect("dashboard:project_list")
            return redirect("dashboard:project_settings", slug=project.slug)
    return render(
        request,
        "dashboard/project_settings.html",
        {
            "project": project,
            "membership": membership,
            "nav": "settings",
            "is_owner": is_owner,
            "new_token": new_token,
            "new_token_name": new_token_name,
            "tokens": project.api_tokens.select_related("created_by"),
            "members": project.memberships.select_related("user").order_by("user__username"),
            "roles": Role.choices,
            "confidence_percent": round(100 * (1 - project.miscoverage), 1),
            "min_miscoverage": MIN_MISCOVERAGE,
            "max_miscoverage": MAX_MISCOVERAGE,
            "api_url": request.build_absolute_uri(
                reverse("api_upload_create", kwargs={"slug": project.slug})
            ),
            # The exporter appends /v1/traces to the endpoint itself.
            "otlp_endpoint": request.build_absolute_uri("/").rstrip("/"),
        },
    )
