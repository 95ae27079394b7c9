"""What we can tell about a tool call from its name alone.

Example:
    >>> is_mutating_tool("book_reservation"), is_mutating_tool("get_user_details")
    (True, False)
"""

from __future__ import annotations

import re

# Verbs that change the world's state. Matched on the first word of a snake_case or
# camelCase tool name, so "update_reservation_flights" and "cancelOrder" both count.
MUTATING_VERBS = frozenset(
    {
        "add",
        "apply",
        "book",
        "cancel",
        "change",
        "charge",
        "create",
        "delete",
        "edit",
        "exchange",
        "insert",
        "modify",
        "move",
        "pay",
        "post",
        "purchase",
        "put",
        "refund",
        "remove",
        "rename",
        "reset",
        "return",
        "send",
        "set",
        "submit",
        "transfer",
        "update",
        "upgrade",
        "upsert",
        "write",
    }
)
READ_ONLY_VERBS = frozenset(
    {
        "calculate",
        "check",
        "compute",
        "describe",
        "fetch",
        "find",
        "get",
        "list",
        "lookup",
        "query",
        "read",
        "search",
        "show",
        "think",
        "view",
    }
)
_FIRST_WORD = re.compile(r"[A-Za-z][a-z]*")


def is_mutating_tool(name: str) -> bool | None:
    """True for a state-changing tool, False for a read-only one, None when unsure."""
    match = _FIRST_WORD.match(name.strip())
    if not match:
        return None
    verb = match.group(0).lower()
    if verb in MUTATING_VERBS:
        return True
    if verb in READ_ONLY_VERBS:
        return False
    return None
