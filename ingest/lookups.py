"""A case-blind "holds this text" condition that PostgreSQL can plan from its statistics.

Django writes ``icontains`` as ``UPPER(col) LIKE UPPER(%s)`` on PostgreSQL. The planner
has no statistics for ``UPPER(col)``, so it guesses few matches and reads every step even
for a text that most rollouts hold (4.8 s at 1M steps in the pages benchmark, against
0.26 s with the condition below, which walks the rollouts in order and stops at the page's
end). ``ILIKE`` is estimated from the column's statistics and ignores case as ``UPPER``
did, characters beyond ASCII included. SQLite's ``LIKE`` ignores the case of ASCII letters,
as Django's ``icontains`` does there.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Lookup


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
