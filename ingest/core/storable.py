"""Text as the databases can store it: the one rule for characters they refuse.

PostgreSQL's text and jsonb refuse the NUL character (U+0000), which untrusted trace content
can hold (a tool that read a binary file, an escaped ``\\u0000`` in a message); SQLite
keeps it. Neither driver can send a lone surrogate (an escaped ``\\ud800`` without its
pair, which JSON decoding lets through): it is not UTF-8 at all. So that a trace is
stored the same way on both, and never refused for its text, each of these becomes U+FFFD
(the replacement character) before it is written: in text columns and inside JSON values
and keys.
"""

from __future__ import annotations

import json
import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# How json.dumps (ASCII output, lower-case hex) writes a NUL and the start of any
# surrogate (a character outside the basic plane is written as a pair of them, so a match
# only means the value is walked).
_NUL_ESCAPE, _SURROGATE_ESCAPE = "\\u0000", "\\ud"


def _may_hold_unstorable(dumped: str) -> bool:
    return _NUL_ESCAPE in dumped or _SURROGATE_ESCAPE in dumped


def storable_text(text: str) -> str:
    """The text with every NUL and lone surrogate replaced.

    Example:
        >>> storable_text("a\\x00b"), storable_text("a\\ud800b"), storable_text("plain")
        ('a\\ufffdb', 'a\\ufffdb', 'plain')
    """
    if text.isascii():  # known without a scan; only a NUL can be there
        return text.replace("\x00", REPLACEMENT) if "\x00" in text else text
    return _UNSTORABLE.sub(REPLACEMENT, text) if _UNSTORABLE.search(text) else text


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_storable(item) for item in value]
    return value


def storable_value(value: Any) -> Any:
    """The value itself, or, when it holds a character the databases refuse, a copy with
    each one replaced (for writes through the ORM, which makes the JSON text itself).

    Example:
        >>> storable_value({"k": ["a\\x00"]}), storable_value({"k": 1})
        ({'k': ['a\\ufffd']}, {'k': 1})
    """
    return _storable(value) if _may_hold_unstorable(json.dumps(value)) else value


def storable_json(value: Any) -> str:
    """The JSON text of a value, characters the databases refuse replaced wherever they
    are (looked for in the text first: a value is walked only when it may hold one).

    Example:
        >>> storable_json({"k": "a\\x00"}), storable_json({"k": "\\\\u0000 as typed"})
        ('{"k": "a\\\\ufffd"}', '{"k": "\\\\\\\\u0000 as typed"}')
    """
    dumped = json.dumps(value)
    if _may_hold_unstorable(dumped):
        # Also matches a character outside the basic plane and text that spells an escape
        # (an escaped backslash, then "u0000"): walking the value tells them apart.
        dumped = json.dumps(_storable(value))
    return dumped
