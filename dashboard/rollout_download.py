"""Downloads of stored rollouts as native JSONL (page buttons and the API)."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils.text import slugify

from ingest.core.native_writer import trajectory_to_native
from ingest.models import Trajectory
from ingest.selectors import rollout_records


def native_lines(rollouts: QuerySet[Trajectory]) -> Iterator[bytes]:
    for record in rollout_records(rollouts):
        yield (json.dumps(trajectory_to_native(record), ensure_ascii=True) + "\n").encode("ascii")


def native_download(rollouts: QuerySet[Trajectory], *, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(native_lines(rollouts), content_type="application/x-ndjson")
    safe = slugify(filename) or "rollouts"
    response["Content-Disposition"] = f'attachment; filename="{safe}.jsonl"'
    return response
