"""manage.py evaluate_attribution: the Who&When evaluation, written to docs/attribution.md."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from attribution.evaluation.experiments import SUBSETS
from attribution.evaluation.report import charts, render_markdown
from attribution.evaluation.run import run_evaluation

CHART_DIR = "attribution"
MSG_NO_DATA = "Who&When data not found at {path}; pass --data or set FAULTLINE_DEMO_DATA."


def _shared_data() -> Path:
    return Path(
        os.environ.get("FAULTLINE_DEMO_DATA") or Path(settings.BASE_DIR).parent / "shared" / "data"
    )


def _default_data() -> Path:
    return _shared_data() / "who_and_when" / "Who&When"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout.strip()


def _commit() -> str:
    """HEAD's short hash, marked when attribution code differs from it."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--", "attribution")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head} + uncommitted attribution changes" if dirty else head or "unknown"


class Command(BaseCommand):
    help = "Evaluate conformal attribution on Who&When and write docs/attribution.md with plots."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--data", type=Path, default=None, help="The Who&When folder.")
        parser.add_argument(
            "--splits", type=int, default=200, help="Random calibration/test splits."
        )
        parser.add_argument("--repeats", type=int, default=5, help="Repeats of grouped 5-fold CV.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--jobs", type=int, default=2, help="Processes (one per subset); results do not change."
        )
        parser.add_argument(
            "--subset", action="append", choices=SUBSETS, help="Only these subsets."
        )
        parser.add_argument(
            "--no-model-selection", action="store_true", help="Skip the grid table."
        )
        parser.add_argument(
            "--no-airline",
            action="store_true",
            help="Skip the tau-bench airline set (gold-action labels) and so the transfer table.",
        )
        parser.add_argument(
            "--render-only",
            action="store_true",
            help="Re-render the Markdown and charts from the last run's report.json; compute nothing.",
        )
        parser.add_argument(
            "--output", type=Path, default=None, help="Markdown path (default docs/attribution.md)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        output = options["output"] or Path(settings.BASE_DIR) / "docs" / "attribution.md"
        chart_dir = output.parent / CHART_DIR
        if options["render_only"]:
            report = json.loads((chart_dir / "report.json").read_text())
            self._write(report, output, chart_dir, write_json=False)
            return
        root = options["data"] or _default_data()
        if not root.is_dir():
            raise CommandError(MSG_NO_DATA.format(path=root))
        started = time.perf_counter()
        report = run_evaluation(
            root,
            subsets=options["subset"] or SUBSETS,
            airline=None if options["no_airline"] else _shared_data(),
            n_splits=options["splits"],
            n_repeats=options["repeats"],
            seed=options["seed"],
            compare=not options["no_model_selection"],
            jobs=options["jobs"],
        )
        arguments = [
            f"--splits {options['splits']}",
            f"--repeats {options['repeats']}",
            f"--seed {options['seed']}",
        ]
        arguments += [f"--subset {s}" for s in options["subset"] or []]
        if options["no_model_selection"]:
            arguments.append("--no-model-selection")
        if options["no_airline"]:
            arguments.append("--no-airline")
        report["meta"] = {
            "command": "python manage.py evaluate_attribution " + " ".join(arguments),
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": _commit(),
            "seconds": round(time.perf_counter() - started, 1),
            "cpus": os.cpu_count() or 1,
        }
        self._write(report, output, chart_dir, write_json=True)

    def _write(
        self, report: dict[str, Any], output: Path, chart_dir: Path, *, write_json: bool
    ) -> None:
        chart_dir.mkdir(parents=True, exist_ok=True)
        if write_json:
            (chart_dir / "report.json").write_text(
                json.dumps(report, indent=1, sort_keys=True) + "\n"
            )
        for name, svg in charts(report).items():
            (chart_dir / name).write_text(svg + "\n")
        output.write_text(render_markdown(report, CHART_DIR))
        self.stdout.write(
            f"Wrote {output} and {chart_dir}/ (run took {report['meta']['seconds']} s)."
        )
