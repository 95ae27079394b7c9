"""The rollouts page's paging: Next and Previous seek from the edge row of the page shown,
as the API's cursors do (dashboard/api/pagination.py), and a page number jumps.

A page by OFFSET made the database read and throw away every row before it (page 500 of a
50k-rollout project: 25,000 rows fetched whole, each with its label lookup). A seek reads
only the page: "the 50 rows after (value, id) in this order", on the indexes that end in
id (ingest's (project, id), (project, step_count, id), (project, reward, id)). A jump to
page N still counts past the earlier rows, but over ids alone, which PostgreSQL reads from
the index without the rows; the 50 rows are then fetched by id.

The URL carries ``after`` or ``before`` (a cursor, opaque) and ``page`` (the number shown,
and the page a link without a cursor jumps to). A cursor that is not one of ours for this
sort is ignored: the first page is shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q, QuerySet

from dashboard.api.errors import ApiError
from dashboard.api.pagination import Order, cursor_decode, cursor_encode
from ingest.models import Trajectory

PER_PAGE = 50


@dataclass
class RolloutPage:
    """One page of the list, and what its links need."""

    object_list: list[Trajectory]  # the name Django's paginator gives a page's rows
    number: int
    count: int
    count_cap: int | None
    has_previous: bool
    has_next: bool
    previous_cursor: str | None
    next_cursor: str | None
    per_page: int = PER_PAGE

    @property
    def is_capped(self) -> bool:
        return self.count_cap is not None and self.count > self.count_cap

    @property
    def num_pages(self) -> int | None:
        """Pages in all; None when the count was capped (more than the cap match)."""
        return None if self.is_capped else max(1, math.ceil(self.count / self.per_page))

    @property
    def previous_number(self) -> int:
        return max(1, self.number - 1)

    @property
    def next_number(self) -> int:
        return self.number + 1


def empty_page() -> RolloutPage:
    """A page with no rows (a search stopped before it finished)."""
    return RolloutPage(
        object_list=[],
        number=1,
        count=0,
        count_cap=None,
        has_previous=False,
        has_next=False,
        previous_cursor=None,
        next_cursor=None,
    )


def _seek(order: Order, value: Any, pk: int, *, forward: bool) -> Q:
    """Rows after (forward) or before (value, pk) in ``order``, which sorts empty values
    last in both directions and breaks ties by ascending id (``ordered``)."""
    if order.field == "id":
        return Q(id__lt=pk) if order.descending == forward else Q(id__gt=pk)
    field = order.field
    same = Q(**{field: value, "id__gt" if forward else "id__lt": pk})
    if value is None:  # among the empty values, which come last
        empty = Q(**{f"{field}__isnull": True})
        return empty & Q(id__gt=pk) if forward else ~empty | (empty & Q(id__lt=pk))
    beyond = Q(**{f"{field}__lt" if order.descending == forward else f"{field}__gt": value})
    if forward:
        return beyond | same | Q(**{f"{field}__isnull": True})
    return beyond | same


def _ordered(
    rows: QuerySet[Trajectory], order: Order, *, reverse: bool = False
) -> QuerySet[Trajectory]:
    """``rows`` in ``order`` (empty values last, ties by ascending id), or exactly reversed.

    A column that cannot be empty is sorted without a NULLS clause: PostgreSQL reads a
    btree backwards only as DESC NULLS FIRST, so "step_count DESC NULLS LAST" would sort
    the whole project instead of walking (project, step_count, id).
    """
    if order.field == "id":
        return rows.order_by("id" if order.descending == reverse else "-id")
    descending = order.descending != reverse
    expression = F(order.field)
    if getattr(Trajectory._meta.get_field(order.field), "null", True):
        nulls = {"nulls_first": True} if reverse else {"nulls_last": True}
        sort = expression.desc(**nulls) if descending else expression.asc(**nulls)
    else:
        sort = expression.desc() if descending else expression.asc()
    return rows.order_by(sort, "-id" if reverse else "id")


def _count(rows: QuerySet[Trajectory]) -> int:
    # Only the ids, unsorted: no ORDER BY and no per-row annotation inside the count.
    return rows.order_by().values("pk").count()


def _cursor(order: Order, raw: str) -> tuple[Any, int] | None:
    try:
        return cursor_decode(order, raw)
    except ApiError:
        return None


def _number(raw: str | None) -> int:
    return int(raw) if raw and raw.isdigit() and 0 < int(raw) < 10**9 else 1


def rollout_page(
    rollouts: QuerySet[Trajectory],
    *,
    order: Order,
    params: Mapping[str, str],
    count_cap: int | None = None,
    per_page: int = PER_PAGE,
) -> RolloutPage:
    """The page of ``rollouts`` that ``params`` (``after``, ``before``, ``page``) ask for,
    in ``order``; ``count_cap`` counts at most that many matches plus one."""
    # A capped count (a search) reads the first ids in the page's order: the one pass a
    # search over steps makes serves both the count and the pages within the cap.
    known_ids: list[int] = []
    if count_cap is not None:
        known_ids = list(_ordered(rollouts, order).values_list("id", flat=True)[: count_cap + 1])
        count = len(known_ids)
    else:
        count = _count(rollouts)
    number = _number(params.get("page"))
    rows: list[Trajectory] = []
    has_previous = has_next = False
    for key, forward in (("after", True), ("before", False)):
        cursor = _cursor(order, params[key]) if params.get(key) else None
        if cursor is None:
            continue
        sought = rollouts.filter(_seek(order, *cursor, forward=forward))
        sorted_rows = _ordered(sought, order, reverse=not forward)
        rows = list(sorted_rows[: per_page + 1])
        more = len(rows) > per_page
        rows = rows[:per_page]
        if forward:
            has_previous, has_next = True, more
        else:
            rows.reverse()
            has_previous, has_next = more, True
        break
    if not rows:  # no cursor, a stale one, or one past the end: jump to the page number
        last_page = max(1, math.ceil(count / per_page))
        number = min(number, last_page)
        offset = (number - 1) * per_page
        if offset == 0 and count_cap is None:
            rows = list(_ordered(rollouts, order)[: per_page + 1])
            ids = [row.pk for row in rows]
            rows = rows[:per_page]
        else:
            # The ids the capped count read hold this page and whether one follows when
            # they are every match or reach past its end; otherwise the offset walks ids.
            if count_cap is not None and (count <= count_cap or offset + per_page < count):
                ids = known_ids[offset : offset + per_page + 1]
            else:
                ids = list(
                    _ordered(rollouts, order).values_list("id", flat=True)[
                        offset : offset + per_page + 1
                    ]
                )
            # The page's rows are then read by id.
            rows = list(_ordered(rollouts.filter(id__in=ids[:per_page]), order))
        has_previous, has_next = offset > 0, len(ids) > per_page
    if not has_previous:
        number = 1
    return RolloutPage(
        object_list=rows,
        number=number,
        count=count,
        count_cap=count_cap,
        has_previous=has_previous and bool(rows),
        has_next=has_next and bool(rows),
        previous_cursor=cursor_encode(order, getattr(rows[0], order.field), rows[0].pk)
        if rows
        else None,
        next_cursor=cursor_encode(order, getattr(rows[-1], order.field), rows[-1].pk)
        if rows
        else None,
        per_page=per_page,
    )
