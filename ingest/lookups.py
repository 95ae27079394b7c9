"""A case-blind "holds this text" condition that PostgreSQL can plan from its statistics.

Django writes ``icontains`` as ``UPPER(col) LIKE UPPER(%s)`` on PostgreSQL. The planner
has no statistics for ``UPPER(col)``, so it guesses few matches and reads every step even
for a text that most rollouts hold (4.8 s at 1M steps in the pages benchmark, against
0.26 s with the condition below, which walks the rollouts in order and stops at the page's
end). ``ILIKE`` is estimated from the column's statistics and ignores case as ``UPPER``
did, characters beyond ASCII included. SQLite's ``LIKE`` ignores the case of ASCII letters
only ("café" did not find "CAFÉ"), so a text beyond ASCII is matched there by
:class:`FoldedHolds`, a function of Python's case folding that each SQLite connection gets
(``ingest.apps``): one Python call per step read, only for such a text.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Func, Lookup, Value


class HoldsText(Lookup):
    """``HoldsText(F("content"), "not enough")``: the column holds the text, any case; the
    text is matched literally (``%``, ``_`` and backslashes are escaped)."""

    lookup_name = "holds_text"
    prepare_rhs = False  # the text stays a plain value, escaped and wrapped below

    def get_db_prep_lookup(self, value: Any, connection: Any) -> tuple[str, list[str | int]]:
        return "%s", [f"%{connection.ops.prep_for_like_query(value)}%"]

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        operator = "ILIKE" if connection.vendor == "postgresql" else "LIKE"
        return f"{lhs} {operator} {rhs} ESCAPE '\\'", (*lhs_params, *rhs_params)


SQLITE_HOLDS_FOLDED = "faultline_holds_folded"


def holds_folded(haystack: str | None, needle: str, stored_json: int) -> bool:
    r"""Whether ``haystack`` holds ``needle`` (already case-folded), case folded. With
    ``stored_json`` the haystack is JSON as SQLite stores it, characters beyond ASCII
    escaped (``\u00c9``): read back and written with them as they are, as PostgreSQL's
    jsonb prints them, so the needle is the text written as a JSON string writes it.

        >>> holds_folded("Le CAFÉ est fermé", "café", 0)
        True
        >>> holds_folded('{"city": "Z\\u00dcRICH"}', "zürich", 1)
        True
        >>> holds_folded(None, "x", 0)
        False
    """
    if haystack is None:
        return False
    if stored_json:
        with contextlib.suppress(ValueError):
            haystack = json.dumps(json.loads(haystack), ensure_ascii=False)
    return needle in haystack.casefold()


class FoldedHolds(Func):
    """``FoldedHolds(F("content"), "café")``: the column holds the text, case folded
    (SQLite only; see the module's note). ``stored_json`` for a JSON column cast to text,
    with ``text`` written as a JSON string writes it."""

    function = SQLITE_HOLDS_FOLDED
    output_field = BooleanField()

    def __init__(self, expression: Any, text: str, *, stored_json: bool = False) -> None:
        super().__init__(expression, Value(text.casefold()), Value(int(stored_json)))


def needs_folding(text: str) -> bool:
    """Whether a case-blind match of ``text`` needs :class:`FoldedHolds`: on SQLite, for a
    text beyond ASCII."""
    return connection.vendor == "sqlite" and not text.isascii()
