"""Reading JSON from byte streams without trusting them.

Every failure (bad UTF-8, bad syntax, absurd nesting, oversized documents) becomes a
TraceParseError that says where it happened.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

import ijson

from ingest.core.errors import TraceParseError

MSG_BAD_UTF8 = "The file is not valid UTF-8 (byte {offset})."
MSG_BAD_JSON = "Malformed JSON: {detail}."
MSG_TOO_DEEP = "JSON is nested too deeply (more than {limit} levels)."
MSG_TOO_LARGE = "The document is larger than the limit of {limit} bytes for this format."
MSG_EMPTY = "The file is empty."

MAX_DEPTH = 200


def _check_depth(value: Any, record: str, limit: int = MAX_DEPTH) -> None:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise TraceParseError(MSG_TOO_DEEP.format(limit=limit), record=record)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def decode_error_detail(exc: json.JSONDecodeError, *, record: str) -> str:
    """Where the decoder stopped, told inside the record: in a JSON Lines record
    (``line 2``) the decoder's "line 2 column 1" is not the file's line 2, so the place is
    the character of the line (or its end, when the line stops short); in a document, its
    line and column.

    Example:
        >>> line = '{"id": "r2", "steps": [{"role": "user"} {"role": "tool"}]}'
        >>> try:
        ...     json.loads(line)
        ... except json.JSONDecodeError as exc:
        ...     decode_error_detail(exc, record="line 2")
        "Expecting ',' delimiter at character 41 of the line"
        >>> try:
        ...     json.loads('{"id": "r2", "steps": [\\n')
        ... except json.JSONDecodeError as exc:
        ...     decode_error_detail(exc, record="line 2")
        'Expecting value at the end of the line: the record stops short'
    """
    # Some of json's messages end in "at" already ("Unterminated string starting at").
    at = "" if exc.msg.endswith(" at") else " at"
    if not record.startswith("line "):
        return f"{exc.msg}{at} line {exc.lineno} column {exc.colno}"
    if exc.pos >= len(exc.doc.rstrip()):
        return f"{exc.msg.removesuffix(' at')} at the end of the line: the record stops short"
    return f"{exc.msg}{at} character {exc.pos + 1} of the line"


def loads(data: bytes | str, *, record: str) -> Any:
    """Parse one JSON document held in memory (a line, a zip member, a small file)."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceParseError(MSG_BAD_UTF8.format(offset=exc.start), record=record) from None
    else:
        text = data
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceParseError(
            MSG_BAD_JSON.format(detail=decode_error_detail(exc, record=record)), record=record
        ) from None
    except RecursionError:
        raise TraceParseError(MSG_TOO_DEEP.format(limit=MAX_DEPTH), record=record) from None
    # The decoder itself stops runaway nesting with RecursionError; values that decoded
    # but nest past MAX_DEPTH are refused too, since storing them would recurse again.
    # Fewer brackets than the limit cannot nest past it, which skips the walk for most lines.
    if text.count("[") + text.count("{") > MAX_DEPTH:
        _check_depth(value, record)
    return value


def load_document(stream: IO[bytes], *, record: str, max_bytes: int) -> Any:
    """Read a whole (single-object) JSON document, refusing one larger than max_bytes."""
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TraceParseError(MSG_TOO_LARGE.format(limit=max_bytes), record=record)
    if not data.strip():
        raise TraceParseError(MSG_EMPTY, record=record)
    return loads(data, record=record)


def first_byte(stream: IO[bytes]) -> bytes:
    """The first byte that is not white space (b"" for a blank file), the stream left
    just before it, so a parser can tell a JSON list from an object and then read it."""
    byte = stream.read(1)
    while byte and byte.isspace():
        byte = stream.read(1)
    if byte:
        stream.seek(stream.tell() - 1)
    return byte


def iter_array_items(stream: IO[bytes], *, prefix: str = "item") -> Iterator[tuple[int, Any]]:
    """Stream the items of a top-level JSON array one at a time, with their index."""
    if prefix == "item":
        # ijson.items builds a dotted prefix for every event (O(depth) each), so 100,000
        # levels of nesting exhaust memory before the depth check; the prefix-free walk
        # in jsonstream refuses them after 200 levels.
        from ingest.core.jsonstream import iter_document

        for index, (_, _, item) in enumerate(iter_document(stream, stream_keys={""})):
            yield index, item
        return
    index = -1
    try:
        for index, item in enumerate(ijson.items(stream, prefix, use_float=True)):
            record = f"item {index}"
            _check_depth(item, record)
            yield index, item
    except ijson.IncompleteJSONError as exc:
        raise TraceParseError(
            MSG_BAD_JSON.format(detail=str(exc).strip() or "unexpected end of file"),
            record=f"item {index + 1}",
        ) from None
    except ijson.JSONError as exc:
        raise TraceParseError(
            MSG_BAD_JSON.format(detail=str(exc).strip()), record=f"item {index + 1}"
        ) from None
    except UnicodeDecodeError as exc:
        raise TraceParseError(
            MSG_BAD_UTF8.format(offset=exc.start), record=f"item {index + 1}"
        ) from None
    except RecursionError:
        raise TraceParseError(
            MSG_TOO_DEEP.format(limit=MAX_DEPTH), record=f"item {index + 1}"
        ) from None


def iter_lines(stream: IO[bytes], *, max_line_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line) for each non-blank line of a JSONL stream."""
    number = 0
    while True:
        line = stream.readline(max_line_bytes + 1)
        if not line:
            return
        number += 1
        if len(line) > max_line_bytes and not line.endswith(b"\n"):
            raise TraceParseError(
                MSG_TOO_LARGE.format(limit=max_line_bytes), record=f"line {number}"
            )
        if line.strip():
            yield number, line
