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

import numpy as np

from attribution.core.gold_actions import gold_actions
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
