"""The JSON Schemas of the export formats (docs/exports/*.schema.json) and a validator.

Example:
    >>> schema_problems("manifest", {"format_version": 1})[:1]
    ["'job_id' is a required property"]
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from exports.core.filters import SCHEMA_FILES

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "docs" / "exports"
ALL_SCHEMAS = {**SCHEMA_FILES, "manifest": "manifest.schema.json"}


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


def schema_problems(kind: str, instance: Any) -> list[str]:
    """Every schema violation of ``instance`` as ``kind`` (sft, ..., manifest)."""
    errors = sorted(_validator(kind).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [
        (f"{'/'.join(str(p) for p in error.absolute_path)}: " if error.absolute_path else "")
        + error.message
        for error in errors
    ]
