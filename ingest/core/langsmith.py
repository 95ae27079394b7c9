"""LangSmith runs as spans in OpenTelemetry GenAI terms, and one trace of them as a rollout.

The LangSmith parser (ingest.parsers.langsmith) turns each run into a
:class:`~ingest.core.spans.Span` carrying the attributes ingest.core.genai reads, so a
LangSmith trace becomes steps through the same code as OTLP, OpenInference and Langfuse
traces (:func:`run_span`), then adds what only LangSmith says (:func:`trace_trajectory`).

A run (the SDK's ``Run``: ``id``, ``trace_id``, ``parent_run_id``, ``dotted_order``,
``name``, ``run_type``, ``start_time``, ``end_time``, ``inputs``, ``outputs``, ``error``,
``extra`` with ``metadata``, ``tags``, ``feedback_stats``...) becomes, by ``run_type``:

- ``llm``: a model call. Its input messages are read from ``inputs.messages`` (LangChain's
  batch of one, ``[[...]]``, or a plain list as ``wrap_openai`` and ``@traceable`` write
  it; Anthropic's ``system`` beside them is the system message), ``inputs.prompts``
  (completion models) or ``inputs.prompt`` / ``inputs.input``; its output from
  ``outputs.generations`` (LangChain's ``LLMResult``), ``outputs.choices`` (an OpenAI chat
  completion), an Anthropic message (``role`` + ``content``), ``outputs.message`` /
  ``messages`` / ``output``. LangChain messages are read in every serialised shape: the
  ``{"lc": 1, "type": "constructor", "id": [..., "AIMessage"], "kwargs": {...}}`` form,
  ``{"type": "ai", ...}`` (or ``{"type": "ai", "data": {...}}``) and ``["user", "text"]``
  pairs; their ``tool_calls`` (``{name, args, id}``) or ``additional_kwargs.tool_calls``
  become OpenAI tool calls. The other keys (``model``, ``tools``, ``llm_output``,
  ``usage_metadata``...) stay in the attributes ``input`` / ``output``. The model is
  ``ls_model_name`` in ``extra.metadata``, else ``extra.invocation_params`` ``model`` /
  ``model_name``, else the output's ``model``; ``ls_provider`` is the provider.
- ``tool``: a tool call and its result. The arguments are ``inputs`` (its ``input`` when
  that is its only key, as LangChain writes it); the result is ``outputs`` (its
  ``output`` when that is its only key), a LangChain ``ToolMessage`` giving its
  ``content``, its ``tool_call_id`` and, with ``status`` error, an error.
- ``retriever``: a tool named after the run; the retrieved documents
  (``outputs.documents``, LangChain ``Document`` objects or plain dicts) are its result:
  each one's ``page_content``, its ``metadata`` as JSON on the line below, a blank line
  between documents.
- ``chain``, ``prompt``, ``parser``, ``embedding`` and any other type: not steps; their
  ``inputs`` / ``outputs`` stay in the attributes ``input.value`` / ``output.value``.

A run with ``error`` (or ``status`` error) is an error span, the error text its message.
Every run field not read here (``extra``, ``tags``, ``dotted_order``, token counts and
costs, ``feedback_stats``, ``serialized``, ``events``...) is kept in the span's ``extra``,
except streaming's ``new_token`` events, which repeat the output token by token.

Example:
    >>> span = run_span({"id": "r2", "trace_id": "r1", "parent_run_id": "r1",
    ...     "run_type": "tool", "name": "search", "inputs": {"input": "flights to Oslo"},
    ...     "outputs": None, "error": "TimeoutError: no answer",
    ...     "start_time": "2025-01-01T00:00:01Z"}, where="item 1", position=1)
    >>> span.attributes["gen_ai.tool.name"], span.status, span.status_message
    ('search', 'error', 'TimeoutError: no answer')
    >>> span.trace_id, span.parent_id, span.record
    ('r1', 'r1', 'item 1, run r2')
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from ingest.core.chat import chat_messages_to_steps
from ingest.core.errors import TraceParseError
from ingest.core.genai_events import OUTCOME_ATTRIBUTE, evaluation_outcome
from ingest.core.langchain_messages import llm_inputs, llm_outputs, messages_of, plain_message
from ingest.core.otlp_trace import AGENT_SYSTEM_ATTRIBUTE, CONVERSATION_KEY, trace_record
from ingest.core.records import Outcome, StepKind, StepRecord, TrajectoryRecord
from ingest.core.spans import (
    EPOCH,
    STATUS_ERROR,
    STATUS_UNSET,
    Span,
    compact_json,
    datetime_to_ns,
    tree_order,
)
from ingest.core.validate import (
    MSG_REQUIRED,
    optional_number,
    optional_object,
    optional_str,
    optional_time,
    require_object,
    require_str,
    required_id,
    text_of,
)

MSG_NO_TRACE = (
    "The run has a parent_run_id but neither trace_id nor dotted_order, so its trace is unknown."
)
MSG_BAD_TIME = "Expected an ISO 8601 timestamp or milliseconds since the epoch."

ID_FIELD = "id"
RUN_TYPES = ("llm", "chain", "tool", "retriever", "prompt", "parser", "embedding")
_OPERATIONS = {"llm": "chat", "tool": "execute_tool", "retriever": "execute_tool"}
_CONSUMED = {
    "id",
    "trace_id",
    "parent_run_id",
    "name",
    "start_time",
    "end_time",
    "error",
    "inputs",
    "outputs",
}
# Keys of a root run's inputs that hold the task, first found first.
_TASK_KEYS = ("input", "question", "query", "task", "prompt", "text", "message", "request")
# Chains that are the framework's plumbing, never an agent: LangChain's runnables,
# LangGraph's graph, channel writers and branches, ``__start__``.
_PLUMBING = re.compile(r"^(LangGraph$|AgentExecutor$|Runnable|Channel(Write|Read)|Branch|__)")
HIDDEN_TAG = "langsmith:hidden"
# Thread keys LangSmith groups a conversation's traces by.
_THREAD_KEYS = ("thread_id", "session_id", "conversation_id")


# --- Tools and documents ----------------------------------------------------------------


def _only(value: dict[str, Any], key: str) -> Any:
    """``value[key]`` when that is the object's only key (LangChain's wrapping), else all."""
    return value[key] if len(value) == 1 and key in value else value


def _document(item: Any) -> str:
    """A retrieved document as its text, its ``metadata`` (the source...) on a line below."""
    if isinstance(item, dict) and item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):
        item = item["kwargs"]
    if not (isinstance(item, dict) and isinstance(item.get("page_content"), str)):
        return text_of(item)
    metadata = item.get("metadata")
    if not metadata:
        return str(item["page_content"])
    return f"{item['page_content']}\nmetadata: {compact_json(metadata)}"


def _tool_attributes(
    run: dict[str, Any], name: str, run_type: str, attributes: dict[str, Any]
) -> str:
    """A tool or retriever run's call attributes; the error its ``ToolMessage`` reports
    (``status`` error: LangGraph's ToolNode catches the tool's exception), else ""."""
    attributes["gen_ai.tool.name"] = name
    inputs, outputs = run.get("inputs") or {}, run.get("outputs") or {}
    if inputs:
        attributes["gen_ai.tool.call.arguments"] = _only(inputs, "input")
    if not outputs:
        return ""
    if run_type == "retriever" and isinstance(outputs.get("documents"), list):
        documents = [_document(item) for item in outputs["documents"]]
        attributes["gen_ai.tool.call.result"] = "\n\n".join(documents)
        return ""
    result = plain_message(_only(outputs, "output"))
    if not (isinstance(result, dict) and result.get("role") == "tool"):
        attributes["gen_ai.tool.call.result"] = result
        return ""
    call_id = result.get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    content = text_of(result.get("content"))
    attributes["gen_ai.tool.call.result"] = content
    return (content or "Tool error.") if result.get("is_error") is True else ""


# --- Runs -------------------------------------------------------------------------------


def _time(run: dict[str, Any], key: str, record: str) -> int | None:
    value = run.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # The JS SDK writes epoch milliseconds.
        try:
            return datetime_to_ns(EPOCH + timedelta(milliseconds=value))
        except (OverflowError, ValueError):
            raise TraceParseError(MSG_BAD_TIME, record=record, field=key) from None
    if value is not None and not isinstance(value, str):
        raise TraceParseError(MSG_BAD_TIME, record=record, field=key)
    try:
        return datetime_to_ns(optional_time(run, key, record=record))
    except TraceParseError:
        raise TraceParseError(MSG_BAD_TIME, record=record, field=key) from None


def _trace_id(run: dict[str, Any], run_id: str, parent: str, record: str) -> str:
    trace_id = optional_str(run, "trace_id", record=record)
    if trace_id:
        return trace_id
    # dotted_order is ``<time><run id>`` per level, from the root: its first id is the trace's.
    dotted = optional_str(run, "dotted_order", record=record)
    if len(dotted.split(".")[0]) > 36:
        return dotted.split(".")[0][-36:]
    if parent:
        raise TraceParseError(MSG_NO_TRACE, record=record, field="trace_id")
    return run_id


def _check_feedback(run: dict[str, Any], record: str) -> None:
    stats = optional_object(run, "feedback_stats", record=record)
    for key, stat in stats.items():
        prefix = f"feedback_stats.{key}."
        stat = require_object(stat, record=record, field=prefix.rstrip("."))
        optional_number(stat, "avg", record=record, prefix=prefix)
        optional_number(stat, "n", record=record, prefix=prefix)
        optional_object(stat, "values", record=record, prefix=prefix)


def _model(run: dict[str, Any], metadata: dict[str, Any]) -> str:
    params = run["extra"].get("invocation_params") if isinstance(run.get("extra"), dict) else {}
    outputs = run.get("outputs") or {}
    llm_output = outputs.get("llm_output")
    for value in (
        metadata.get("ls_model_name"),
        params.get("model") if isinstance(params, dict) else None,
        params.get("model_name") if isinstance(params, dict) else None,
        outputs.get("model"),
        llm_output.get("model_name") if isinstance(llm_output, dict) else None,
    ):
        if isinstance(value, str) and value:
            return value
    return ""


def _llm_attributes(
    run: dict[str, Any], metadata: dict[str, Any], record: str, attributes: dict[str, Any]
) -> None:
    for key, read, attribute, other in (
        ("inputs", llm_inputs, "gen_ai.input.messages", "input"),
        ("outputs", llm_outputs, "gen_ai.output.messages", "output"),
    ):
        messages, field, rest = read(run.get(key) or {})
        # The step builder reads these with the chat rules; reading them here first names
        # a bad message by the LangSmith field it came from.
        chat_messages_to_steps(messages, record=record, field=field)
        if messages:
            attributes[attribute] = messages
        if rest:
            attributes[other] = rest
    model = _model(run, metadata)
    if model:
        attributes["gen_ai.request.model"] = model
    provider = metadata.get("ls_provider")
    if isinstance(provider, str) and provider:
        attributes["gen_ai.provider.name"] = provider


def run_span(raw: Any, *, where: str, position: int) -> Span:
    """One run as a span; ``where`` is its place in the file (``item 3``, ``line 3``)."""
    run = require_object(raw, record=where)
    run_id = required_id(run, "id", record=where)
    record = f"{where}, run {run_id}"
    run_type = require_str(run, "run_type", record=record)
    if not run_type:
        raise TraceParseError(MSG_REQUIRED, record=record, field="run_type")
    name = optional_str(run, "name", record=record)
    parent = optional_str(run, "parent_run_id", record=record)
    trace_id = _trace_id(run, run_id, parent, record)
    inputs = optional_object(run, "inputs", record=record)
    outputs = optional_object(run, "outputs", record=record)
    extra = optional_object(run, "extra", record=record)
    metadata = optional_object(extra, "metadata", record=record, prefix="extra.")
    error = optional_str(run, "error", record=record)
    status = optional_str(run, "status", record=record)
    _check_feedback(run, record)
    operation = _OPERATIONS.get(run_type, run_type if run_type in RUN_TYPES else "")
    attributes: dict[str, Any] = {"gen_ai.operation.name": operation or f"langsmith.{run_type}"}
    if run_type == "llm":
        _llm_attributes(run, metadata, record, attributes)
    elif run_type in ("tool", "retriever"):
        reported = _tool_attributes(run, name, run_type, attributes)
        error = error or reported
    else:
        if inputs:
            attributes["input.value"] = inputs
        if outputs:
            attributes["output.value"] = outputs
    kept = {k: v for k, v in run.items() if k not in _CONSUMED and v is not None}
    if isinstance(kept.get("events"), list):
        kept["events"] = [
            event
            for event in kept["events"]
            if not (isinstance(event, dict) and event.get("name") == "new_token")
        ]
    return Span(
        trace_id=trace_id,
        span_id=run_id,
        parent_id=parent,
        name=name,
        start_ns=_time(run, "start_time", record),
        end_ns=_time(run, "end_time", record),
        status=STATUS_ERROR if error or status == "error" else STATUS_UNSET,
        status_message=error,
        attributes=attributes,
        extra=kept,
        record=record,
        position=position,
    )


# --- Traces -----------------------------------------------------------------------------


def _metadata(span: Span) -> dict[str, Any]:
    extra = span.extra.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def _is_agent(span: Span) -> bool:
    tags = span.extra.get("tags")
    hidden = isinstance(tags, list) and HIDDEN_TAG in tags
    return (
        span.extra.get("run_type") == "chain"
        and bool(span.name)
        and not hidden
        and _PLUMBING.match(span.name) is None
    )


def _name_agents(ordered: list[Span]) -> None:
    """Mark the agents: below the root, the outermost chain on each path that is not the
    framework's plumbing (a LangGraph node, a sub-agent's graph, a ``@traceable``
    function); everything under it is that agent's."""
    root = ordered[0]
    owned: dict[str, bool] = {root.span_id: False}
    for span in ordered[1:]:
        parent = root.span_id if span.parent_missing else span.parent_id
        inside = owned.get(parent, False)
        if not inside and _is_agent(span):
            span.attributes["gen_ai.agent.name"] = span.name
            inside = True
        owned[span.span_id] = inside


def task_text(inputs: Any) -> str:
    """The task a root run's inputs state: the first user message of chat inputs, else the
    text of a task-like key (``input``, ``question``, ``query``...) or of the only key,
    else the inputs as JSON.

    Example:
        >>> task_text({"messages": [["system", "Be brief."], ["user", "Book Oslo."]]})
        'Book Oslo.'
        >>> task_text({"question": "Is 7 prime?", "k": 3})
        'Is 7 prime?'
    """
    if not isinstance(inputs, dict) or not inputs:
        return text_of(inputs) if inputs not in (None, "", {}) else ""
    if "messages" in inputs:
        messages, _ = messages_of(inputs["messages"], field="inputs", default_role="user")
        first = next((m for m in messages if m.get("role") == "user" and m.get("content")), None)
        if first is not None:
            return text_of(first["content"])
    keys = [key for key in _TASK_KEYS if isinstance(inputs.get(key), str) and inputs[key]]
    if keys:
        return str(inputs[keys[0]])
    if len(inputs) == 1:
        (only,) = inputs.values()
        return only if isinstance(only, str) else text_of(only)
    return text_of(inputs)


def feedback_evaluations(span: Span) -> list[dict[str, Any]]:
    """A run's ``feedback_stats`` as evaluations: ``{span_id, name, n, score_value,
    values}`` per feedback key, in the file's order."""
    stats = span.extra.get("feedback_stats")
    evaluations = []
    for key, stat in (stats if isinstance(stats, dict) else {}).items():
        evaluation: dict[str, Any] = {"span_id": span.span_id, "name": key, "source": "feedback"}
        for field, name in (("n", "n"), ("avg", "score_value"), ("values", "values")):
            if stat.get(field) is not None:
                evaluation[name] = stat[field]
        evaluations.append(evaluation)
    return evaluations


def _verdict(evaluation: dict[str, Any]) -> str:
    """What one feedback key says about the task (see :func:`feedback_outcome`)."""
    avg = evaluation.get("score_value")
    if isinstance(avg, (int, float)) and not isinstance(avg, bool):
        if not 0 <= avg <= 1:
            return Outcome.UNKNOWN
        label = "yes" if avg >= 1 else "no"
        return evaluation_outcome([{"name": evaluation["name"], "score_label": label}])
    values = evaluation.get("values")
    labels = [k for k, count in (values or {}).items() if count]
    if len(labels) == 1:
        return evaluation_outcome([{"name": evaluation["name"], "score_label": labels[0]}])
    return Outcome.UNKNOWN


def feedback_outcome(evaluations: list[dict[str, Any]]) -> tuple[str, float | None]:
    """The outcome the root run's feedback gives, and the reward (the deciding key's average).

    A key decides when its name asks whether the task succeeded (``correctness``,
    ``success``, ``task_completed``, ``resolved``: the rule for evaluation labels,
    ingest.core.genai_events) and its average is on a 0 to 1 scale: 1 (every score the
    best) is a success, anything lower a failure, as ``faultline.reward`` reads. A purely
    categorical key decides when all its values are one pass/fail word. The last key that
    decides wins; any other key (``helpfulness``, ``score``, a 1 to 5 rating) decides
    nothing.

    Example:
        >>> feedback_outcome([{"name": "correctness", "score_value": 1.0},
        ...                   {"name": "helpfulness", "score_value": 0.2}])
        ('success', 1.0)
        >>> feedback_outcome([{"name": "correctness", "score_value": 0.5}])
        ('failure', 0.5)
        >>> feedback_outcome([{"name": "score", "score_value": 0.0}])
        ('unknown', None)
    """
    for evaluation in reversed(evaluations):
        verdict = _verdict(evaluation)
        if verdict != Outcome.UNKNOWN:
            avg = evaluation.get("score_value")
            reward = float(avg) if isinstance(avg, (int, float)) else None
            return verdict, reward
    return Outcome.UNKNOWN, None


def _root_inputs(root: Span) -> Any:
    """The root run's inputs, wherever its run type put them."""
    attributes = root.attributes
    if "gen_ai.input.messages" in attributes:
        return {"messages": attributes["gen_ai.input.messages"]}
    return attributes.get("input.value", attributes.get("gen_ai.tool.call.arguments"))


def _root_attributes(root: Span) -> None:
    """The trace-level attributes the rollout is read from (ingest.core.otlp_trace): the
    ``faultline.*`` keys of the root's metadata, its thread, and its task as
    ``input.value`` (structured inputs move to the root's ``inputs``)."""
    metadata = _metadata(root)
    root.attributes.update({k: v for k, v in metadata.items() if k.startswith("faultline.")})
    thread = next((metadata[k] for k in _THREAD_KEYS if isinstance(metadata.get(k), str)), "")
    if thread:
        root.attributes.setdefault(CONVERSATION_KEY, thread)
    inputs = _root_inputs(root)
    text = task_text(inputs)
    if not isinstance(root.attributes.get("input.value", ""), str):
        root.extra["inputs"] = root.attributes.pop("input.value")
    if text:
        root.attributes["input.value"] = text


def _agent_system(root: Span) -> str:
    declared = root.attributes.get(AGENT_SYSTEM_ATTRIBUTE)
    if isinstance(declared, str) and declared:
        return declared
    if root.extra.get("run_type") == "chain" and root.name and not _PLUMBING.match(root.name):
        return root.name
    session = root.extra.get("session_name")
    return session if isinstance(session, str) else ""


def trace_trajectory(spans: list[Span], *, trace_id: str, format_name: str) -> TrajectoryRecord:
    """One trace's runs (as :func:`run_span` made them) as a rollout.

    Example:
        >>> root = run_span({"id": "r1", "run_type": "chain", "name": "support_bot",
        ...     "inputs": {"question": "Cancel ABC123"}, "error": "KeyError: 'ABC123'",
        ...     "start_time": "2025-01-01T00:00:00Z"}, where="item 0", position=0)
        >>> record = trace_trajectory([root], trace_id="r1", format_name="langsmith")
        >>> record.task_text, record.agent_system, record.outcome
        ('Cancel ABC123', 'support_bot', 'failure')
        >>> [(s.role, s.content) for s in record.steps]  # no model call: the runs as they are
        [('user', 'Cancel ABC123'), ('system', 'support_bot')]
    """
    ordered = tree_order(spans, id_field=ID_FIELD)
    root = ordered[0]
    _name_agents(ordered)
    _root_attributes(root)
    record = trace_record(spans, trace_id=trace_id, resource={}, extra={"format": format_name})
    record.metadata.pop("resource", None)
    record.task_text = str(root.attributes.get("input.value") or "") or record.task_text
    if record.task_text and not any(step.role == "user" for step in record.steps):
        _prepend_task(record, root)
    record.agent_system = _agent_system(root)
    if not record.task_id and isinstance(root.extra.get("reference_example_id"), str):
        record.task_id = root.extra["reference_example_id"]
    evaluations = feedback_evaluations(root)
    if evaluations:
        record.metadata.setdefault("evaluations", []).extend(evaluations)
        if OUTCOME_ATTRIBUTE not in root.attributes and "faultline.reward" not in root.attributes:
            outcome, reward = feedback_outcome(evaluations)
            if outcome != Outcome.UNKNOWN:
                record.outcome, record.reward = outcome, reward
    return record


def _prepend_task(record: TrajectoryRecord, root: Span) -> None:
    """The task as the user's message, first, when no model call's input carried one (a
    trace of tools, or prompts built from a template)."""
    step = StepRecord(
        index=0,
        role="user",
        kind=StepKind.MESSAGE,
        content=record.task_text,
        agent="user",
        started_at=root.started_at,
        metadata={"span_id": root.span_id, "from": "root_inputs"},
    )
    record.steps.insert(0, step)
    for position, each in enumerate(record.steps):
        each.index = position
