"""Regenerate the tau-bench part of the development set and check the Who&When part.

    .venv/bin/python -m analysis.evaluation.build_devset [--data ../shared/data]

The Who&When part is a hand annotation and is never rewritten: each item is only
checked against the data (the file exists and its ``mistake_step`` and
``mistake_agent`` are the ones annotated). The tau-bench part is computed from the
trajectories: every failed rollout (reward below 1) gets its decisive deviation kind
(``analysis.evaluation.tau_deviations``). Running it twice writes the same file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from analysis.evaluation.devset import (
    DEFAULT_DATA_DIR,
    DEVSET_PATH,
    TAU_AIRLINE_FILE,
    TAU_BENCH,
    WHO_AND_WHEN,
    tau_rollouts,
    who_and_when_rollouts,
)
from analysis.evaluation.tau_deviations import KINDS, decisive_deviation
from ingest.core.records import Outcome

MSG_LABEL_CHANGED = "{item}: the data labels step {found} by {agent!r}, the annotation step {step}."
MSG_NOT_IN_DATA = "{item}: no such Who&When file in {root}."
MSG_NO_STEP = "{item}: no agent action to place the deviation on."

TAU_DESCRIPTION = (
    "Failed gpt-4o airline rollouts (reward < 1): the kind of the decisive deviation from "
    "the gold actions (info.task.actions), computed by rule from "
    "attribution.core.gold_actions.diff_actions; rules in analysis/evaluation/README.md."
)


def tau_items(data_dir: Path) -> list[dict[str, Any]]:
    """One item per failed rollout, in file order."""
    items = []
    for item_id, record, raw in tau_rollouts(data_dir):
        if record.outcome != Outcome.FAILURE:
            continue
        task = (raw.get("info") or {}).get("task") or {}
        deviation = decisive_deviation(record.steps, task.get("actions"), task.get("outputs") or ())
        if deviation.step is None:
            raise ValueError(MSG_NO_STEP.format(item=item_id))
        agent = next(s.agent or s.role for s in record.steps if s.index == deviation.step)
        items.append(
            {
                "id": item_id,
                "task_id": raw["task_id"],
                "trial": raw.get("trial", 0),
                "step": deviation.step,
                "agent": agent,
                "category": deviation.kind,
                "reason": deviation.reason,
                "detail": deviation.detail,
            }
        )
    return items


def check_who_and_when(items: list[dict[str, Any]], data_dir: Path) -> None:
    """Raise when an annotated item no longer matches the Who&When labels in the data."""
    labels = {
        item_id: record.labels[0]
        for item_id, record in who_and_when_rollouts(data_dir)
        if record.labels
    }
    for item in items:
        label = labels.get(item["id"])
        if label is None:
            raise ValueError(MSG_NOT_IN_DATA.format(item=item["id"], root=data_dir))
        if label.step != item["step"] or label.agent != item["agent"]:
            raise ValueError(
                MSG_LABEL_CHANGED.format(
                    item=item["id"], found=label.step, agent=label.agent, step=item["step"]
                )
            )


def rebuild(document: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    check_who_and_when(document[WHO_AND_WHEN]["items"], data_dir)
    items = tau_items(data_dir)
    document[TAU_BENCH] = {
        "source": str(TAU_AIRLINE_FILE),
        "description": TAU_DESCRIPTION,
        "generated_by": "python -m analysis.evaluation.build_devset",
        "categories": list(KINDS),
        "items": items,
    }
    return document


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--out", type=Path, default=DEVSET_PATH)
    args = parser.parse_args(argv)
    document = json.loads(args.out.read_text(encoding="utf-8"))
    document = rebuild(document, args.data)
    args.out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", "utf-8")
    counts: dict[str, int] = {}
    for item in document[TAU_BENCH]["items"]:
        counts[item["category"]] = counts.get(item["category"], 0) + 1
    print(f"{args.out}: {len(document[TAU_BENCH]['items'])} tau-bench items {counts}")


if __name__ == "__main__":
    main()
