"""Cursor (keyset) pagination: a page is "the rows after this one in this order", so a
page never repeats or skips a row when rows arrive between two requests (an offset would),
and the database seeks instead of counting past earlier pages.

A cursor is opaque to clients: base64url of ``[order, value, id]``, the order it was made
for and the sort value and id of the last row served. Ties in the sort value are broken by
id, and empty values (a rollout without a reward) come last in both directions.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db.models import F, Model, Q, QuerySet

from dashboard.api.errors import ApiError

MSG_BAD_CURSOR = "cursor: not a cursor this list gave out (or one made for another sort)."
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
# The largest id or integer a cursor may carry (SQLite's and PostgreSQL's bigint).
MAX_INT = 2**63 - 1

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class Order:
    """How a list is sorted: its name in cursors, the field, the direction, the field's type."""

    name: str
    field: str
    descending: bool = False
    kind: type = int


def cursor_encode(order: Order, value: Any, pk: int) -> str:
    """The cursor after a row.

    Example:
        >>> cursor_encode(Order("oldest", "id"), 7, 7)
        'WyJvbGRlc3QiLDcsN10'
    """
    raw = json.dumps([order.name, value, pk], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _valid_value(order: Order, value: Any) -> bool:
    if value is None:
        return order.field != "id"
    if order.kind is str:
        return isinstance(value, str) and "\x00" not in value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if order.kind is int:
        return isinstance(value, int) and abs(value) <= MAX_INT
    return abs(value) < float("inf")


def cursor_decode(order: Order, cursor: str) -> tuple[Any, int]:
    """The (value, id) a cursor points after; a 400 naming ``cursor`` when it is not one of
    ours for this order."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        name, value, pk = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, TypeError, binascii.Error, UnicodeError):
        raise ApiError(400, MSG_BAD_CURSOR, field="cursor") from None
    valid_pk = isinstance(pk, int) and not isinstance(pk, bool) and 0 <= pk <= MAX_INT
    if name != order.name or not valid_pk or not _valid_value(order, value):
        raise ApiError(400, MSG_BAD_CURSOR, field="cursor")
    return value, pk


def _after(order: Order, value: Any, pk: int) -> Q:
    if order.field == "id":
        return Q(id__lt=pk) if order.descending else Q(id__gt=pk)
    if value is None:
        return Q(**{f"{order.field}__isnull": True, "id__gt": pk})
    beyond = f"{order.field}__lt" if order.descending else f"{order.field}__gt"
    return (
        Q(**{beyond: value})
        | Q(**{order.field: value, "id__gt": pk})
        | Q(**{f"{order.field}__isnull": True})
    )


def ordered(queryset: QuerySet[M], order: Order) -> QuerySet[M]:
    if order.field == "id":
        return queryset.order_by("-id" if order.descending else "id")
    expression = F(order.field)
    sort = expression.desc(nulls_last=True) if order.descending else expression.asc(nulls_last=True)
    return queryset.order_by(sort, "id")


def keyset_page(
    queryset: QuerySet[M], *, order: Order, cursor: str | None, limit: int
) -> tuple[list[M], str | None]:
    """One page of ``queryset`` in ``order`` and the cursor of the next (None at the end)."""
    rows = ordered(queryset, order)
    if cursor:
        value, pk = cursor_decode(order, cursor)
        rows = rows.filter(_after(order, value, pk))
    page = list(rows[: limit + 1])
    if len(page) <= limit:
        return page, None
    page = page[:limit]
    last = page[-1]
    return page, cursor_encode(order, getattr(last, order.field), last.pk)
