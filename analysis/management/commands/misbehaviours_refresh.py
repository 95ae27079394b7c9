"""Cluster (or assign) a project's wrong steps now, in this process, and print a summary."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.clustering import project_misbehaviours_refresh
from analysis.curation import taxonomy_builtin_refresh
from analysis.models import ClusteringRun
from analysis.selectors import active_misbehaviours
from projects.models import Project


class Command(BaseCommand):
    help = "Cluster a project's wrong steps into misbehaviours (or assign new steps)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--full", action="store_true", help="re-cluster from scratch")
        parser.add_argument(
            "--all-failed-steps",
            action="store_true",
            help="cluster every agent action of failed rollouts, not only the wrong steps",
        )
        parser.add_argument(
            "--mast-from", default="", help="load MAST definitions from this shared data folder"
        )

    def handle(self, *args: object, **options: object) -> None:
        project = Project.objects.filter(slug=options["slug"]).first()
        if project is None:
            raise CommandError(f"No project with slug {options['slug']!r}.")
        if options["mast_from"]:
            taxonomy_builtin_refresh(data_dir=str(options["mast_from"]))
        project_misbehaviours_refresh(
            project_id=project.pk,
            force_full=bool(options["full"]),
            all_failed_steps=bool(options["all_failed_steps"]) or None,
        )
        run = ClusteringRun.objects.filter(project=project).order_by("-id").first()
        assert run is not None
        self.stdout.write(
            f"{run.get_kind_display()} with {run.backend or '-'} embeddings: "
            f"{run.wrong_step_count} wrong steps, "
            f"{active_misbehaviours(project).count()} misbehaviours"
        )
        metrics = run.metrics or {}
        shown = ("noise_share", "top8_share", "silhouette", "dbcv", "capped")
        self.stdout.write("  " + ", ".join(f"{key}={_fmt(metrics.get(key))}" for key in shown))
        self.stdout.write("  share  failure lift (crude / length-adjusted)  name")
        for misbehaviour in active_misbehaviours(project)[:12]:
            crude, adjusted = _lift(misbehaviour.lift_unadjusted), _lift(misbehaviour.lift_adjusted)
            self.stdout.write(
                f"  {100 * misbehaviour.share:5.1f}%  {crude:>5} / {adjusted:<5}  "
                f"{misbehaviour.display_name}"
            )


def _lift(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)
