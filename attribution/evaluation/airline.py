"""tau-bench airline rollouts with decisive steps from the gold-action rule, as a benchmark.

tau-bench publishes no step labels; :func:`attribution.core.label_sources.gold_action_label`
makes them from the gold actions (``info.task.actions``). Figures on this set therefore
say how well a scorer finds *that rule's* step, not a human's. Tools judged neutral by
:func:`attribution.core.label_sources.outcome_neutral_tools` come from all the file's
rollouts, as a project holding it would compute them; the step labels play no part in that.

Example:
    >>> AIRLINE_NAME
    'tau-bench airline (gold-action labels)'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from attribution.core.gold_actions import ToolCall, diff_actions, gold_actions
from attribution.core.label_sources import gold_action_label, outcome_neutral_tools
from attribution.core.view import scoring_view
from attribution.evaluation.experiments import LabelledSet

AIRLINE_NAME = "tau-bench airline (gold-action labels)"
AIRLINE_FILE = Path("tau_bench") / "historical_trajectories" / "gpt-4o-airline.json"


def load_airline_gold(data_root: Path) -> LabelledSet:
    """The failed airline rollouts that the gold-action rule labels, labels kept apart."""
    from ingest.parsers import tau_bench  # pure ingest core; imported late to stay light

    path = data_root / AIRLINE_FILE
    with path.open("rb") as stream:
        records = list(tau_bench.parse(stream, filename=path.name))
    golds = [
        gold_actions(r.metadata.get("info", {}).get("task", {}).get("actions")) or []
        for r in records
    ]
    neutral = outcome_neutral_tools(
        [(r, g, r.outcome == "success") for r, g in zip(records, golds, strict=True)]
    )
    views, steps, agents, tasks = [], [], [], []
    for record, gold in zip(records, golds, strict=True):
        if record.outcome != "failure":
            continue
        label = gold_action_label(record, gold, neutral_tools=neutral)
        if label is None:
            continue
        views.append(scoring_view(record))
        steps.append(label.step)
        agents.append(label.agent)
        tasks.append(record.task_id)
    return LabelledSet(AIRLINE_NAME, views, np.asarray(steps, dtype=np.int64), agents, tasks)


def gold_rule_check(data_root: Path, *, n_splits: int = 20, seed: int = 0) -> dict[str, Any]:
    """How often the gold-action rule labels held-out successes (it should not) and failures.

    The neutral tools come from a random half of the tasks; the rule is judged on the other
    half. A successful rollout has no decisive error, so a label on one is a false alarm.
    """
    from ingest.parsers import tau_bench

    path = data_root / AIRLINE_FILE
    with path.open("rb") as stream:
        records = list(tau_bench.parse(stream, filename=path.name))
    items = [
        (r, gold_actions(r.metadata.get("info", {}).get("task", {}).get("actions")) or [])
        for r in records
    ]
    tasks = sorted({r.task_id for r in records})
    rng = np.random.default_rng(seed)
    flagged: list[float] = []
    labelled: list[float] = []
    unrefined: list[float] = []
    for _ in range(n_splits):
        half = set(rng.permutation(tasks)[: len(tasks) // 2].tolist())
        neutral = outcome_neutral_tools(
            [(r, g, r.outcome == "success") for r, g in items if r.task_id in half]
        )
        held_out = [(r, g) for r, g in items if r.task_id not in half]
        successes = [(r, g) for r, g in held_out if r.outcome == "success"]
        failures = [(r, g) for r, g in held_out if r.outcome == "failure"]
        flagged.append(
            float(
                np.mean(
                    [
                        gold_action_label(r, g, neutral_tools=neutral) is not None
                        for r, g in successes
                    ]
                )
            )
        )
        labelled.append(
            float(
                np.mean(
                    [
                        gold_action_label(r, g, neutral_tools=neutral) is not None
                        for r, g in failures
                    ]
                )
            )
        )
        unrefined.append(
            float(
                np.mean(
                    [diff_actions(_calls(r), g).decisive_step is not None for r, g in successes]
                )
            )
        )
    return {
        "splits": n_splits,
        "successes_flagged": round(float(np.mean(flagged)), 4),
        "failures_labelled": round(float(np.mean(labelled)), 4),
        "successes_flagged_by_first_extra_mutating_call": round(float(np.mean(unrefined)), 4),
    }


def _calls(record: Any) -> list[ToolCall]:
    return [
        ToolCall(s.index, s.tool_name, s.tool_args, s.is_mutating)
        for s in record.steps
        if s.kind == "tool_call"
    ]
