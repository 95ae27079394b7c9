"""python manage.py ingest PATH... --project SLUG [--format F] [--sync]"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

from analysis.selectors import active_misbehaviours
from ingest.core.errors import TraceParseError
from ingest.models import Upload, UploadStatus
from ingest.parsers import HEAD_BYTES, detect_format, format_names
from ingest.parsers.sources import ARCHIVE_MAGICS, skip_bom
from ingest.progress import progress_read
from ingest.services import UploadRejected, upload_create, upload_ingest
from pipeline.models import RefreshStatus
from pipeline.overview_cards import overview_cards
from pipeline.refresh import refresh_project_run
from pipeline.uploads import upload_counted, upload_dispatch
from projects.models import Project
from projects.services import project_create

POLL_S = 0.2
MSG_STORED_QUEUED = (
    "{name}: stored as upload {pk}, queued. The task queue is unreachable; the sweeper sends "
    "it once the broker is back (or run this again with --sync to ingest it here)."
)

# The summary's words for the files kept as queued uploads (said after their number).
MSG_QUEUED_TOTAL = (
    "stored as queued uploads, not read yet: the sweeper sends them to a worker once the "
    "task queue answers"
)


class Command(BaseCommand):
    help = "Upload trace logs into a project through the same pipeline as the web and API."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", help="trace log files (or folders of them)")
        parser.add_argument("--project", required=True, help="project slug; created if missing")
        parser.add_argument(
            "--format",
            default="",
            choices=format_names(),
            metavar="FORMAT",
            help=f"one of {', '.join(format_names())}; detected from each file when omitted",
        )
        parser.add_argument(
            "--sync", action="store_true", help="run the ingest task in this process"
        )
        parser.add_argument(
            "--no-refresh",
            action="store_true",
            help="with --sync, skip attribution and clustering after the ingest",
        )
        parser.add_argument("--owner", default="", help="username to own a newly created project")
        parser.add_argument(
            "--agent-system",
            default="",
            help="the agent system of every rollout of these files, over what the files say "
            "(SWE-agent and OpenHands files name their framework)",
        )
        parser.add_argument(
            "--timeout", type=float, default=3600.0, help="seconds to wait for a worker"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = self._project(options["project"], options["owner"])
        files = self._files(options["paths"], options["format"])
        failures = already = queued = 0
        totals = [0, 0, 0]
        started = time.perf_counter()
        for path, shown in files:
            upload, created = self._one(project, path, shown, options)
            if upload.status == UploadStatus.FAILED:
                failures += 1
                where = f"{shown}: " if shown != path.name else ""  # the message names path.name
                self.stderr.write(self.style.ERROR(f"FAILED {where}{upload.error_message}"))
            elif not created:
                already += 1  # stored by an earlier upload: nothing new here
            elif upload.status == UploadStatus.QUEUED:
                queued += 1  # stored, not read yet: the broker is unreachable
            else:
                totals[0] += upload.trajectory_count
                totals[1] += upload.step_count
                totals[2] += upload.label_count
        new = len(files) - failures - already - queued
        self.stdout.write(
            f"Stored {_count(totals[0], 'trajectory', 'trajectories')}, "
            f"{_count(totals[1], 'step')}, {_count(totals[2], 'label')} "
            f"in project '{project.slug}' from {new} of {len(files)} file(s)"
            + (f"; {already} already uploaded before, stored nothing new" if already else "")
            + (f"; {queued} {MSG_QUEUED_TOTAL}" if queued else "")
            + "."
        )
        self.stdout.write(f"ingest seconds: {time.perf_counter() - started:.3f}")
        if options["sync"] and totals[0] and not options["no_refresh"]:
            self.stdout.write("Attributing failed rollouts and clustering wrong steps...")
            refresh = refresh_project_run(project.pk)
            if refresh is not None and refresh.status == RefreshStatus.FAILED:
                raise CommandError(
                    f"The rollouts are stored, but their analysis failed: {refresh.error_message}"
                )
            self._summary(project)
        if failures:
            raise CommandError(f"{failures} file(s) failed; nothing of them was stored.")

    def _project(self, slug: str, owner_name: str) -> Project:
        project = Project.objects.filter(slug=slug).first()
        if project is not None:
            return project
        users = get_user_model().objects
        owner = users.filter(username=owner_name).first() if owner_name else None
        owner = owner or users.filter(is_superuser=True).order_by("id").first()
        owner = owner or users.order_by("id").first()
        if owner is None:
            raise CommandError(
                "Create a user first (manage.py createsuperuser): a project needs an owner."
            )
        project = project_create(name=slug, slug=slug, owner=owner)
        self.stdout.write(f"Created project '{project.slug}' owned by {owner.get_username()}.")
        return project

    def _summary(self, project: Project) -> None:
        cards = overview_cards(project=project)
        misbehaviours = active_misbehaviours(project).count()
        self.stdout.write(
            f"Project '{project.slug}': {cards['rollouts']:,} rollouts, {cards['failed']:,} "
            f"failed, {cards['succeeded']:,} succeeded, {cards['labelled']:,} labelled "
            f"({cards['labelled_by_rule']:,} by a rule only); "
            f"{misbehaviours} misbehaviour{'' if misbehaviours == 1 else 's'}. "
            f"See {reverse('dashboard:project_detail', args=[project.slug])} in the dashboard."
        )

    def _files(self, paths: list[str], fmt: str) -> list[tuple[Path, str]]:
        """Each file to send and how the output names it. A folder's files are named by
        their path from the folder on (runs of one tool often share a file name), and those
        that are no trace of a known format (a README, a licence, an empty file) are
        skipped and listed, not failed: a file named on the command line is always sent."""
        files: list[tuple[Path, str]] = []
        skipped: list[str] = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                for found in sorted(p for p in path.rglob("*") if p.is_file()):
                    inside = found.relative_to(path)
                    shown = str(Path(path.resolve().name) / inside)
                    if any(part.startswith(".") for part in inside.parts):
                        continue  # .git, .DS_Store and the like
                    if fmt or _is_trace(found):
                        files.append((found, shown))
                    else:
                        skipped.append(shown)
            elif path.is_file():
                files.append((path, path.name))
            else:
                raise CommandError(f"{raw}: no such file or folder.")
        if skipped:
            listed = ", ".join(skipped[:10]) + (
                f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""
            )
            self.stdout.write(f"Skipped {len(skipped)} file(s) of no known trace format: {listed}.")
        if not files:
            raise CommandError("No trace files to send.")
        return files

    def _bar(self, name: str, done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else 0
        percent = int(100 * done / total) if total else 0
        if (name, percent) == getattr(self, "_last_bar", None):
            return  # redraw only when the percentage moves
        self._last_bar = (name, percent)
        self.stderr.write(
            f"\r{_tail(name, 40):<40} [{'#' * filled}{'.' * (width - filled)}] {percent:3d}%",
            ending="",
        )
        self.stderr.flush()

    def _one(
        self, project: Project, path: Path, shown: str, options: dict[str, Any]
    ) -> tuple[Upload, bool]:
        """The file's upload after its ingest, and whether this run stored it (False for a
        file uploaded before, whatever became of it)."""
        try:
            with path.open("rb") as stream:
                outcome = upload_create(
                    project=project,
                    stream=stream,
                    original_name=path.name,  # what detection reads
                    requested_format=options["format"],
                    dispatch=None if options["sync"] else upload_dispatch,
                    agent_system=options["agent_system"],
                )
        except UploadRejected as exc:
            raise CommandError(str(exc)) from None
        upload = outcome.upload
        if not outcome.created:
            self.stdout.write(f"{shown}: already uploaded as upload {upload.pk} ({upload.status}).")
            if upload.status in (UploadStatus.DONE, UploadStatus.FAILED):
                return upload, False
        if not options["sync"]:
            upload.refresh_from_db()
            if upload.status == UploadStatus.QUEUED and upload.dispatched_at is None:
                # The broker is down: the file is stored and the sweeper sends it later.
                self.stdout.write(MSG_STORED_QUEUED.format(name=shown, pk=upload.pk))
                return upload, outcome.created
        if options["sync"]:
            upload = upload_ingest(
                upload_id=upload.pk,
                on_progress=lambda d, t: self._bar(shown, d, t),
            )
            if upload.status == UploadStatus.DONE:
                upload_counted(upload=upload)  # the worker's task does the same
        else:
            upload = self._wait(upload, shown, options["timeout"])
        if upload.status == UploadStatus.DONE:
            self._bar(shown, 1, 1)
        self.stderr.write("")
        if upload.status == UploadStatus.DONE:
            self.stdout.write(
                f"{shown}: {upload.trajectory_count} trajectories, {upload.step_count} steps, "
                f"{upload.label_count} labels ({upload.detected_format})."
            )
            if upload.repeated_ids:
                verb = "has" if upload.repeated_ids == 1 else "have"
                self.stdout.write(
                    f"{shown}: {upload.repeated_ids} of its rollouts {verb} an id the project "
                    "already had; both copies are kept and both count."
                )
        return upload, outcome.created

    def _wait(self, upload: Upload, name: str, timeout: float) -> Upload:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            upload.refresh_from_db()
            if upload.status in (UploadStatus.DONE, UploadStatus.FAILED):
                return upload
            live = progress_read(upload_id=upload.pk)
            if live:
                self._bar(name, *live)
            time.sleep(POLL_S)
        raise CommandError(
            f"{name}: no worker finished the upload within {timeout:.0f} s; is a Celery worker running? "
            "(use --sync to ingest in this process)"
        )


def _tail(name: str, width: int) -> str:
    """The end of a long name, which tells files of one folder apart.

    >>> _tail("runs/a/very/long/path/model.traj", 16)
    '…path/model.traj'
    """
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def _is_trace(path: Path) -> bool:
    """Whether a file found in a folder looks like a trace of a known format, or is an
    archive (sent whatever it holds: its members are each read, and a damaged archive or
    member is an error naming it, not a file "of no known trace format")."""
    with path.open("rb") as stream:
        skip_bom(stream)
        head = stream.read(HEAD_BYTES)
    if head.startswith(ARCHIVE_MAGICS):
        return True
    try:
        detect_format(head, path.name)
    except TraceParseError:
        return False
    return True


def _count(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"
