"""Print what the Who&When annotator read: each run's question, reason and labelled step.

    .venv/bin/python -m analysis.evaluation.annotation_sheet --start 0 --stop 25

The 184 items were read in batches of about 25 in this form (the step's text cut to
``--width`` characters, its head and its tail), and each was given one MAST mode by the
rules in README.md. Item numbers follow the order of ``data/devset.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from analysis.evaluation.devset import DEFAULT_DATA_DIR, who_and_when_rollouts


def cut(text: str, width: int) -> str:
    """The text on one line, cut to about ``width`` characters keeping head and tail.

    >>> cut("a  b\\nc", 10), cut("abcdefghij", 4)
    ('a b c', 'ab ….. ij')
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    head = int(width * 0.7)
    return f"{flat[:head]} ….. {flat[len(flat) - (width - head) :]}"


def sheet(data_dir: Path, start: int, stop: int, width: int) -> list[str]:
    lines = []
    for number, (item_id, record) in enumerate(who_and_when_rollouts(data_dir)):
        if not start <= number < stop or not record.labels:
            continue
        label = record.labels[0]
        step = record.steps[label.step]
        lines.append(
            f"#{number} {item_id} step={label.step}/{len(record.steps)} "
            f"agent={label.agent} (speaker {step.agent})"
        )
        lines.append(f"  Q: {cut(record.task_text, 160)}")
        lines.append(f"  REASON: {label.reason}")
        lines.append(f"  STEP: {cut(step.content, width)}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--stop", type=int, default=25)
    parser.add_argument("--width", type=int, default=600)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR)
    args = parser.parse_args(argv)
    print("\n".join(sheet(args.data, args.start, args.stop, args.width)))


if __name__ == "__main__":
    main()
