"""python manage.py export_rollouts --project SLUG [-o FILE] [--outcome ...]"""

from __future__ import annotations

from typing import IO, Any, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.rollout_filters import SEARCH_CHARS, RolloutFilters, rollouts_filtered
from ingest.core.native_writer import write_native_jsonl
from ingest.selectors import rollout_records
from projects.models import Project

MSG_TOO_LONG = "--{option}: at most {most} characters."


class Command(BaseCommand):
    help = "Write a project's rollouts as Faultline native JSONL (re-uploadable anywhere)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("-o", "--output", default="-", help="file to write; - for stdout")
        parser.add_argument("--outcome", default="", choices=["", "success", "failure", "unknown"])
        parser.add_argument("--environment", default="")
        parser.add_argument("--model", default="")
        parser.add_argument("--q", default="", help="text to search in the task")
        parser.add_argument(
            "--says", default="", help="only rollouts with a step that holds this text"
        )
        parser.add_argument("--tool", default="", help="only rollouts that call this tool")
        parser.add_argument(
            "--errors", default="", choices=["", "yes", "no"], help="with an error step, or without"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project '{options['project']}'.")
        for key in ("q", "says", "tool"):
            if len(options[key].strip()) > SEARCH_CHARS:
                # Cut silently, a search would answer for other text than the one asked.
                raise CommandError(MSG_TOO_LONG.format(option=key, most=SEARCH_CHARS))
        filters = RolloutFilters.from_query(
            {
                key: options[key]
                for key in ("outcome", "environment", "model", "q", "says", "tool", "errors")
            }
        )
        records = rollout_records(rollouts_filtered(project=project, filters=filters))
        if options["output"] == "-":
            count = write_native_jsonl(records, cast(IO[str], self.stdout))
        else:
            with open(options["output"], "w", encoding="ascii") as out:
                count = write_native_jsonl(records, out)
        self.stderr.write(f"Wrote {count} rollout(s).")
