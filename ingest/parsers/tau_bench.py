"""tau-bench historical trajectories: a JSON list of rollouts with OpenAI chat messages.

Each item is ``{task_id, trial, reward, info: {task: {user_id, instruction, actions}},
traj: [messages]}``. The environment and policy model come from the file name when it
follows tau-bench's ``<model>-<environment>.json`` pattern (``gpt-4o-airline.json``).
A reward of 1 is a success, anything lower a failure. The gold actions stay in metadata
(``info.task.actions``) for the action-level analysis.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePath
from typing import IO, Any

from ingest.core.chat import chat_messages_to_steps
from ingest.core.errors import TraceParseError
from ingest.core.jsonio import first_byte, iter_array_items
from ingest.core.records import Outcome, TrajectoryRecord
from ingest.core.validate import (
    optional_number,
    optional_object,
    optional_str,
    require_list,
    require_object,
)
from ingest.parsers.base import DEFAULT_LIMITS, ParseLimits

FORMAT = "tau_bench"
LABEL = "tau-bench trajectories"
EXTENSIONS = (".json",)
STEPS_FIELD = "traj"

MSG_REQUIRED = "Field is required."
MSG_BAD_ID = "Expected an integer or a string."
MSG_NOT_A_LIST = "A tau-bench file is a JSON list of rollouts."
_NAME = re.compile(r"^(?P<model>.+)-(?P<env>airline|retail|[a-z]+)$")


def sniff(head: bytes, filename: str) -> bool:
    start = head.lstrip()[:1]
    return start == b"[" and b'"traj"' in head and (b'"reward"' in head or b'"task_id"' in head)


def _id_field(obj: dict[str, Any], key: str, record: str) -> str:
    if key not in obj:
        raise TraceParseError(MSG_REQUIRED, record=record, field=key)
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TraceParseError(MSG_BAD_ID, record=record, field=key)
    return str(value)


def _names(filename: str) -> tuple[str, str]:
    match = _NAME.match(PurePath(filename).stem)
    if not match:
        return "", ""
    return match.group("env"), match.group("model")


def rollout_from_object(obj: Any, *, index: int, environment: str, model: str) -> TrajectoryRecord:
    record = f"item {index}"
    obj = require_object(obj, record=record)
    task_id = _id_field(obj, "task_id", record)
    trial = obj.get("trial", 0)
    reward = optional_number(obj, "reward", record=record)
    if reward is None:
        raise TraceParseError(MSG_REQUIRED, record=record, field="reward")
    info = optional_object(obj, "info", record=record)
    task = optional_object(info, "task", record=record, prefix="info.")
    steps = chat_messages_to_steps(
        require_list(obj, "traj", record=record), record=record, field="traj"
    )
    metadata = {k: v for k, v in obj.items() if k not in {"traj", "task_id", "reward"}}
    return TrajectoryRecord(
        external_id=f"{environment or 'tau'}-task{task_id}-trial{trial}",
        task_id=f"{environment}/{task_id}" if environment else task_id,
        task_text=optional_str(task, "instruction", record=record, prefix="info.task."),
        environment=environment,
        agent_system="tau-bench tool-calling agent",
        policy_model=model,
        outcome=Outcome.SUCCESS if reward >= 1.0 else Outcome.FAILURE,
        reward=reward,
        metadata=metadata,
        steps=steps,
        source=record,
    )


def parse(
    stream: IO[bytes], *, filename: str, limits: ParseLimits = DEFAULT_LIMITS
) -> Iterator[TrajectoryRecord]:
    if first_byte(stream) != b"[":
        raise TraceParseError(MSG_NOT_A_LIST, record="document")
    environment, model = _names(filename)
    for index, item in iter_array_items(stream):
        yield rollout_from_object(item, index=index, environment=environment, model=model)
