"""The names the top misbehaviours get, plain pipeline against the behaviour pipeline.

Run from the repository root (about a minute on 2 cores)::

    .venv/bin/python bench/misbehaviour_names.py

Three sets of wrong steps from the shared data: the Who&When labelled decisive steps,
every agent action of the failed tau-bench airline rollouts, and the demo project (both
data sets' decisive and error steps together, with the successful tau-bench rollouts'
actions assigned for the lift). Each is clustered twice with the default embeddings and
seed 0: ``behaviour=False`` (raw step text, the previous pipeline) and the behaviour
pipeline (masked text, signals, error templates, label reasons). For each run it prints
and writes to ``bench-results/misbehaviour_names.json`` the share unclustered, the
top-8 share and the ten largest misbehaviours with their name, share, signals, suggested
MAST mode and lifts, and, per name, the words issue 12's rule flags (a word in fewer
than 5% of the distinct task texts of the set's steps but in a member's task text;
counted here independently of the product's own check). No parameter is chosen from
these figures.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.common import SHARED_DATA  # noqa: E402

RESULTS = REPO_ROOT / "bench-results" / "misbehaviour_names.json"
TOP = 10


def _sets(behaviour: bool) -> dict[str, Any]:
    from analysis.core.demo import load_demo

    decisive = load_demo(SHARED_DATA, behaviour=behaviour)
    everything = load_demo(SHARED_DATA, behaviour=behaviour, all_failed_steps=True)
    return {
        "who_and_when decisive steps": (
            [s for s in decisive.wrong if decisive.dataset_of[s.rollout] == "who_and_when"],
            [],
            decisive,
        ),
        "tau_bench failed rollouts": (
            [s for s in everything.wrong if everything.dataset_of[s.rollout] == "tau_bench"],
            [],
            everything,
        ),
        "demo project": (decisive.wrong, decisive.success, decisive),
    }


def _words(text: str) -> set[str]:
    tokens = {t.lower().strip("'_") for t in re.findall(r"[A-Za-z0-9_']+", text or "")}
    return tokens | {part for token in tokens for part in token.split("_") if part}


def flagged_words(outcome: Any, every_step: list[Any]) -> dict[int, list[str]]:
    """Cluster label -> the words of its name that break issue 12's rule, literally."""
    texts = {step.task_text for step in every_step if step.task_text}
    frequency = Counter(word for text in texts for word in _words(text))
    members: dict[int, set[str]] = {}
    for step, label in zip(outcome.steps, outcome.labels.tolist()):
        members.setdefault(int(label), set()).add(step.task_text)
    found = {}
    for label, profile in outcome.profiles.items():
        member_words = set().union(*(_words(text) for text in members.get(label, ())))
        named = {t.lower().strip("'_") for t in re.findall(r"[A-Za-z0-9_']+", profile.name)}
        found[label] = sorted(w for w in named & member_words if frequency[w] < 0.05 * len(texts))
    return found


def run() -> dict[str, Any]:
    from analysis.core.pipeline import cluster_wrong_steps

    report: dict[str, Any] = {}
    for behaviour in (False, True):
        pipeline = "behaviour" if behaviour else "plain"
        for name, (wrong, success, demo) in _sets(behaviour).items():
            outcome = cluster_wrong_steps(
                wrong,
                seed=0,
                success_steps=success,
                rollout_failed=demo.rollout_failed if success else None,
                behaviour=behaviour,
                rollout_length=demo.rollout_length,
                rollout_group=demo.rollout_group,
                with_metrics=False,
            )
            top = sorted(outcome.profiles.values(), key=lambda p: (-p.share, p.label))[:TOP]
            # the rule's "project" is what was clustered: these steps and their successes
            flagged = flagged_words(outcome, [*wrong, *success])
            report.setdefault(name, {})[pipeline] = {
                "steps": outcome.metrics["steps"],
                "clusters": outcome.metrics["clusters"],
                "unclustered": round(outcome.metrics["noise_share"], 3),
                "top8_share": round(outcome.metrics["top8_share"], 3),
                "names_breaking_the_rule": sum(1 for words in flagged.values() if words),
                "top": [
                    {
                        "name": p.name,
                        "share": round(p.share, 3),
                        "size": p.size,
                        "signals": {k: v for k, v in p.signals.items() if v >= 0.5},
                        "mast": p.suggested_category,
                        "generalises": p.generalises,
                        "lift": p.lift,
                        "lift_unadjusted": p.lift_unadjusted,
                        "lift_adjusted": p.lift_adjusted,
                        "flagged_words": flagged[p.label],
                    }
                    for p in top
                ],
            }
    return report


def main() -> None:
    report = run()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for name, runs in report.items():
        for pipeline, result in runs.items():
            print(
                f"== {name} / {pipeline}: {result['steps']} steps, {result['clusters']} "
                f"misbehaviours, unclustered {result['unclustered']:.0%}, "
                f"top 8 {result['top8_share']:.0%}, names breaking the rule: "
                f"{result['names_breaking_the_rule']}"
            )
            for item in result["top"]:
                lifts = ""
                if item["lift_unadjusted"] is not None or item["lift_adjusted"] is not None:
                    lifts = f" lift {item['lift_unadjusted']} / adjusted {item['lift_adjusted']}"
                print(f"  {item['share']:6.1%} {item['mast'] or '-':8} {item['name']}{lifts}")


if __name__ == "__main__":
    main()
