"""python manage.py otlp_reassemble --project SLUG [--trace ID ...] [--sync]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.otlp.services import live_traces_reassemble
from pipeline.live import rollouts_assembled
from pipeline.refresh import refresh_project_queue, refresh_project_run
from projects.models import Project

REFRESH_REASON = "live rollouts rebuilt from their stored spans"


class Command(BaseCommand):
    help = (
        "Rebuild a project's live rollouts from the OTLP spans stored for them, as this "
        "version reads spans (after an upgrade: a rollout is otherwise rebuilt only when more "
        "of its spans arrive). Rollouts keep their ids, outcomes and labels; each label "
        "follows its step. Then the project's analysis is refreshed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument(
            "--trace",
            action="append",
            default=None,
            metavar="TRACE_ID",
            help="rebuild only this trace (32 hex digits); repeat for several",
        )
        parser.add_argument(
            "--sync", action="store_true", help="run the project's refresh in this process"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"--project {options['project']}: no project with this slug.")
        traces = options["trace"]
        if traces is not None:
            traces = [trace.strip().lower() for trace in traces]
            known = set(
                project.live_traces.filter(trace_id__in=traces).values_list("trace_id", flat=True)
            )
            missing = [trace for trace in traces if trace not in known]
            if missing:
                raise CommandError(
                    f"--trace {', '.join(missing)}: no spans of this trace were received "
                    f"in project '{project.slug}'."
                )
        done = live_traces_reassemble(
            project_id=project.pk, trace_ids=traces, on_assembled=rollouts_assembled
        )
        if not done.traces:
            self.stdout.write(
                f"Project '{project.slug}' has received no OTLP traces: nothing to rebuild."
            )
            return
        self.stdout.write(
            f"Rebuilt {done.rollouts} rollouts from the spans of {done.traces} traces in project "
            f"'{project.slug}': {done.steps_before} steps before, {done.steps_after} now; "
            f"{done.labels_moved} labels moved with their step."
        )
        if done.labels_unplaced:
            ids = ", ".join(str(pk) for pk in done.labels_unplaced)
            self.stdout.write(
                self.style.WARNING(
                    f"Rollouts {ids} have a label whose step the rebuild no longer has: the "
                    "label kept its index; check it on the rollout's page."
                )
            )
        for trace_id, why in done.failed:
            self.stderr.write(self.style.ERROR(f"trace {trace_id}: {why}"))
        if done.rollouts:
            self._refresh(project, sync=options["sync"])
        if done.failed:
            raise CommandError(f"{len(done.failed)} trace(s) could not be rebuilt (above).")

    def _refresh(self, project: Project, *, sync: bool) -> None:
        refresh_project_queue(
            project_id=project.pk, full=True, reason=REFRESH_REASON, dispatch=not sync
        )
        if sync:
            self.stdout.write("Attributing failed rollouts and clustering wrong steps...")
            refresh_project_run(project.pk)
        else:
            self.stdout.write(
                "The project's refresh is queued (a worker runs it; with the broker down, "
                "once it is back)."
            )
