"""Long observations cut short, for trainers with a length limit per example.

A web page or a log pasted as a tool result can make one example hundreds of thousands
of characters long (a trial's largest SFT line was 651 KB, about 160k tokens, beyond what
fine-tuning services take per example). With a limit, every step that no agent wrote (a
tool's result, the user's turns, a system prompt) keeps its first ``limit`` characters
and says how many were cut; what the agents wrote is never cut, so a correction and the
turn it replaces stay whole.

Example:
    >>> from ingest.core.records import StepRecord, TrajectoryRecord
    >>> page = StepRecord(index=0, role="tool", kind="tool_result", content="x" * 50)
    >>> cut = cut_observations(TrajectoryRecord("r", steps=[page]), 10)
    >>> cut.steps[0].content
    'xxxxxxxxxx\\n[... 40 more characters cut by the export]'
    >>> page.content == "x" * 50  # the record read from the database is left as it was
    True
"""

from __future__ import annotations

from dataclasses import replace

from ingest.core.records import TrajectoryRecord
from ingest.core.vocabulary import is_agent_action

CUT_MARK = "\n[... {more:,} more characters cut by the export]"


def cut_observations(record: TrajectoryRecord, limit: int) -> TrajectoryRecord:
    """A copy of ``record`` whose observations hold at most ``limit`` characters (0: all)."""
    if limit <= 0:
        return record
    steps = []
    for step in record.steps:
        content = step.content or ""
        if is_agent_action(step) or len(content) <= limit:
            steps.append(step)
            continue
        more = len(content) - limit
        steps.append(replace(step, content=content[:limit] + CUT_MARK.format(more=more)))
    return replace(record, steps=steps)
