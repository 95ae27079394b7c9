"""Pages of the analysis app. Views only read selectors and call services."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from analysis import charts, clustering, curation, selectors
from analysis.core.lift import FEW_ROLLOUTS
from analysis.core.mast import STRONG_SUPPORT
from analysis.forms import CategoryCreateForm, CategoryMapForm, MergeForm, RefreshForm, RenameForm
from analysis.models import Misbehaviour
from projects.access import project_view
from projects.models import Membership, Project
from projects.security import plotly_webgl_page

MSG_RENAMED = "Renamed."
MSG_MERGED = "Merged into “{name}”."
MSG_MERGE_TARGET = "Choose a misbehaviour to merge into."
MSG_RENAME_INVALID = "The name was not changed."
MSG_MAPPED = "Category saved."
MSG_CONFIRMED = "“{name}” is now filed under {category}."
MSG_CATEGORY_CREATED = "Category “{name}” created."
MSG_REFRESH_QUEUED = "Clustering of the wrong steps has been queued."
# What the taxonomy page's category form sends as ``back``: its answer returns there.
BACK_TAXONOMY = "taxonomy"
LOOSE_TEXT = (
    "Its steps share no behaviour signal, agent, tool, error or phrase: only the closeness "
    "of their wording grouped them, so its name describes a few of them, not all. Read its "
    "steps before acting on it, or merge or rename it."
)


def _page(membership: Membership, **extra: Any) -> tuple[Project, dict[str, Any]]:
    project = membership.project
    context = {
        "project": project,
        "membership": membership,
        "can_write": membership.can_write,
        "nav": "misbehaviours",
        "loose_text": LOOSE_TEXT,
        **extra,
    }
    return project, context


def _misbehaviour(project: Project, pk: int) -> Misbehaviour:
    try:
        return selectors.misbehaviour_for_project(project, pk)
    except Misbehaviour.DoesNotExist:
        raise Http404("No such misbehaviour.") from None


@project_view()
@require_GET
def misbehaviour_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    project, context = _page(membership)
    run = selectors.latest_run(project)
    context.update(
        misbehaviours=selectors.with_lift_marks(selectors.active_misbehaviours(project)),
        lengths=selectors.rollout_length_contrast(project),
        few_rollouts=FEW_ROLLOUTS,
        unclustered=selectors.unclustered_summary(project),
        run=run,
        full_run=selectors.last_full_run(project),
        run_status=selectors.run_status(run),
        refresh_form=RefreshForm(),
    )
    return render(request, "analysis/misbehaviour_list.html", context)


@project_view()
@require_GET
def misbehaviour_detail(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    project, context = _page(membership)
    misbehaviour = _misbehaviour(project, pk)
    if misbehaviour.merged_into_id:
        return redirect("analysis:misbehaviour_detail", project.slug, misbehaviour.merged_into_id)
    categories = selectors.categories_for_project(project)
    selectors.with_lift_marks([misbehaviour])
    context.update(
        misbehaviour=misbehaviour,
        # Why a lift is missing: nothing to compare with, or nothing contains it.
        has_successes=selectors.project_has_successes(project),
        adjusted_gap=selectors.adjusted_lift_gap(project, misbehaviour),
        crude_gap=selectors.crude_lift_gap(misbehaviour),
        signal_rows=selectors.signal_rows(misbehaviour),
        exemplars=selectors.exemplar_steps(misbehaviour),
        environment_figure=charts.spread_bar(
            misbehaviour.environments, title="Wrong steps per environment"
        ),
        model_figure=charts.spread_bar(
            misbehaviour.policy_models,
            title="Wrong steps per policy model (or agent system, where a rollout names no model)",
            colour="#2563eb",
        ),
        rename_form=RenameForm(initial={"name": misbehaviour.user_name}),
        merge_form=MergeForm(
            choices=[(m.pk, m.display_name) for m in selectors.merge_targets(misbehaviour)]
        ),
        map_form=CategoryMapForm(
            choices=[(c.pk, str(c)) for c in categories],
            # Uncategorised, the list starts at the suggestion, so choosing is one step
            # (nothing is saved until the user saves).
            initial={"category": misbehaviour.category_id or misbehaviour.suggested_category_id},
        ),
    )
    return render(request, "analysis/misbehaviour_detail.html", context)


@project_view()
@require_GET
@plotly_webgl_page  # the map is a WebGL scatter: plotly needs eval for it
def misbehaviour_map(request: HttpRequest, membership: Membership) -> HttpResponse:
    project, context = _page(membership)
    points = selectors.map_points(project)
    context.update(
        point_count=len(points),
        map_figure=charts.misbehaviour_map(points, title="Wrong steps, coloured by misbehaviour")
        if points
        else None,
    )
    return render(request, "analysis/misbehaviour_map.html", context)


@project_view()
@require_GET
def taxonomy(request: HttpRequest, membership: Membership) -> HttpResponse:
    project, context = _page(membership)
    choices = [(c.pk, str(c)) for c in selectors.categories_for_project(project)]
    context.update(
        groups=selectors.taxonomy_rows(project),
        # A strong suggestion is confirmed in one click; a weak one is offered as a
        # possibility, preselected in the category list the user saves from.
        suggestions=[
            {
                "misbehaviour": m,
                "choose_form": None
                if m.suggestion_is_strong
                else CategoryMapForm(
                    choices=choices,
                    initial={"category": m.suggested_category_id},
                    auto_id=f"suggestion-{m.pk}-%s",
                ),
            }
            for m in selectors.category_suggestions(project)
        ],
        strong_percent=round(100 * STRONG_SUPPORT),
        back_taxonomy=BACK_TAXONOMY,
        category_form=CategoryCreateForm(),
    )
    return render(request, "analysis/taxonomy.html", context)


@project_view()
@require_GET
def run_status(request: HttpRequest, membership: Membership) -> JsonResponse:
    return JsonResponse(selectors.run_status(selectors.latest_run(membership.project)))


@project_view(write=True)
@require_POST
def refresh(request: HttpRequest, membership: Membership) -> HttpResponse:
    project, slug = membership.project, membership.project.slug
    form = RefreshForm(request.POST)
    full = form.is_valid() and form.cleaned_data["full"]
    clustering.misbehaviours_refresh_request(project=project, force_full=bool(full))
    messages.success(request, MSG_REFRESH_QUEUED)
    return redirect("analysis:misbehaviour_list", slug)


@project_view(write=True)
@require_POST
def misbehaviour_rename(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    project, slug = membership.project, membership.project.slug
    misbehaviour = _misbehaviour(project, pk)
    form = RenameForm(request.POST)
    if not form.is_valid():  # too long (past the field's maxlength, from outside a browser)
        messages.error(
            request, " ".join(str(e) for e in form.errors.get("name", [MSG_RENAME_INVALID]))
        )
        return redirect("analysis:misbehaviour_detail", slug, pk)
    try:
        curation.misbehaviour_rename(misbehaviour=misbehaviour, name=form.cleaned_data["name"])
    except ValueError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, MSG_RENAMED)
    return redirect("analysis:misbehaviour_detail", slug, pk)


@project_view(write=True)
@require_POST
def misbehaviour_merge(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    project, slug = membership.project, membership.project.slug
    misbehaviour = _misbehaviour(project, pk)
    choices = [(m.pk, m.display_name) for m in selectors.merge_targets(misbehaviour)]
    form = MergeForm(request.POST, choices=choices)
    if not form.is_valid():
        messages.error(request, MSG_MERGE_TARGET)
        return redirect("analysis:misbehaviour_detail", slug, pk)
    target = _misbehaviour(project, form.cleaned_data["target"])
    try:
        if not form.cleaned_data["confirm"]:
            # A merge cannot be undone: the first POST only says what it would do.
            plan = curation.misbehaviour_merge_plan(source=misbehaviour, target=target)
            _, context = _page(membership, plan=plan, chosen=target)
            return render(request, "analysis/misbehaviour_merge_confirm.html", context)
        merged = curation.misbehaviour_merge(source=misbehaviour, target=target)
    except ValueError as error:
        messages.error(request, str(error))
        return redirect("analysis:misbehaviour_detail", slug, pk)
    messages.success(request, MSG_MERGED.format(name=merged.display_name))
    return redirect("analysis:misbehaviour_detail", slug, merged.pk)


@project_view(write=True)
@require_POST
def misbehaviour_categorise(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    project, slug = membership.project, membership.project.slug
    misbehaviour = _misbehaviour(project, pk)
    choices = [(c.pk, str(c)) for c in selectors.categories_for_project(project)]
    form = CategoryMapForm(request.POST, choices=choices)
    if not form.is_valid():
        messages.error(request, curation.MSG_NO_SUCH_CATEGORY)
        return redirect("analysis:misbehaviour_detail", slug, pk)
    try:
        curation.misbehaviour_categorise(
            misbehaviour=misbehaviour, category_id=form.cleaned_data["category"]
        )
    except ValueError as error:
        messages.error(request, str(error))
        return redirect("analysis:misbehaviour_detail", slug, pk)
    if request.POST.get("back") != BACK_TAXONOMY:
        messages.success(request, MSG_MAPPED)
        return redirect("analysis:misbehaviour_detail", slug, pk)
    # From the taxonomy page's suggestions, where one message must say which row it was.
    if misbehaviour.category is None:
        messages.success(request, MSG_MAPPED)
    else:
        messages.success(
            request,
            MSG_CONFIRMED.format(name=misbehaviour.display_name, category=misbehaviour.category),
        )
    return redirect(reverse("analysis:taxonomy", args=[slug]) + "#suggestions")


@project_view(write=True)
@require_POST
def misbehaviour_confirm(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """Accept a misbehaviour's suggested category in one click (from the taxonomy page)."""
    project, slug = membership.project, membership.project.slug
    misbehaviour = _misbehaviour(project, pk)
    try:
        curation.misbehaviour_confirm_suggestion(misbehaviour=misbehaviour)
    except ValueError as error:
        messages.error(request, str(error))
    else:
        category = misbehaviour.suggested_category
        messages.success(
            request, MSG_CONFIRMED.format(name=misbehaviour.display_name, category=category)
        )
    return redirect("analysis:taxonomy", slug)


@project_view(write=True)
@require_POST
def category_create(request: HttpRequest, membership: Membership) -> HttpResponse:
    project, slug = membership.project, membership.project.slug
    form = CategoryCreateForm(request.POST)
    if form.is_valid():
        try:
            category = curation.category_create(project=project, **form.cleaned_data)
        except ValueError as error:
            messages.error(request, str(error))
        else:
            messages.success(request, MSG_CATEGORY_CREATED.format(name=category.name))
    else:
        messages.error(request, curation.MSG_CATEGORY_NAME)
    return redirect("analysis:taxonomy", slug)
