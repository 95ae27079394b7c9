"""inspect_ai evaluation logs: ``.json`` documents and ``.eval`` zip archives.

A trajectory is one sample at one epoch. A ``.json`` log is ``{version, status, eval, plan,
results, stats, samples: [...], reductions}``; the samples are streamed one at a time and
the log fields read before them (``eval``, ``plan``, ``results``, ``stats``...) go to each
trajectory's ``metadata.log``. An ``.eval`` log is a zip read member by member:
``header.json`` (or ``_journal/start.json`` while a run is in progress) for the log
fields, then each ``samples/<id>_epoch_<n>.json`` (one sample each); the member count and
expanded size are checked against the archive limits first.

A sample is ``{id, epoch, input, target, messages, output, scores, metadata, events,
error, ...}``. Its ``messages`` become steps as OpenAI chat messages do (inspect's
``tool_calls`` are ``{id, function, arguments}`` with arguments as an object; a tool
message names its ``function`` and may carry ``error: {type, message}``, which marks the
step an error and, when its content is empty as inspect leaves it, becomes its text
``Error: <message>``, what inspect shows the model). Every other sample field (events,
output, target, usage...) goes to ``metadata.sample``.

Outcome from the first scorer in ``scores``: ``C`` (correct) = 1, ``I`` (incorrect) = 0,
``P`` (partial) = 0.5, ``N`` (no answer) = 0, true/false = 1/0, a number as it is; that is
the reward, and a reward >= 1 is a success, lower a failure. A sample ``error`` is a
failure. No score: unknown.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import PurePath
from typing import IO, Any

from ingest.core.chat import chat_messages_to_steps
from ingest.core.errors import TraceParseError
from ingest.core.jsonio import MSG_TOO_LARGE, loads
from ingest.core.jsonstream import iter_document
from ingest.core.records import Outcome, TrajectoryRecord
from ingest.core.validate import optional_list, optional_object, require_object, text_of
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits
from ingest.parsers.sources import ZIP_MAGIC, check_zip_members

FORMAT = "inspect_ai"
LABEL = "inspect_ai log (.json / .eval)"
EXTENSIONS = (".json", ".eval")
STEPS_FIELD = "messages"

MSG_NO_HEADER = "An .eval log needs header.json or _journal/start.json."
MSG_BAD_ZIP = "The .eval archive is damaged or truncated: {detail}."
MSG_BAD_ID = "Expected a string or an integer."
MSG_NO_SAMPLES = "The log holds no samples (was it written with log_samples off?)."
MSG_NOT_SEEKABLE = "An .eval log must be read from a seekable stream."
LETTER_SCORES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
HEADERS = ("header.json", "_journal/start.json")
_SAMPLE_MEMBER = re.compile(r"^samples/.+\.json$")
SAMPLE_MAPPED = {"id", "epoch", "input", "messages", "scores", "error"}


def sniff(head: bytes, filename: str) -> bool:
    if head.startswith(ZIP_MAGIC):
        return filename.lower().endswith(".eval") or any(
            name.encode() in head for name in (*HEADERS, "samples/")
        )
    start = head.lstrip()[:1]
    return (
        start == b"{"
        and b'"eval"' in head
        and (b'"samples"' in head or b'"plan"' in head or b'"results"' in head)
        and b'"version"' in head
    )


def _sample_id(sample: dict[str, Any], record: str) -> str:
    value = sample.get("id", "")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TraceParseError(MSG_BAD_ID, record=record, field="id")
    return str(value)


def _openai_messages(messages: list[Any], record: str) -> list[Any]:
    converted: list[Any] = []
    for position, raw in enumerate(messages):
        message = require_object(raw, record=record, field=f"messages[{position}]")
        message = dict(message)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            normalised = []
            extras = []
            for call in calls:
                if isinstance(call, dict) and isinstance(call.get("function"), str):
                    normalised.append(
                        {
                            "id": call.get("id") or "",
                            "type": "function",
                            "function": {
                                "name": call["function"],
                                "arguments": call.get("arguments"),
                            },
                        }
                    )
                    extras.append(
                        {
                            k: v
                            for k, v in call.items()
                            if k not in {"id", "function", "arguments", "type"}
                        }
                    )
                else:
                    normalised.append(call)
            message["tool_calls"] = normalised
            if any(extras):
                message["tool_call_extras"] = extras
        if (
            message.get("role") == "tool"
            and isinstance(message.get("function"), str)
            and "name" not in message
        ):
            message["name"] = message.pop("function")
        converted.append(message)
    return converted


def _reward(scores: dict[str, Any]) -> float | None:
    for score in scores.values():
        value = score.get("value") if isinstance(score, dict) else score
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if isinstance(value, (int, float)):
            return float(value) if value == value else None
        if isinstance(value, str) and value.strip().upper() in LETTER_SCORES:
            return LETTER_SCORES[value.strip().upper()]
        return None
    return None


def error_message(error: Any) -> str:
    """What the model saw of a tool call that raised: inspect writes the message in the
    tool message's ``error`` and leaves its content empty, and its providers show the
    model ``Error: <message>``. Stored as the step's text so that searches, the error
    signals and the error templates read it (the raw error stays in the metadata).

    >>> error_message({"type": "timeout", "message": "Command timed out after 30s"})
    'Error: Command timed out after 30s'
    >>> error_message({"type": "parsing"}), error_message("boom")
    ('Error: parsing', 'Error: boom')
    """
    if isinstance(error, dict):
        message = error.get("message")
        detail = message if isinstance(message, str) and message.strip() else error.get("type")
    else:
        detail = error
    return f"Error: {detail}" if isinstance(detail, str) and detail.strip() else "Error"


def _solver(log: dict[str, Any]) -> str:
    plan = log.get("plan")
    steps = plan.get("steps") if isinstance(plan, dict) else None
    solvers = [step.get("solver") for step in steps or [] if isinstance(step, dict)]
    return " + ".join(name for name in solvers if isinstance(name, str))


def sample_to_trajectory(
    sample_raw: Any, *, record: str, log: dict[str, Any], stem: str
) -> TrajectoryRecord:
    sample = require_object(sample_raw, record=record)
    sample_id = _sample_id(sample, record)
    epoch = sample.get("epoch", 1)
    messages = _openai_messages(optional_list(sample, "messages", record=record), record)
    steps = chat_messages_to_steps(messages, record=record)
    for step in steps:
        error = step.metadata.get("extra", {}).get("error")
        if error:
            step.is_error = True
            if not (step.content or "").strip():
                step.content = error_message(error)
    scores = optional_object(sample, "scores", record=record)
    reward = _reward(scores)
    error = sample.get("error")
    if error:
        outcome = Outcome.FAILURE
    elif reward is None:
        outcome = Outcome.UNKNOWN
    else:
        outcome = Outcome.SUCCESS if reward >= 1.0 else Outcome.FAILURE
    raw_eval = log.get("eval")
    eval_info: dict[str, Any] = raw_eval if isinstance(raw_eval, dict) else {}
    raw_task = eval_info.get("task")
    task = raw_task if isinstance(raw_task, str) else ""
    run = next(
        (
            eval_info[k]
            for k in ("eval_id", "run_id")
            if isinstance(eval_info.get(k), str) and eval_info[k]
        ),
        stem,
    )
    raw_input = sample.get("input")
    task_text = raw_input if isinstance(raw_input, str) else ""
    if not task_text:
        task_text = next((s.content for s in steps if s.role == "user" and s.content), "")
    metadata: dict[str, Any] = {
        "sample": {k: v for k, v in sample.items() if k not in SAMPLE_MAPPED},
        "epoch": epoch,
        "scores": scores,
        "log": log,
    }
    if not isinstance(raw_input, str):
        metadata["input"] = raw_input
    if error:
        metadata["error"] = error
    model = eval_info.get("model")
    return TrajectoryRecord(
        external_id=f"{run}/{sample_id}/epoch{epoch}",
        task_id=f"{task}/{sample_id}" if task else sample_id,
        task_text=task_text if isinstance(task_text, str) else text_of(task_text),
        environment=task,
        agent_system=_solver(log) or "inspect_ai",
        policy_model=model if isinstance(model, str) else "",
        outcome=outcome,
        reward=reward,
        metadata=metadata,
        steps=steps,
        source=record,
    )


def _read_member(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, filename: str, limits: ParseLimits
) -> Any:
    record = f"member {info.filename}"
    try:
        with archive.open(info) as member:
            data = member.read(limits.max_document_bytes + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise TraceParseError(
            MSG_BAD_ZIP.format(detail=str(exc)), file=filename, record=record
        ) from None
    if len(data) > limits.max_document_bytes:
        raise TraceParseError(MSG_TOO_LARGE.format(limit=limits.max_document_bytes), record=record)
    return loads(data, record=record)


def _parse_eval(
    stream: IO[bytes], filename: str, limits: ParseLimits
) -> Iterator[TrajectoryRecord]:
    if not stream.seekable():
        raise TraceParseError(MSG_NOT_SEEKABLE, record="document")
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise TraceParseError(MSG_BAD_ZIP.format(detail=str(exc)), record="document") from None
    stem = PurePath(filename).stem
    with archive:
        members = check_zip_members(archive, filename, limits)
        by_name = {info.filename: info for info in members}
        header_name = next((name for name in HEADERS if name in by_name), None)
        if header_name is None:
            raise TraceParseError(MSG_NO_HEADER, record="document")
        log = require_object(
            _read_member(archive, by_name[header_name], filename, limits),
            record=f"member {header_name}",
        )
        if "reductions.json" in by_name:
            log = dict(
                log, reductions=_read_member(archive, by_name["reductions.json"], filename, limits)
            )
        samples = [info for info in members if _SAMPLE_MEMBER.match(info.filename)]
        if not samples:
            raise TraceParseError(MSG_NO_SAMPLES, record="document", field="samples")
        for info in samples:
            record = f"member {info.filename}"
            yield sample_to_trajectory(
                _read_member(archive, info, filename, limits), record=record, log=log, stem=stem
            )


def _parse_json(
    stream: IO[bytes], filename: str, limits: ParseLimits
) -> Iterator[TrajectoryRecord]:
    log: dict[str, Any] = {}
    stem = PurePath(filename).stem
    index = 0
    for kind, key, value in iter_document(
        stream, stream_keys={"samples"}, max_item_bytes=limits.max_line_bytes
    ):
        if kind == "field":
            log[key] = value
            continue
        yield sample_to_trajectory(value, record=f"samples[{index}]", log=dict(log), stem=stem)
        index += 1
    if index == 0:
        raise TraceParseError(MSG_NO_SAMPLES, record="document", field="samples")


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    head = stream.read(4)
    try:
        stream.seek(0)
    except (OSError, ValueError):
        raise TraceParseError(MSG_NOT_SEEKABLE, record="document") from None
    if head == ZIP_MAGIC:
        yield from _parse_eval(stream, filename, limits)
    else:
        yield from _parse_json(stream, filename, limits)
