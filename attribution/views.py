"""Attribution pages: add or remove a human label (POST), the rollout page's attribution
panel on its own (for the page's script), the calibration page and its settings (POST,
owners), and the labelling queue. No logic here."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from attribution.calibration_settings import calibration_settings_save
from attribution.forms import DecisiveStepForm
from attribution.labels import human_label_add, human_label_delete
from attribution.selectors import attribution_panel, borrowing_waiting, calibration_overview
from attribution.system_selectors import labelling_queue_page
from ingest.models import Label, Trajectory
from projects.access import project_view
from projects.models import Membership

MSG_LABEL_SAVED = "Label saved: step {step}. The calibration will be refreshed with it."
MSG_LABEL_CHANGED = (
    "Your label moved from step {was} to step {step}. The calibration will be refreshed with it."
)
# Said after the saved message when the label names another agent than the step's.
MSG_LABEL_OTHER_AGENT = (
    " It names {agent} as the agent at fault, though step {step} is {step_agent}’s; to"
    " blame {step_agent}, save it again with the Agent field empty."
)
MSG_LABEL_DELETED = "Label of step {step} removed. The calibration will be refreshed without it."
MSG_LABEL_INVALID = "The label was not saved: {errors}"
MSG_SETTINGS_SAVED = "Calibration settings saved. The sets will be recalibrated with them."
MSG_BORROW_WAITS = (
    " Borrowing is not used now by {systems}: each has enough labels of its own, and the"
    " choice applies only while it has too few for the miscoverage."
)
MSG_SETTINGS_INVALID = "The calibration settings were not saved: {error}"
MSG_NO_PANEL = "This rollout has no attribution."
BORROW_PREFIX = "borrow:"
# The label views send the page to its #attribution panel: their messages are shown there,
# not at the top of the page, scrolled out of sight (templates/base.html skips them).
IN_PANEL = "in-panel"
# What labelling.js sends as ``next``: it swaps in the panel it is sent to, instead of the
# page reloading (which lost the focused step). Only this value; never a URL from the form.
NEXT_PANEL = "panel"


def _back(request: HttpRequest, slug: str, pk: int) -> str:
    """Where a label view sends the browser: the panel alone for the page's script, else
    the rollout page at its panel."""
    if request.POST.get("next") == NEXT_PANEL:
        return reverse("attribution:rollout_panel", args=[slug, pk])
    return reverse("dashboard:rollout_detail", args=[slug, pk]) + "#attribution"


@project_view()
@require_GET
def rollout_panel(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """The rollout page's attribution panel alone, rendered as on the page."""
    trajectory = get_object_or_404(Trajectory, project=membership.project, pk=pk)
    panel = attribution_panel(trajectory, user=request.user)
    if panel is None:
        raise Http404(MSG_NO_PANEL)
    return render(request, "attribution/_rollout_panel.html", {"panel": panel})


@project_view(write=True)
@require_POST
def label_add(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    project = membership.project
    trajectory = get_object_or_404(Trajectory, project=project, pk=pk)
    back = _back(request, project.slug, pk)
    form = DecisiveStepForm(request.POST, step_count=trajectory.step_count)
    if not form.is_valid():
        errors = "; ".join(str(e) for errs in form.errors.values() for e in errs)
        messages.error(request, MSG_LABEL_INVALID.format(errors=errors), extra_tags=IN_PANEL)
        return redirect(back)
    step = form.cleaned_data["step_index"]
    try:
        saved = human_label_add(
            trajectory=trajectory,
            step_index=step,
            agent=form.cleaned_data["agent"],
            reason=form.cleaned_data["reason"],
            author=request.user,
        )
    except ValueError as error:
        messages.error(request, MSG_LABEL_INVALID.format(errors=error), extra_tags=IN_PANEL)
        return redirect(back)
    if saved.moved_from is not None and saved.moved_from != step:
        text = MSG_LABEL_CHANGED.format(was=saved.moved_from, step=step)
    else:
        text = MSG_LABEL_SAVED.format(step=step)
    # An agent named beside another agent's step is kept, not refused or sent back for a
    # confirmation: the field starts empty (the step's own agent), so a name in it was
    # typed on purpose, a person may know the step's agent acted on another's error, and
    # the API, which a script calls, has no second round to confirm in. Never silently:
    # the answer warns with both names and the label lists both (attribution_panel).
    if saved.blames_another_agent:
        text += MSG_LABEL_OTHER_AGENT.format(
            agent=saved.label.agent, step=step, step_agent=saved.step_agent
        )
        messages.warning(request, text, extra_tags=IN_PANEL)
    else:
        messages.success(request, text, extra_tags=IN_PANEL)
    return redirect(back)


@project_view(write=True)
@require_POST
def label_delete(
    request: HttpRequest, membership: Membership, pk: int, label_pk: int
) -> HttpResponse:
    project = membership.project
    label = get_object_or_404(
        Label.objects.select_related("trajectory"),
        trajectory__project=project,
        trajectory_id=pk,
        pk=label_pk,
    )
    back = _back(request, project.slug, pk)
    try:
        human_label_delete(label=label, by=request.user, is_owner=membership.is_owner)
    except (ValueError, PermissionError) as error:
        messages.error(request, str(error), extra_tags=IN_PANEL)
        return redirect(back)
    messages.success(request, MSG_LABEL_DELETED.format(step=label.step_index), extra_tags=IN_PANEL)
    return redirect(back)


@project_view()
@require_GET
def calibration(request: HttpRequest, membership: Membership) -> HttpResponse:
    project = membership.project
    context = calibration_overview(project)
    context.update({"project": project, "membership": membership, "nav": "calibration"})
    return render(request, "attribution/calibration.html", context)


@project_view(owner_unsafe=True)
@require_POST
def calibration_settings(request: HttpRequest, membership: Membership) -> HttpResponse:
    project = membership.project
    borrow = {
        key[len(BORROW_PREFIX) :]: request.POST.get(key, "")
        for key in request.POST
        if key.startswith(BORROW_PREFIX)
    }
    try:
        calibration_settings_save(
            project=project,
            gold_actions_calibrate=request.POST.get("gold_actions_calibrate") == "on",
            borrow=borrow,
        )
    except ValueError as error:
        messages.error(request, MSG_SETTINGS_INVALID.format(error=error))
    else:
        waiting = borrowing_waiting(project)
        note = MSG_BORROW_WAITS.format(systems=", ".join(waiting)) if waiting else ""
        messages.success(request, MSG_SETTINGS_SAVED + note)
    return redirect(reverse("attribution:calibration", kwargs={"slug": project.slug}))


@project_view()
@require_GET
def labelling_queue(request: HttpRequest, membership: Membership) -> HttpResponse:
    project = membership.project
    context = labelling_queue_page(project)
    context.update({"project": project, "membership": membership, "nav": "labelling"})
    return render(request, "attribution/labelling_queue.html", context)
