"""Create the demo user and project and queue the demo data (used by `make run`)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from pipeline.uploads import upload_submit
from projects.models import Project
from projects.services import project_create

DEMO_USER = "demo"
DEMO_SLUG = "demo"
DEMO_NAME = "Demo: Who&When and tau-bench airline"
# The overview's subtitle: no counts, the cards under it count. "184 failed runs ... and
# 200 rollouts" stood still while the cards counted the ingest, and was wrong once anything
# else was uploaded or deleted.
DEMO_DESCRIPTION = (
    "Failed multi-agent runs from Who&When, with their labelled decisive steps, "
    "and tau-bench airline rollouts, labelled by their gold actions."
)
OLD_DEMO_DESCRIPTION = (
    "184 failed multi-agent runs from Who&When (with labelled decisive steps) "
    "and 200 tau-bench airline rollouts."
)
DEMO_FILES = (
    "who_and_when/Who&When/Algorithm-Generated/*.json",
    "who_and_when/Who&When/Hand-Crafted/*.json",
    "tau_bench/historical_trajectories/gpt-4o-airline.json",
)


# Ctrl-C in `make run` reaches this command (it runs in the terminal's foreground): a
# traceback said nothing useful. Each file is queued in its own transaction, so what was
# queued stays queued and the next run queues the rest (the same file is stored once).
MSG_INTERRUPTED = (
    "Demo set-up interrupted after queueing {queued} demo file(s); "
    "the next 'make run' queues the rest."
)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def _numeric_name(path: Path) -> tuple[int, str]:
    return (int(path.stem) if path.stem.isdigit() else 1 << 30, path.name)


class Command(BaseCommand):
    help = "Create the demo login and project, and ingest the demo rollouts on first run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", default="../shared/data")
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args: Any, **options: Any) -> None:
        self.queued = 0
        try:
            self._setup(data=Path(options["data"]), url=options["url"])
        except KeyboardInterrupt:
            self.stderr.write(MSG_INTERRUPTED.format(queued=self.queued))
            raise SystemExit(EXIT_INTERRUPTED) from None

    def _setup(self, *, data: Path, url: str) -> None:
        password = self._user()
        user = get_user_model().objects.get(username=DEMO_USER)
        project = Project.objects.filter(slug=DEMO_SLUG).first()
        if project is None:
            project = project_create(
                name=DEMO_NAME,
                slug=DEMO_SLUG,
                owner=user,
                description=DEMO_DESCRIPTION,
            )
            # The airline rollouts have no hand label: their gold actions label them, and
            # the demo opts in to those labels calibrating (the calibration page says so).
            Project.objects.filter(pk=project.pk).update(gold_actions_calibrate=True)
        elif project.description == OLD_DEMO_DESCRIPTION:
            Project.objects.filter(pk=project.pk).update(description=DEMO_DESCRIPTION)
        queued = self._queue_demo_files(project, user, data)
        self.stdout.write("")
        self.stdout.write("=" * 64)
        self.stdout.write(f"  Faultline is starting on {url}")
        self.stdout.write(f"  Log in as  {DEMO_USER}  with password  {password}")
        if queued:
            self.stdout.write(
                f"  {queued} demo file(s) are being ingested: {url}p/{DEMO_SLUG}/uploads/"
            )
        self.stdout.write("=" * 64)
        self.stdout.write("")

    def _user(self) -> str:
        """The demo password: made on first run, kept in the var folder, printed every run."""
        credentials = Path(settings.VAR_DIR) / "demo-credentials.txt"
        users = get_user_model().objects
        user = users.filter(username=DEMO_USER).first()
        if user is not None and credentials.exists():
            return credentials.read_text().strip()
        password = secrets.token_urlsafe(9)
        if user is None:
            user = users.create_user(DEMO_USER, "demo@example.com", password)
        else:
            user.set_password(password)
            user.save(update_fields=["password"])
        credentials.write_text(password + "\n")
        credentials.chmod(0o600)
        return password

    def _queue_demo_files(self, project: Project, user: Any, data: Path) -> int:
        if not data.is_dir():
            self.stdout.write(
                f"No demo data at {data}: the demo project starts empty. "
                "Upload a trace log from its Uploads page."
            )
            return 0
        queued = 0
        for pattern in DEMO_FILES:
            for path in sorted(data.glob(pattern), key=_numeric_name):
                name = path.name
                if "Who&When" in pattern:
                    # 1.json exists in both subsets: name the upload after its subset.
                    name = f"{path.parent.name}-{path.name}"
                with path.open("rb") as stream:
                    outcome = upload_submit(
                        project=project, stream=stream, original_name=name, user=user
                    )
                queued += int(outcome.created)
                self.queued = queued
        return queued
