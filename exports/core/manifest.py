"""manifest.json: what an export holds and how it was made, with a sha256 per file.

The manifest names every file of the export and nothing else: the JSONL files (``files``)
and the JSON Schemas shipped beside them (``schemas``: one per kind, and the manifest's).
:func:`archive_names` reads that list back; the zip and the command line copy exactly it.

Example:
    >>> from exports.core.writer import FileDigest
    >>> m = build_manifest(job_id=1, project={"id": 1, "slug": "acme"}, kinds=["sft"],
    ...     filters={}, alpha=0.1, provenance={}, counts={"sft": 2}, skipped={"sft": {}},
    ...     files=[FileDigest("sft.jsonl", 2, 10, "ab" * 32)], rollouts=3,
    ...     schemas=[FileDigest("sft.schema.json", 9, 90, "cd" * 32),
    ...              FileDigest("manifest.schema.json", 9, 90, "ef" * 32)],
    ...     created_at="2026-01-01T00:00:00+00:00")
    >>> m["files"][0]["schema"], m["counts"]["sft"]
    ('sft.schema.json', 2)
    >>> archive_names(m)
    ['sft.jsonl', 'sft.schema.json', 'manifest.schema.json', 'manifest.json']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from exports.core.filters import SCHEMA_FILES
from exports.core.writer import FileDigest

MANIFEST_NAME = "manifest.json"
# 2: the schemas ship with the files and the manifest lists them (``schemas``).
FORMAT_VERSION = 2
MSG_SCHEMA_NOT_SHIPPED = "The manifest names schema {name}, which the export does not ship."


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
    schemas: Sequence[FileDigest],
    created_at: str,
    corrections: Mapping[str, int] | None = None,
    finished_at: str | None = None,
) -> dict[str, Any]:
    """``provenance`` holds ``calibration``, ``scorer`` and ``clustering_run`` (each or None);
    ``schemas`` the schema files written beside the JSONL files.

    Raises ``ValueError`` when a kind's schema is not among ``schemas``: a manifest never
    names a file the export does not hold.
    """
    by_name = {digest.name: digest for digest in files}
    shipped = {digest.name for digest in schemas}
    for kind in kinds:
        if SCHEMA_FILES[kind] not in shipped:
            raise ValueError(MSG_SCHEMA_NOT_SHIPPED.format(name=SCHEMA_FILES[kind]))
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
                "largest_line_bytes": by_name[f"{kind}.jsonl"].largest_line_bytes,
                "sha256": by_name[f"{kind}.jsonl"].sha256,
            }
            for kind in kinds
        ],
        "schemas": [
            {"name": digest.name, "bytes": digest.bytes, "sha256": digest.sha256}
            for digest in schemas
        ],
    }


def archive_names(manifest: Mapping[str, Any]) -> list[str]:
    """Every file an export holds, as its manifest lists them, then the manifest itself.

    A manifest from before format 2 lists no ``schemas``: those exports hold none.
    """
    names = [entry["name"] for entry in manifest.get("files", [])]
    names += [entry["name"] for entry in manifest.get("schemas", [])]
    return names + [MANIFEST_NAME]
