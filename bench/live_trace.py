"""Long live traces benchmark: the assembly work of one trace that arrives a few spans per
request, as a slow agent's exporter sends it, against the same trace sent in one request.

A rollout is rebuilt from all of its trace's spans, so rebuilding on every request costs
the square of the trace's length; the receiver lets a trace of 200 spans or more wait
(ingest.core.otlp_trace.rebuild_wait) and schedules one rebuild per wait. Each size runs
three ways in the same process and database (SQLite, a fresh file): the baseline, the
whole trace in one request and one assembly; ``streamed``, 4 spans a request every 50 ms
with the rule on; ``every request``, the same stream with the rule off
(``FAULTLINE_OTLP_REBUILD_SECONDS_PER_SPAN=0``: the behaviour before it), skipped at the
largest size, where it would take minutes. The worker's queue is played in process: a
scheduled rebuild runs when due, between requests.

Reported per size and way: assembly CPU seconds and its ratio to the baseline, the number
of rebuilds, and the lag from a request's arrival to the first rebuild that shows its
spans (median and largest).
"""

from __future__ import annotations

import argparse
import heapq
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import benchmarks_section_write, machine, write_report  # noqa: E402

SIZES = (400, 1600, 3200)
QUICK_SIZES = (200, 800)
SPANS_PER_REQUEST = 4
GAP_SECONDS = 0.05
RULE_ENV = "FAULTLINE_OTLP_REBUILD_SECONDS_PER_SPAN"


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")
    os.environ["FAULTLINE_VAR_DIR"] = tempfile.mkdtemp(prefix="bench-live-")
    os.environ.pop("DATABASE_URL", None)
    os.environ["FAULTLINE_CACHE_URL"] = ""
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


class Stream:
    """One project's trace sent over requests, with the worker's queue played in process."""

    def __init__(self, slug: str, spans: list[Any]) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client

        from projects.services import project_create
        from projects.tokens import project_token_issue

        owner = get_user_model().objects.get_or_create(username="bench")[0]
        self.project = project_create(name=slug, owner=owner, slug=slug)
        self.token = project_token_issue(project=self.project)
        self.client = Client(HTTP_HOST="127.0.0.1")
        self.spans = spans
        self.queued: list[tuple[str, list[str], bool]] = []
        self.later: list[tuple[float, int, list[str]]] = []
        self.cpu = 0.0
        self.rebuilds = 0
        self.waiting: list[float] = []  # arrival times of requests no rebuild has shown yet
        self.lags: list[float] = []

    def send(self, spans: list[Any]) -> None:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        body = encode_spans(spans).SerializeToString()
        response = self.client.post(
            "/v1/traces",
            data=body,
            content_type="application/x-protobuf",
            HTTP_AUTHORIZATION=f"Bearer {self.token}",
        )
        assert response.status_code == 200, response.content
        self.waiting.append(time.monotonic())

    def assemble(self, trace_ids: list[str], *, scheduled: bool) -> None:
        from pipeline.live import live_traces_assemble_run

        began = time.monotonic()
        shown = [t for t in self.waiting if t <= began]
        cpu = time.process_time()
        done = live_traces_assemble_run(self.project.pk, trace_ids, scheduled=scheduled)
        self.cpu += time.process_time() - cpu
        if done:
            self.rebuilds += done
            finished = time.monotonic()
            self.lags += [finished - t for t in shown]
            self.waiting = self.waiting[len(shown) :]

    def run_due(self, until: float) -> None:
        """Run the scheduled rebuilds that fall due before ``until``, waiting for them."""
        while self.later and self.later[0][0] <= until:
            due, _, trace_ids = heapq.heappop(self.later)
            time.sleep(max(0.0, due - time.monotonic()))
            self.assemble(trace_ids, scheduled=True)
        if until != float("inf"):
            time.sleep(max(0.0, until - time.monotonic()))


def _measure(slug: str, spans: list[Any], *, per_request: int, gap: float) -> dict[str, Any]:
    import dashboard.otlp as receiver
    import pipeline.live as live

    stream = Stream(slug, spans)
    counter = iter(range(10**9))
    receiver.live_traces_assemble_dispatch = lambda _, ids: stream.queued.append(ids)  # type: ignore[assignment]
    live.live_traces_assemble_later = lambda _, ids, seconds: heapq.heappush(  # type: ignore[assignment]
        stream.later, (time.monotonic() + seconds, next(counter), ids)
    )
    started = time.monotonic()
    for k, first in enumerate(range(0, len(spans), per_request)):
        stream.run_due(started + k * gap)
        stream.send(spans[first : first + per_request])
        while stream.queued:
            stream.assemble(stream.queued.pop(0), scheduled=False)
    stream.run_due(float("inf"))
    from ingest.models import LiveTrace

    live_trace = LiveTrace.objects.get(project=stream.project)
    assert not live_trace.pending and live_trace.assembled_spans == len(spans)
    return {
        "spans": len(spans),
        "requests": -(-len(spans) // per_request),
        "seconds": round(time.monotonic() - started, 2),
        "assembly_cpu_s": round(stream.cpu, 3),
        "rebuilds": stream.rebuilds,
        "lag_median_s": round(statistics.median(stream.lags), 3),
        "lag_max_s": round(max(stream.lags), 3),
    }


def _trace(size: int, seed: int) -> list[Any]:
    import bench.otlp_client as client

    client.SPANS_PER_ROLLOUT = size
    return client.make_spans(seed, 1, 15)


def run(sizes: tuple[int, ...]) -> dict[str, Any]:
    _setup()
    rows = []
    for number, size in enumerate(sizes):
        spans = _trace(size, number)
        os.environ.pop(RULE_ENV, None)
        row: dict[str, Any] = {
            "size": size,
            "one_request": _measure(f"one-{size}", spans, per_request=len(spans), gap=0.0),
            "streamed": _measure(
                f"streamed-{size}", spans, per_request=SPANS_PER_REQUEST, gap=GAP_SECONDS
            ),
        }
        if size != sizes[-1]:
            os.environ[RULE_ENV] = "0"
            row["every_request"] = _measure(
                f"every-{size}", spans, per_request=SPANS_PER_REQUEST, gap=GAP_SECONDS
            )
            os.environ.pop(RULE_ENV, None)
        base = row["one_request"]["assembly_cpu_s"]
        for way in ("streamed", "every_request"):
            if way in row:
                row[way]["vs_one_request"] = round(row[way]["assembly_cpu_s"] / base, 2)
        rows.append(row)
        print(row, flush=True)
    return {"machine": machine(), "spans_per_request": SPANS_PER_REQUEST,
            "gap_s": GAP_SECONDS, "sizes": rows}  # fmt: skip


def section(report: dict[str, Any]) -> str:
    lines = [
        "## Long live traces",
        "",
        f"`python bench/live_trace.py` on {report['machine']['date']} (SQLite, in process; "
        f"{report['machine']['cpus']} CPUs). One trace sent {report['spans_per_request']} spans "
        f"a request every {int(report['gap_s'] * 1000)} ms; assembly CPU against the same trace "
        "sent in one request (the baseline, same run). `streamed` is the product (a trace of "
        "200 spans or more waits its spans x 2 ms between rebuilds); `every request` is the "
        "same stream with that rule off, as it was before. Lag: from a request's arrival to "
        "the rebuild that shows its spans.",
        "",
        "| spans | way | assembly CPU s | vs one request | rebuilds | lag median s | lag max s |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in report["sizes"]:
        for way, label in (("one_request", "one request"), ("streamed", "streamed"),
                           ("every_request", "every request")):  # fmt: skip
            if way not in row:
                continue
            r = row[way]
            ratio = r.get("vs_one_request", 1.0)
            lines.append(
                f"| {row['size']:,} | {label} | {r['assembly_cpu_s']:.2f} | {ratio:.2f}x | "
                f"{r['rebuilds']} | {r['lag_median_s']:.2f} | {r['lag_max_s']:.2f} |"
            )
    lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to try it out")
    args = parser.parse_args()
    report = run(QUICK_SIZES if args.quick else SIZES)
    path = write_report("live_trace", report)
    print(f"report: {path}")
    if not args.quick:
        print(f"section: {benchmarks_section_write('Long live traces', section(report))}")


if __name__ == "__main__":
    main()
