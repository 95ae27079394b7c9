"""MAST's 14 failure modes, shipped in analysis/data/mast.json and loaded as built-ins.

The repository's own file always works; when the shared MAST taxonomy file is present,
its definitions replace ours (``taxonomy_builtin_refresh``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAST_FILE = Path(__file__).resolve().parent / "data" / "mast.json"
SHARED_MAST = Path("mast_taxonomy") / "adamast" / "core" / "mast.json"


def shipped_modes() -> list[dict[str, str]]:
    """The 14 modes as {code, group, name, definition}, in order."""
    return list(json.loads(MAST_FILE.read_text(encoding="utf-8"))["modes"])


def shared_modes(data_dir: str | Path) -> list[dict[str, str]]:
    """The modes from the shared MAST file (``codes`` with id/name/description/category)."""
    path = Path(data_dir) / SHARED_MAST
    if not path.exists():
        return []
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return [
        {
            "code": str(code.get("id", "")),
            "group": str(code.get("category", "")),
            "name": str(code.get("name", "")),
            "definition": str(code.get("description", "")),
        }
        for code in raw.get("codes", [])
        if code.get("id") and code.get("name")
    ]


def upsert_builtins(category_model: Any, modes: list[dict[str, str]]) -> int:
    """Create or update the built-in categories; usable from a migration's historical model."""
    for position, mode in enumerate(modes):
        category_model.objects.update_or_create(
            project=None,
            code=mode["code"],
            defaults={
                "taxonomy": "mast",
                "group": mode["group"],
                "name": mode["name"],
                "definition": mode["definition"],
                "position": position,
            },
        )
    return len(modes)
