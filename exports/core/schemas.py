"""The JSON Schemas of the export formats (docs/exports/*.schema.json) and a validator.

Every export ships the schemas of its kinds and of its manifest beside its files, so a
consumer validates with the schemas the export was made with (:func:`write_schemas`).

Example:
    >>> schema_problems("manifest", {"format_version": 2})[:1]
    ["'job_id' is a required property"]
    >>> schema_names(["sft"])
    ['sft.schema.json', 'manifest.schema.json']
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from exports.core.filters import SCHEMA_FILES
from exports.core.writer import FileDigest, file_sha256

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "exports"
MANIFEST_SCHEMA = "manifest.schema.json"
ALL_SCHEMAS = {**SCHEMA_FILES, "manifest": MANIFEST_SCHEMA}


def schema_names(kinds: Iterable[str]) -> list[str]:
    """The schema files an export of ``kinds`` ships: one per kind, then the manifest's."""
    return [SCHEMA_FILES[kind] for kind in kinds] + [MANIFEST_SCHEMA]


def write_schemas(kinds: Iterable[str], folder: Path) -> list[FileDigest]:
    """Copy the schemas of ``kinds`` and of the manifest into ``folder``; their digests.

    Each is written under a temporary name and renamed, like the JSONL files.
    """
    digests = []
    for name in schema_names(kinds):
        data = (SCHEMA_DIR / name).read_bytes()
        target = Path(folder) / name
        partial = target.with_name(name + ".partial")
        partial.write_bytes(data)
        os.replace(partial, target)
        digests.append(FileDigest(name, data.count(b"\n"), len(data), file_sha256(target)))
    return digests


@cache
def load_schema(kind: str) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / ALL_SCHEMAS[kind]).read_text(encoding="utf-8"))


@cache
def _validator(kind: str) -> Any:
    # jsonschema is imported late: it is only needed when validating.
    from jsonschema import Draft202012Validator

    schema = load_schema(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


@cache
def _quick_validator(kind: str) -> Any:
    # jsonschema_rs (Rust) answers "valid or not" about fifteen times faster than
    # jsonschema: every exported line is checked before it is written (2 ms a line with
    # jsonschema alone, more than building the line).
    import jsonschema_rs

    return jsonschema_rs.validator_for(load_schema(kind), validate_formats=True)


def schema_problems(kind: str, instance: Any) -> list[str]:
    """Every schema violation of ``instance`` as ``kind`` (sft, ..., manifest); a valid
    one is told by the quick validator, the messages of an invalid one come from
    jsonschema."""
    if _quick_validator(kind).is_valid(instance):
        return []
    errors = sorted(_validator(kind).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [
        (f"{'/'.join(str(p) for p in error.absolute_path)}: " if error.absolute_path else "")
        + error.message
        for error in errors
    ]
