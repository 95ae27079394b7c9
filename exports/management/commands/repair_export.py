"""Export repair datasets from the command line, in-process (no worker needed).

    manage.py repair_export --project demo --kinds sft,preference,diagnosis,start_states --out DIR \
        [--environment airline] [--policy-model gpt-4o] [--misbehaviours 3,5] [--alpha 0.1] \
        [--human-only] [--date-from 2026-01-01] [--date-to 2026-12-31] [--diagnosis-window 5]
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from exports.core.filters import KINDS, FilterError, parse_filters, parse_kinds
from exports.core.manifest import archive_names
from exports.models import ExportStatus
from exports.services import export_create, export_folder, export_run
from projects.models import Project

MSG_NO_PROJECT = "No project with slug {slug!r}. Projects: {known}."
MSG_OUT_IS_FILE = "--out {out} is a file; give a folder."


class Command(BaseCommand):
    help = (
        "Export repair datasets (JSONL per kind, their JSON Schemas and manifest.json) "
        "of a project into a folder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's slug")
        parser.add_argument(
            "--kinds", default=",".join(KINDS), help="comma-separated: " + ",".join(KINDS)
        )
        parser.add_argument("--out", required=True, help="folder to write the files into")
        parser.add_argument("--environment", default="")
        parser.add_argument("--policy-model", default="")
        parser.add_argument("--misbehaviours", default="", help="misbehaviour ids, comma-separated")
        parser.add_argument(
            "--alpha", default="", help="miscoverage of the prediction sets, e.g. 0.1"
        )
        parser.add_argument(
            "--human-only", action="store_true", help="only rollouts with a human label"
        )
        parser.add_argument("--date-from", default="", help="YYYY-MM-DD, ingestion date")
        parser.add_argument("--date-to", default="", help="YYYY-MM-DD, ingestion date, inclusive")
        parser.add_argument("--diagnosis-window", default="0", help="steps either side of the set")
        parser.add_argument(
            "--observation-chars",
            default="0",
            help="cut each tool result, user turn and system prompt to this many characters",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            known = (
                ", ".join(Project.objects.order_by("slug").values_list("slug", flat=True)) or "none"
            )
            raise CommandError(MSG_NO_PROJECT.format(slug=options["project"], known=known))
        try:
            kinds = parse_kinds(options["kinds"])
            filters = parse_filters(
                {
                    "environment": options["environment"],
                    "policy_model": options["policy_model"],
                    "misbehaviours": options["misbehaviours"],
                    "alpha": options["alpha"],
                    "human_only": options["human_only"],
                    "date_from": options["date_from"],
                    "date_to": options["date_to"],
                    "diagnosis_window": options["diagnosis_window"],
                    "observation_chars": options["observation_chars"],
                }
            )
        except FilterError as exc:
            raise CommandError(str(exc)) from None
        out = Path(options["out"])
        if out.exists() and not out.is_dir():
            raise CommandError(MSG_OUT_IS_FILE.format(out=out))
        try:
            job = export_create(project=project, kinds=kinds, filters=filters, dispatch=False)
        except FilterError as exc:
            raise CommandError(str(exc)) from None
        job = export_run(job_id=job.pk)
        if job.status != ExportStatus.DONE:
            raise CommandError(job.error_message or f"Export {job.pk} ended {job.status}.")
        out.mkdir(parents=True, exist_ok=True)
        source = export_folder(job)
        # Exactly what the manifest names (the JSONL files and their schemas), and itself.
        for name in archive_names(job.manifest):
            shutil.copyfile(source / name, out / name)
        for kind in kinds:
            self.stdout.write(f"{kind + '.jsonl':<22} {job.counts.get(kind, 0):>8} examples")
        self.stdout.write(
            f"{job.progress_done} rollouts considered; export {job.pk}; files in {out}"
        )
