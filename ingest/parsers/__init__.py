"""One module per trace format, all yielding ingest.core.records.TrajectoryRecord.

``PARSERS`` lists them in detection order: the most specific sniffers first.
Why this order:
- native first: its lines carry the ``faultline.trajectory.v1`` tag or ``id`` + ``steps``;
- the span formats next, each keyed on its own wire names (``resourceSpans``; a top-level
  ``spans`` list with ``span_id``; ``span_kind`` + ``span_id`` on the first line);
- langfuse after them and before every format that looks for chat messages: its traces
  hold ``messages`` with ``role`` (OpenAI chat's signature when the file is one line) and
  may hold a ``history`` or ``trajectory`` list, so it must come before those; its own
  signature (an ``observations`` list next to Langfuse's ``parentObservationId`` or
  ``htmlPath``, or ``traceId`` + ``startTime``) is in no other format's files, so it
  takes none of theirs. A one-line Langfuse file longer than the head whose first 64 KiB
  hold ``"id"`` and ``"steps"`` is taken for native: name the format for such a file;
- langsmith right after it, for the same reason: its llm runs hold ``messages`` with
  ``role`` and its chain runs any state (``history``, ``trajectory``...); its signature
  (``run_type`` next to ``inputs``/``outputs`` and ``dotted_order``, ``trace_id`` or
  ``parent_run_id``) is in no other format's files, and runs carry none of the keys the
  formats before it look for, except as native does on a JSONL first line longer than the
  head that holds ``"steps"`` (a chain's state): name the format for such a file;
- inspect_ai (``eval`` + ``samples``/``plan``/``results`` + ``version``, or a zip) before
  anything looking for chat messages, since its samples hold ``messages`` too;
- swe_agent before who_and_when: a ``.traj`` has a ``history`` of role/content messages,
  which is Who&When's signature;
- openhands (a list of events with ``source`` and ``action``/``observation``) and
  tau_bench (a list with ``traj``) are both top-level lists with distinct keys;
- openai_chat last: any JSONL whose first line has ``messages`` with ``role``.

When none matches, a first line with the native record's keys (``steps`` and ``id``,
``outcome``...) is native whatever its values, so that its validation names the record
and the bad field instead of "unknown format"; asked last, it cannot take a file from
the formats above. Native records in one JSON document (not one per line) get their own
message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType
from typing import IO

from ingest.core.errors import TraceParseError
from ingest.core.otlp_trace import FORMAT as LIVE_FORMAT
from ingest.core.records import TrajectoryRecord
from ingest.parsers import (
    inspect_ai,
    langfuse,
    langsmith,
    native,
    openai_chat,
    openhands,
    openinference,
    otel_sdk_spans,
    otlp_json,
    swe_agent,
    tau_bench,
    who_and_when,
)
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

PARSERS: dict[str, ModuleType] = {
    module.FORMAT: module
    for module in (
        native,
        otlp_json,
        otel_sdk_spans,
        openinference,
        langfuse,
        langsmith,
        inspect_ai,
        swe_agent,
        who_and_when,
        openhands,
        tau_bench,
        openai_chat,
    )
}

HEAD_BYTES = 64 * 1024

# People read the formats' names (LABEL, as the upload page lists them); a client that
# names a format sends its id, so the refusal of an unknown id pairs each id with its name.
MSG_UNKNOWN_FORMAT = (
    "Unknown trace format: the file matches none of the supported formats: {formats}. "
    "Detection reads the start of the file; if it is one of them, name its format (the "
    "upload form's Format, --format, or the API's format field)."
)
MSG_NO_SUCH_FORMAT = "Unknown format '{name}'; choose one of: {formats}."
MSG_EMPTY_FILE = "The file is empty."
MSG_MALFORMED_JSON = "The file is not valid JSON: {error}."
MSG_NO_STEPS = (
    "The rollout has no steps (a conversation with no messages, or an empty list): there is "
    "nothing to show or attribute; leave it out of the file or give it its steps."
)


def format_names() -> list[str]:
    return list(PARSERS)


# The rollouts that came without a file, from the OTLP/HTTP receiver (ingest.otlp), have
# the trace builder's format (LIVE_FORMAT), which no parser reads.
LIVE_FORMAT_LABEL = "OTLP/HTTP spans (live)"


def format_label(name: str) -> str:
    """A format's name as people read it, from its id; an id no parser has (an old row's)
    as it is.

    Example:
        >>> format_label("swe_agent"), format_label("otlp"), format_label("gone")
        ('SWE-agent .traj', 'OTLP/HTTP spans (live)', 'gone')
    """
    if name == LIVE_FORMAT:
        return LIVE_FORMAT_LABEL
    module = PARSERS.get(name)
    return module.LABEL if module is not None else name


def format_labels() -> str:
    """The supported formats by their names, in detection order.

    Example:
        >>> format_labels().split(", ")[:2]
        ['Faultline native JSONL', 'OTLP/JSON traces (OpenTelemetry GenAI)']
    """
    return ", ".join(format_label(name) for name in PARSERS)


def format_choices() -> str:
    """The ids a client may name, each with the format's name.

    Example:
        >>> format_choices().split(", ")[0]
        "'native' for Faultline native JSONL"
    """
    return ", ".join(f"'{name}' for {module.LABEL}" for name, module in PARSERS.items())


def get_parser(name: str) -> ModuleType:
    try:
        return PARSERS[name]
    except KeyError:
        raise TraceParseError(
            MSG_NO_SUCH_FORMAT.format(name=name, formats=format_choices()), field="format"
        ) from None


def read_records(
    name: str, stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    """The records of a file in format ``name``, each with at least one step: the one check
    every format's records pass on their way to storage. A rollout with no steps can be
    neither shown nor attributed, so it is bad input in every format, named by its record
    and the field its steps come from (the record's id when its parser gives no place).

    Example:
        >>> import io
        >>> empty = io.BytesIO(b'{"id": "x", "steps": []}')
        >>> list(read_records("native", empty, filename="a.jsonl"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ingest.core.errors.TraceParseError: line 1, field steps: The rollout has no steps ...
    """
    parser = get_parser(name)
    field = getattr(parser, "STEPS_FIELD", "")
    for record in parser.parse(stream, filename=filename, limits=limits):
        if not record.steps:
            where = record.source or f"rollout {record.external_id}"
            raise TraceParseError(MSG_NO_STEPS, record=where, field=field)
        yield record


def detect_format(head: bytes, filename: str) -> str:
    """Name the format of a file from its first bytes and its name.

    Example:
        >>> detect_format(b'[{"task_id": 0, "traj": [], "reward": 1.0}]', "x.json")
        'tau_bench'
    """
    if not head.strip():
        raise TraceParseError(MSG_EMPTY_FILE, file=filename)
    for name, module in PARSERS.items():
        if module.sniff(head, filename):
            return name
    if native.sniff_keys(head, filename):
        return native.FORMAT
    if native.sniff_document(head, filename):
        raise TraceParseError(native.MSG_NOT_LINES, file=filename)
    broken = _json_error(head)
    if broken is not None:
        raise TraceParseError(MSG_MALFORMED_JSON.format(error=broken), file=filename)
    raise TraceParseError(MSG_UNKNOWN_FORMAT.format(formats=format_labels()), file=filename)


def _json_error(head: bytes) -> str | None:
    """Why a whole file (shorter than the head) that starts like JSON is not JSON, neither
    one document nor lines of them: a truncated or hand-broken file is told as such, not
    as an unknown format. None when it parses, or only its start was read.

    Example:
        >>> _json_error(b'{"id": "r1", "steps": [')
        'Expecting value: line 1 column 24 (char 23)'
        >>> _json_error(b'{"a": 1}\\n{"b": 2}\\n') is None
        True
    """
    text = head.strip()
    if len(head) >= HEAD_BYTES or text[:1] not in (b"{", b"["):
        return None
    try:
        json.loads(head)  # as it is, so the line numbers are the file's
        return None
    except ValueError as exc:
        error = str(exc)
    try:
        json.loads(text.splitlines()[0])
        return None  # its first line is a document: lines of JSON, of no known format
    except ValueError:
        return error
