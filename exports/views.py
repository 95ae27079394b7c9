"""Export pages: the filter form and job list, live status, downloads, corrections."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from analysis.rollout_filters import project_facets
from exports import sources
from exports.core.filters import KINDS, FilterError, parse_filters, parse_kinds
from exports.files import export_file_names, file_response, zip_response
from exports.models import Correction, CorrectionKind, ExportJob
from exports.selectors import export_job, export_jobs
from exports.services import (
    CorrectionError,
    correction_delete,
    correction_save,
    export_create,
    export_retry,
)
from ingest.models import Trajectory
from projects.access import project_view
from projects.models import Membership, Project

MSG_VIEWERS_CANNOT_EXPORT = "Viewers cannot start exports."
MSG_VIEWERS_CANNOT_CORRECT = "Viewers cannot enter corrections."
MSG_EXPORT_QUEUED = "Export {pk} is queued; its progress shows below."
MSG_EXPORT_RETRIED = "Export {pk} is queued again."
MSG_EXPORT_NOT_FAILED = "Only a failed export can be retried."
MSG_CORRECTION_SAVED = "Correction saved for step {step}."
MSG_CORRECTION_DELETED = "Correction removed."
KIND_LABELS = {
    "sft": "Supervised recovery (OpenAI chat fine-tuning)",
    "preference": "Preference pairs",
    "diagnosis": "Diagnosis",
    "start_states": "Start states",
}
# What each file holds, in a line (docs/exports/README.md has the fields).
KIND_DESCRIPTIONS = {
    "sft": "the rollout up to the wrong step, then the corrected action (only it is learned)",
    "preference": "the same prefix, the corrected action chosen and the agent's own action rejected",
    "diagnosis": "a rollout in, its decisive step, agent and misbehaviour out",
    "start_states": "the prefix just before each misbehaviour first shows, to practise from",
}


def _user(request: HttpRequest) -> User | None:
    # Every view here is login_required: an anonymous user never gets this far.
    return request.user if isinstance(request.user, User) else None


def job_json(job: ExportJob, *, api_base: str = "") -> dict[str, Any]:
    """A job as the status view and the API show it; URLs relative unless a base is given."""
    slug = job.project.slug
    if api_base:
        files = {name: f"{api_base}{job.pk}/files/{name}" for name in export_file_names(job)}
        zip_url = f"{api_base}{job.pk}/export.zip"
        status_url = f"{api_base}{job.pk}"
    else:
        files = {
            name: reverse("exports:file", kwargs={"slug": slug, "pk": job.pk, "name": name})
            for name in export_file_names(job)
        }
        zip_url = reverse("exports:zip", kwargs={"slug": slug, "pk": job.pk})
        status_url = reverse("exports:status", kwargs={"slug": slug, "pk": job.pk})
    return {
        "id": job.pk,
        "status": job.status,
        "kinds": job.kinds,
        "filters": job.filters,
        "progress": {
            "done": job.progress_done,
            "total": job.progress_total,
            "percent": job.progress_percent,
        },
        "counts": job.counts,
        "error": job.error_message,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "files": files,
        "zip_url": zip_url if files else None,
        "status_url": status_url,
    }


def _context(membership: Membership, form: dict[str, Any], error: str = "") -> dict[str, Any]:
    project = membership.project
    jobs = list(export_jobs(project=project)[:50])
    return {
        "project": project,
        "membership": membership,
        "nav": "exports",
        "facets": project_facets(project=project),
        "misbehaviours": sources.misbehaviour_choices(project),
        "kinds": [(kind, KIND_LABELS[kind], KIND_DESCRIPTIONS[kind]) for kind in KINDS],
        "form": form,
        "form_error": error,
        "jobs": [(job, export_file_names(job)) for job in jobs],
    }


@project_view(write_unsafe=True, read_only_message=MSG_VIEWERS_CANNOT_EXPORT)
@require_http_methods(["GET", "POST"])
def exports_page(request: HttpRequest, membership: Membership) -> HttpResponse:
    project = membership.project
    if request.method == "POST":
        form = {
            **request.POST.dict(),
            "kinds": request.POST.getlist("kinds"),
            "misbehaviours": request.POST.getlist("misbehaviours"),
        }
        try:
            kinds = parse_kinds(form["kinds"])
            filters = parse_filters(form)
            job = export_create(project=project, kinds=kinds, filters=filters, user=_user(request))
        except FilterError as exc:
            return render(
                request,
                "exports/index.html",
                _context(membership, form, str(exc)),
                status=400,
            )
        messages.success(request, MSG_EXPORT_QUEUED.format(pk=job.pk))
        return redirect("exports:index", slug=project.slug)
    return render(request, "exports/index.html", _context(membership, {"kinds": list(KINDS)}))


@project_view(write=True, read_only_message=MSG_VIEWERS_CANNOT_EXPORT)
@require_POST
def export_retry_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """Queue a failed export again; it writes a fresh attempt folder."""
    job = export_job(project=membership.project, pk=pk)
    if job is None:
        raise Http404("No such export.")
    if export_retry(job=job):
        messages.success(request, MSG_EXPORT_RETRIED.format(pk=job.pk))
    else:
        messages.error(request, MSG_EXPORT_NOT_FAILED)
    return redirect("exports:index", slug=membership.project.slug)


@project_view()
@require_GET
def export_status(request: HttpRequest, membership: Membership, pk: int) -> JsonResponse:
    project = membership.project
    job = export_job(project=project, pk=pk)
    if job is None:
        raise Http404("No such export.")
    return JsonResponse(job_json(job))


@project_view()
@require_GET
def export_file(
    request: HttpRequest, membership: Membership, pk: int, name: str
) -> HttpResponseBase:
    project = membership.project
    job = export_job(project=project, pk=pk)
    if job is None:
        raise Http404("No such export.")
    return file_response(job, name)


@project_view()
@require_GET
def export_zip(request: HttpRequest, membership: Membership, pk: int) -> HttpResponseBase:
    project = membership.project
    job = export_job(project=project, pk=pk)
    if job is None:
        raise Http404("No such export.")
    return zip_response(job)


def _rollout(project: Project, pk: int) -> Trajectory:
    rollout = Trajectory.objects.filter(project=project, pk=pk).first()
    if rollout is None:
        raise Http404("No such rollout.")
    return rollout


def _back_to_step(project: Project, rollout: Trajectory, step: int | str) -> HttpResponse:
    url = reverse("dashboard:rollout_detail", kwargs={"slug": project.slug, "pk": rollout.pk})
    return redirect(f"{url}#step-{step}")


@project_view(write=True, read_only_message=MSG_VIEWERS_CANNOT_CORRECT)
@require_POST
def correction_save_view(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    """Save what the agent should have done at a step (the partial's form posts here)."""
    project = membership.project
    rollout = _rollout(project, pk)
    step_raw = request.POST.get("step_index", "")
    if not step_raw.isdigit():
        messages.error(request, "Choose the step to correct.")
        return _back_to_step(project, rollout, 0)
    try:
        correction_save(
            rollout=rollout,
            step_index=int(step_raw),
            kind=request.POST.get("kind", CorrectionKind.MESSAGE),
            author=_user(request),
            content=request.POST.get("content", ""),
            tool_name=request.POST.get("tool_name", ""),
            tool_args=request.POST.get("tool_args", ""),
        )
    except CorrectionError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, MSG_CORRECTION_SAVED.format(step=step_raw))
    return _back_to_step(project, rollout, step_raw)


@project_view(write=True, read_only_message=MSG_VIEWERS_CANNOT_CORRECT)
@require_POST
def correction_delete_view(
    request: HttpRequest, membership: Membership, pk: int, correction_pk: int
) -> HttpResponse:
    project = membership.project
    rollout = _rollout(project, pk)
    correction = Correction.objects.filter(trajectory=rollout, pk=correction_pk).first()
    if correction is None:
        raise Http404("No such correction.")
    step = correction.step_index
    correction_delete(correction=correction)
    messages.success(request, MSG_CORRECTION_DELETED)
    return _back_to_step(project, rollout, step)
