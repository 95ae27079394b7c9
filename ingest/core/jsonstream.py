"""Streaming one large JSON document: small top-level fields whole, one big array item by item.

``iter_document`` walks a document (or several concatenated documents, as a JSONL file of
OTLP exports is) with ijson and yields:

- ``("field", key, value)`` for each top-level key that is not streamed;
- ``("item", key, value)`` for each item of a streamed top-level array (key ``""`` streams
  a document that is itself an array).

Memory stays at one item at a time. Every item (and every non-streamed field) is limited
to ``max_item_bytes`` of input, counted while reading so a 1 GB string is refused after
reading ``max_item_bytes``, not after building it; the whole input may be limited too.

Example:
    >>> import io
    >>> list(iter_document(io.BytesIO(b'{"a": 1, "xs": [{"b": 2}, 3]}'), stream_keys={"xs"}))
    [('field', 'a', 1), ('item', 'xs', {'b': 2}), ('item', 'xs', 3)]
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import IO, Any

import ijson

from ingest.core.errors import TraceParseError
from ingest.core.jsonio import MAX_DEPTH, MSG_BAD_JSON, MSG_BAD_UTF8, MSG_EMPTY, MSG_TOO_DEEP
from ingest.core.validate import MSG_NOT_LIST

MSG_RECORD_TOO_LARGE = "The record is larger than the limit of {limit} bytes."
MSG_DOCUMENT_TOO_LARGE = "The document is larger than the limit of {limit} bytes for this format."
MSG_TOP_NOT_OBJECT = "Expected a JSON object at the top of the document."
MSG_TOP_NOT_ARRAY = "Expected a JSON list at the top of the document."

_START = {"start_map", "start_array"}
_END = {"end_map", "end_array"}
_CHUNK = 64 * 1024
_PYTHON_BACKEND = ijson.get_backend("python")


class _Where:
    """The record being read, for error messages."""

    def __init__(self) -> None:
        self.record = "document"
        self.field = ""


class CountingReader:
    """A byte stream that refuses to hand out more than the per-record or total limit."""

    def __init__(
        self, stream: IO[bytes], *, max_item_bytes: int, max_total_bytes: int, where: _Where
    ):
        self._stream = stream
        self._max_item = max_item_bytes
        self._max_total = max_total_bytes
        self._where = where
        self.position = 0
        self._mark = 0
        self.saw_content = False
        self.exceeded: TraceParseError | None = None

    def mark(self) -> None:
        self._mark = self.position

    def read(self, size: int = -1) -> bytes:
        # Past a limit, report end of input and remember why: raising here, inside ijson's
        # lexer, would leave its generator half-closed.
        if self.exceeded is not None:
            return b""
        data = self._stream.read(_CHUNK if size is None or size < 0 else min(size, _CHUNK))
        self.position += len(data)
        if not self.saw_content and data.strip():
            self.saw_content = True
        if self.position - self._mark > self._max_item:
            self.exceeded = TraceParseError(
                MSG_RECORD_TOO_LARGE.format(limit=self._max_item),
                record=self._where.record,
                field=self._where.field,
            )
            return b""
        if self.position > self._max_total:
            self.exceeded = TraceParseError(
                MSG_DOCUMENT_TOO_LARGE.format(limit=self._max_total), record=self._where.record
            )
            return b""
        return data


def _next(events: Iterator[tuple[str, Any]]) -> tuple[str, Any]:
    try:
        return next(events)
    except StopIteration:
        raise ijson.IncompleteJSONError("unexpected end of file") from None


def _build(event: str, value: Any, events: Iterator[tuple[str, Any]], where: _Where) -> Any:
    builder = ijson.ObjectBuilder()
    builder.event(event, value)
    level = 1 if event in _START else 0
    while level:
        event, value = _next(events)
        builder.event(event, value)
        if event in _START:
            level += 1
            if level > MAX_DEPTH:
                raise TraceParseError(
                    MSG_TOO_DEEP.format(limit=MAX_DEPTH), record=where.record, field=where.field
                )
        elif event in _END:
            level -= 1
    return builder.value


def _walk(
    events: Iterator[tuple[str, Any]], reader: CountingReader, stream_keys: set[str], where: _Where
) -> Iterator[tuple[str, str, Any]]:
    documents = 0
    for event, value in events:
        documents += 1
        where.record, where.field = ("document" if documents == 1 else f"document {documents}"), ""
        document = where.record
        if "" in stream_keys:
            if event != "start_array":
                raise TraceParseError(MSG_TOP_NOT_ARRAY, record=document)
            yield from _items("", events, reader, where)
            continue
        if event != "start_map":
            raise TraceParseError(MSG_TOP_NOT_OBJECT, record=document)
        while True:
            event, value = _next(events)
            if event == "end_map":
                break
            key = value
            event, value = _next(events)
            where.record, where.field = document, key
            reader.mark()
            if key in stream_keys:
                if event != "start_array":
                    raise TraceParseError(MSG_NOT_LIST, record=document, field=key)
                yield from _items(key, events, reader, where)
            else:
                yield ("field", key, _build(event, value, events, where))
            where.record, where.field = document, ""


def _items(
    key: str, events: Iterator[tuple[str, Any]], reader: CountingReader, where: _Where
) -> Iterator[tuple[str, str, Any]]:
    index = 0
    while True:
        reader.mark()
        where.record, where.field = (f"item {index}" if not key else f"{key}[{index}]"), ""
        event, value = _next(events)
        if event == "end_array":
            return
        yield ("item", key, _build(event, value, events, where))
        index += 1


def iter_document(
    stream: IO[bytes],
    *,
    stream_keys: set[str],
    max_item_bytes: int = 64 * 1024 * 1024,
    max_total_bytes: int = 2**63,
    multiple: bool = False,
    big_integers: bool = False,
) -> Iterator[tuple[str, str, Any]]:
    """Walk a JSON document, streaming the arrays named in ``stream_keys`` (see module doc).

    ``big_integers`` switches to ijson's pure-Python backend, which reads integers of any
    size (the C backend overflows past 64 bits, e.g. on 128-bit trace ids written as numbers).
    """
    where = _Where()
    reader = CountingReader(
        stream, max_item_bytes=max_item_bytes, max_total_bytes=max_total_bytes, where=where
    )
    seen_any = False
    events: Any = None
    try:
        backend = _PYTHON_BACKEND if big_integers else ijson
        # basic_parse, not parse: parse builds a dotted prefix per event, which costs
        # O(depth) each and exhausts memory on deeply nested input before any check runs.
        events = iter(backend.basic_parse(reader, use_float=True, multiple_values=multiple))
        for item in _walk(events, reader, stream_keys, where):
            seen_any = True
            yield item
        if reader.exceeded is not None:
            raise reader.exceeded
    except TraceParseError:
        raise
    except (ijson.JSONError, ValueError) as exc:
        if reader.exceeded is not None:
            raise reader.exceeded from None
        raw = exc.args[0] if exc.args else ""
        detail = (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)).strip()
        detail = detail.splitlines()[0] if detail else "unexpected end of file"
        if "utf" in detail.lower() or "unicode" in detail.lower():
            raise TraceParseError(
                MSG_BAD_UTF8.format(offset=reader.position), record=where.record, field=where.field
            ) from None
        if not seen_any and not reader.saw_content:
            raise TraceParseError(MSG_EMPTY, record="document") from None
        raise TraceParseError(
            MSG_BAD_JSON.format(detail=detail), record=where.record, field=where.field
        ) from None
    except UnicodeDecodeError as exc:
        raise TraceParseError(
            MSG_BAD_UTF8.format(offset=exc.start), record=where.record, field=where.field
        ) from None
    except RecursionError:
        raise TraceParseError(
            MSG_TOO_DEEP.format(limit=MAX_DEPTH), record=where.record, field=where.field
        ) from None
    finally:
        _close_quietly(events)


def _close_quietly(events: Any) -> None:
    """Close ijson's event generator now: the pure-Python backend raises while closing a
    half-read document, which would otherwise surface later as an unraisable exception."""
    close = getattr(events, "close", None)
    if close is None:
        return
    # The document already failed with a clear message; a second error here adds nothing.
    with contextlib.suppress(Exception):
        close()
