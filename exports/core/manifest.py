"""manifest.json: what an export holds and how it was made, with a sha256 per file.

Example:
    >>> from exports.core.writer import FileDigest
    >>> m = build_manifest(job_id=1, project={"id": 1, "slug": "acme"}, kinds=["sft"],
    ...     filters={}, alpha=0.1, provenance={}, counts={"sft": 2}, skipped={"sft": {}},
    ...     files=[FileDigest("sft.jsonl", 2, 10, "ab" * 32)], rollouts=3,
    ...     created_at="2026-01-01T00:00:00+00:00")
    >>> m["files"][0]["schema"], m["counts"]["sft"]
    ('sft.schema.json', 2)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exports.core.filters import SCHEMA_FILES
from exports.core.writer import FileDigest

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 1


def build_manifest(
    *,
    job_id: int | None,
    project: Mapping[str, Any],
    kinds: Sequence[str],
    filters: Mapping[str, Any],
    alpha: float | None,
    provenance: Mapping[str, Any],
    counts: Mapping[str, int],
    skipped: Mapping[str, Mapping[str, int]],
    files: Sequence[FileDigest],
    rollouts: int,
    created_at: str,
    corrections: Mapping[str, int] | None = None,
    finished_at: str | None = None,
) -> dict[str, Any]:
    """``provenance`` holds ``calibration``, ``scorer`` and ``clustering_run`` (each or None)."""
    by_name = {digest.name: digest for digest in files}
    return {
        "format_version": FORMAT_VERSION,
        "job_id": job_id,
        "project": dict(project),
        "created_at": created_at,
        "finished_at": finished_at,
        "kinds": list(kinds),
        "filters": dict(filters),
        "alpha": alpha,
        "calibration": provenance.get("calibration"),
        "scorer": provenance.get("scorer"),
        "clustering_run": provenance.get("clustering_run"),
        "rollouts_considered": rollouts,
        "counts": {kind: int(counts.get(kind, 0)) for kind in kinds},
        "skipped": {kind: dict(skipped.get(kind, {})) for kind in kinds},
        "corrections_used": dict(corrections or {}),
        "files": [
            {
                "name": f"{kind}.jsonl",
                "kind": kind,
                "schema": SCHEMA_FILES[kind],
                "lines": by_name[f"{kind}.jsonl"].lines,
                "bytes": by_name[f"{kind}.jsonl"].bytes,
                "sha256": by_name[f"{kind}.jsonl"].sha256,
            }
            for kind in kinds
        ],
    }
