"""The keys of the first record in the start of a JSON file, whatever their values.

Format detection looks at the first 64 KiB of a file, which may end inside a record, so
``json.loads`` cannot be used on it. A tokenizer over strings and brackets can: it reads
the keys of the first object (a JSON Lines line or a document ``{...}``) or of the first
object inside a top-level list (``[{...}, ...]``), and stops where that object closes or
where the head ends. A key that is itself cut off by the end of the head is not counted.
"""

from __future__ import annotations

import json
import re

# A complete JSON string (escapes included) or one structural character; everything else
# (numbers, literals, white space, commas) does not matter for the keys.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}:]')


def _key_text(token: bytes) -> str | None:
    try:
        text = json.loads(token)
    except ValueError:  # bad UTF-8 or a bad escape: not a key we could recognise anyway
        return None
    return text if isinstance(text, str) else None


def first_record_keys(head: bytes) -> frozenset[str]:
    """The keys of the file's first record, read even from a head cut short.

    Example:
        >>> sorted(first_record_keys(b'{"id": "x", "steps": "nope"}'))
        ['id', 'steps']
        >>> sorted(first_record_keys(b'[{"id": 1, "meta": {"deep": 2}}, {"other": 3}]'))
        ['id', 'meta']
        >>> sorted(first_record_keys(b'{"steps": [{"role": "user", "content": "cut sho'))
        ['steps']
    """
    text = head.lstrip()
    opening = text[:1]
    if opening == b"{":
        depth = 1
    elif opening == b"[":
        depth = 2
    else:
        return frozenset()
    keys: set[str] = set()
    stack: list[bytes] = []
    candidate: bytes | None = None
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in (b"{", b"["):
            if depth == 2 and len(stack) == 1 and token != b"{":
                return frozenset()  # a list of lists: no record to read
            stack.append(token)
            candidate = None
        elif token in (b"}", b"]"):
            if not stack:
                break
            stack.pop()
            candidate = None
            if len(stack) < depth:
                break  # the first record closed
        elif token == b":":
            if candidate is not None and len(stack) == depth and stack[-1] == b"{":
                key = _key_text(candidate)
                if key is not None:
                    keys.add(key)
            candidate = None
        else:
            candidate = token
    return frozenset(keys)
