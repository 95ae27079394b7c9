"""The demo data set: wrong steps of Who&When and tau-bench airline, parsed from files.

Used by the benchmark and the tests; the Django side reads the database instead.

Example (needs the shared data folder):
    >>> demo = load_demo("/nonexistent")
    >>> len(demo.wrong), len(demo.success)
    (0, 0)
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from analysis.core.behaviour import with_signals
from analysis.core.selection import RolloutFacts, comparison_steps, wrong_steps
from analysis.core.steps import WrongStep
from attribution.core.gold_actions import gold_actions

WHO_AND_WHEN_GLOB = "who_and_when/Who&When/*/*.json"
TAU_AIRLINE = "tau_bench/historical_trajectories/gpt-4o-airline.json"


@dataclass
class DemoData:
    wrong: list[WrongStep] = field(default_factory=list)
    success: list[WrongStep] = field(default_factory=list)
    rollout_failed: dict[str, bool] = field(default_factory=dict)
    dataset_of: dict[str, str] = field(default_factory=dict)  # rollout key -> data set
    rollout_length: dict[str, int] = field(default_factory=dict)  # rollout key -> steps
    rollout_group: dict[str, str] = field(default_factory=dict)  # rollout key -> environment


def _records(data_dir: Path) -> Iterator[tuple[str, object]]:
    from ingest.parsers import get_parser

    for path in sorted(glob.glob(str(data_dir / WHO_AND_WHEN_GLOB))):
        with open(path, "rb") as stream:
            for record in get_parser("who_and_when").parse(stream, filename=path):
                yield "who_and_when", record
    tau = data_dir / TAU_AIRLINE
    if tau.exists():
        with open(tau, "rb") as stream:
            for record in get_parser("tau_bench").parse(stream, filename=str(tau)):
                yield "tau_bench", record


def load_demo(
    data_dir: str | os.PathLike[str], *, all_failed_steps: bool = False, behaviour: bool = True
) -> DemoData:
    """Wrong steps (labels and error signals) plus comparison steps of successful rollouts.

    With ``behaviour`` the steps carry their behaviour signals, task text, label reason
    and the gold-action deviations (tau-bench), as the Django side fills them.
    """
    demo = DemoData()
    for dataset, record in _records(Path(data_dir)):
        rollout = RolloutFacts(
            key=f"{dataset}:{record.external_id}",  # type: ignore[attr-defined]
            failed=record.outcome == "failure",  # type: ignore[attr-defined]
            environment=record.environment,  # type: ignore[attr-defined]
            task=record.task_id,  # type: ignore[attr-defined]
            policy_model=record.policy_model or record.agent_system,  # type: ignore[attr-defined]
        )
        steps = record.steps  # type: ignore[attr-defined]
        demo.rollout_failed[rollout.key] = rollout.failed
        demo.dataset_of[rollout.key] = dataset
        demo.rollout_length[rollout.key] = len(steps)
        demo.rollout_group[rollout.key] = rollout.environment or dataset
        labels = record.labels  # type: ignore[attr-defined]
        labelled = [label.step for label in labels]
        wrong = wrong_steps(rollout, steps, labelled=labelled, all_failed_steps=all_failed_steps)
        if not rollout.failed:
            wrong = comparison_steps(rollout, steps)
        if behaviour:
            metadata = record.metadata or {}  # type: ignore[attr-defined]
            raw_gold = ((metadata.get("info") or {}).get("task") or {}).get("actions")
            wrong = with_signals(
                wrong,
                steps,
                task_text=record.task_text or "",  # type: ignore[attr-defined]
                gold=gold_actions(raw_gold),
                reasons={label.step: label.reason for label in labels if label.reason},
            )
        (demo.wrong if rollout.failed else demo.success).extend(wrong)
    return demo
