"""The report's discussion and transfer table, every figure read from the report itself.

Example:
    >>> transfer_section({"alpha": 0.2, "n_splits": 1, "rows": []})[0].startswith("| source")
    True
"""

from __future__ import annotations

from typing import Any

from attribution.evaluation.experiments import ALPHAS, SUBSETS
from attribution.evaluation.report_json import SCORER_TITLES, conformal_row, fmt_pm
from attribution.evaluation.set_families import MODE_OUTWARD
from attribution.evaluation.transfer import shipped_scorer_verdict


def _removal(subset: dict[str, Any], scorer: str, alpha: float) -> float:
    row = conformal_row(subset["conformal"], scorer, "two_sided", "none", alpha)
    return float(row["removal"]["mean"]) if row and "removal" in row else float("nan")


def _selection(subset: dict[str, Any], **params: Any) -> dict[str, Any] | None:
    for row in subset.get("model_selection", []):
        if all(row["params"].get(k) == v for k, v in params.items()):
            return row
    return None


def discussion(report: dict[str, Any]) -> list[str]:
    """What the numbers say, with every figure read from the report itself."""
    # The Who&When bullets speak of Who&When only; the airline set has its own below.
    by_name = {s["name"]: s for s in report["subsets"] if s["name"] in SUBSETS}
    lines = []
    coverage_bits = []
    worst = 0.0
    for name, subset in by_name.items():
        means = []
        for alpha in ALPHAS:
            row = conformal_row(subset["conformal"], "learned", "two_sided", "none", alpha)
            if row and "coverage" in row:
                means.append(f"{row['coverage']['mean']:.3f} at {alpha}")
                error = row["coverage"]["std"] / max(row["coverage"]["n"], 1) ** 0.5
                if error > 0:
                    worst = max(worst, (1 - alpha - row["coverage"]["mean"]) / error)
        coverage_bits.append(f"{name}: {', '.join(means)}")
    lines.append(
        "- **Coverage holds on average.** Mean test coverage of the pooled two-sided sets is "
        + "; ".join(coverage_bits)
        + f". None is more than {worst:.1f} standard errors below 1 - alpha (the standard error "
        "is the split-to-split sd over the square root of the number of splits). A single split "
        "is much noisier (sd column): with 38 or 19 calibration rollouts one calibration can be "
        "several points off, which is why the calibration page monitors coverage on later labels."
    )
    lines.append(
        "- **Per length bucket.** Only Algorithm-Generated's 9-16 bucket has 20 test rollouts per "
        "split; no Hand-Crafted bucket does, and with 19 calibration rollouts no Hand-Crafted "
        "bucket reaches the 20 labels needed for its own tau, so Mondrian calibration falls back "
        "to the pooled tau there and its rows equal the pooled ones. The bucket table shows where "
        "pooled calibration under-covers a bucket and Mondrian calibration restores it."
    )
    removal_bits = []
    for name, subset in by_name.items():
        baselines = max(_removal(subset, k, 0.2) for k in SCORER_TITLES if k != "learned")
        removal_bits.append(
            f"{name} {_removal(subset, 'learned', 0.2):.3f} (best baseline {baselines:.3f})"
        )
    lines.append(
        "- **Removal is below the 0.5 goal.** At alpha 0.2 the learned scorer removes "
        + ", ".join(removal_bits)
        + ". The sets are contiguous and two-sided, so they must stretch from where the early "
        "tail drops below tau to where the late tail does; with a scorer whose top step is right "
        "less than half of the time the mass is spread and the interval stays wide. A better "
        "scorer is the lever: every baseline removes less on the same splits."
    )
    accuracy_bits = []
    for name, subset in by_name.items():
        ours = subset["accuracy"]["learned"]
        a2p = subset["published"].get("A2P", {}).get("step", float("nan"))
        agent = subset["published"].get("all-at-once (GPT-4o)", {}).get("agent", float("nan"))
        accuracy_bits.append(
            f"{name}: step {ours['step']['mean']:.1f}% (A2P {a2p:.2f}%, constant position "
            f"{subset['accuracy']['constant_position']['step']['mean']:.1f}%), agent "
            f"{ours['agent']['mean']:.1f}% (all-at-once GPT-4o {agent:.2f}%)"
        )
    lines.append(
        "- **Point estimate without an LLM.** "
        + "; ".join(accuracy_bits)
        + ". The learned scorer beats every published GPT-4o baseline and the position-only "
        "baselines on both subsets, but not A2P, which calls an LLM per step: that goal is missed."
    )
    choice = []
    for name, subset in by_name.items():
        pointwise = _selection(
            subset, objective="pointwise", C=0.01, text_buckets=64, temperature=1.0
        )
        softmax = [
            r for r in subset.get("model_selection", []) if r["params"]["objective"] == "softmax"
        ]
        if pointwise and softmax:
            best = max(softmax, key=lambda r: r["step"]["mean"])
            choice.append(
                f"{name}: pointwise {pointwise['step']['mean']:.1f}% / removal "
                f"{pointwise['removal_0.2']['mean']:.3f} against the most accurate softmax row "
                f"{best['step']['mean']:.1f}% / {best['removal_0.2']['mean']:.3f}"
            )
    if choice:
        lines.append(
            "- **Why the pointwise objective.** Both objectives end in a per-trajectory softmax; "
            "the default trains a balanced logistic regression per step (C = 0.01, 64 hashed word "
            "buckets) rather than the conditional logit. It has the best step accuracy on both "
            "subsets and more removal than the most accurate softmax row ("
            + "; ".join(choice)
            + "), at a somewhat worse "
            "log-likelihood. A sharper temperature (0.5) adds a little removal but was not adopted: "
            "it was one extra row, not a held-out choice."
        )
    lines.append(
        "- **One-sided variants.** `left` promises only that the decisive step is not before the "
        "rollback point lo, which is the guarantee a restart needs; it keeps more steps. `right` "
        "bounds the set from above only. Both keep their coverage; compare their removal in the "
        "variant tables."
    )
    lines += _set_family_bullet(report)
    lines += _content_bullet(by_name)
    lines += _variants_bullet(report)
    lines += _hazard_bullet(report)
    lines += _airline_bullet(report)
    if report.get("transfer"):
        lines.append(_transfer_bullet(report["transfer"]))
    lines.append(
        "- **Caveats.** Both Who&When subsets have one rollout per task, so grouping by task equals "
        "grouping by rollout; the hyperparameter grid was evaluated on the same data as the headline "
        "numbers; the numbers describe small benchmarks (126, 58 and 112 rollouts), not a "
        "project's own agent."
    )
    return lines


def _content_bullet(by_name: dict[str, Any]) -> list[str]:
    bits = []
    better_step = better_removal = 0
    for name, subset in by_name.items():
        plain = _selection(subset, objective="pointwise", C=0.01, text_buckets=64, temperature=1.0)
        content = _selection(subset, objective="pointwise", content=True)
        if plain and content and not plain["params"].get("content"):
            better_step += content["step"]["mean"] > plain["step"]["mean"]
            better_removal += content["removal_0.2"]["mean"] > plain["removal_0.2"]["mean"]
            bits.append(
                f"{name}: step {content['step']['mean']:.1f}% against {plain['step']['mean']:.1f}%, "
                f"removal {content['removal_0.2']['mean']:.3f} against "
                f"{plain['removal_0.2']['mean']:.3f}"
            )
    if not bits:
        return []
    adopted = better_step == len(bits) and better_removal == len(bits)
    return [
        "- **Content features.** Where the final answer's content first enters, what each step "
        "introduced that survives to the end, values stated without support, the first error "
        "and agent hand-offs, and per-column 'is the rollout's maximum / first' indicators "
        "(`attribution/core/content_features.py`, `LearnedScorer(content=True)`), against the "
        "default: "
        + "; ".join(bits)
        + f". Better step accuracy on {better_step} of {len(bits)} subsets, better removal on "
        f"{better_removal} of {len(bits)}: "
        + (
            "an improvement on every subset."
            if adopted
            else "not an improvement on every subset, so the default keeps them off."
        )
        + " Gradient-boosted trees (sklearn HistGradientBoosting, `objective='boosted'`) were "
        "measured once with `python bench/attribution_scorer_variants.py` (grouped CV, 3 "
        "repeats, 50 splits; figures in its docstring): below the linear model's step accuracy "
        "on Algorithm-Generated at about 40 times the fitting time, so they stay out of the grid."
    ]


VARIANT_KEYS = ("structure", "agent_stage", "stacked")
VARIANT_TITLES = {
    "structure": "structure features",
    "agent_stage": "agent then step",
    "stacked": "stacked rollout-relative stage",
}


def _variant_name(params: dict[str, Any]) -> str:
    parts = [VARIANT_TITLES[k] for k in VARIANT_KEYS if params.get(k)]
    if params["objective"] == "pairwise":
        parts.insert(0, "pairwise")
    return " + ".join(parts)


def _variants_bullet(report: dict[str, Any]) -> list[str]:
    """Every ranking / two-stage / rollout-relative row against the default, on every set."""
    default = {"objective": "pointwise", "C": 0.01, "text_buckets": 64, "temperature": 1.0}
    sets = [s for s in report["subsets"] if s.get("model_selection")]
    if not sets:
        return []
    variants = [
        r["params"]
        for r in sets[0]["model_selection"]
        if r["params"]["objective"] == "pairwise" or any(r["params"].get(k) for k in VARIANT_KEYS)
    ]
    bits, adopted = [], []
    for params in variants:
        figures, wins = [], 0
        for subset in sets:
            rows = subset["model_selection"]
            base = next((r for r in rows if r["params"] == default), None)
            row = next((r for r in rows if r["params"] == params), None)
            if base is None or row is None:
                continue
            wins += row["step"]["mean"] > base["step"]["mean"]
            figures.append(
                f"{subset['name']} {row['step']['mean']:.1f}% / {row['removal_0.2']['mean']:.3f}"
                f" (default {base['step']['mean']:.1f}% / {base['removal_0.2']['mean']:.3f})"
            )
        if wins == len(sets):
            adopted.append(_variant_name(params))
        bits.append(
            f"{_variant_name(params)}: {'; '.join(figures)}, better step accuracy on {wins} "
            f"of {len(sets)}"
        )
    verdict = (
        "Better on every set, and so a candidate: " + ", ".join(adopted) + "."
        if adopted
        else "None is better on every set, so the default stays as it is; no variant was "
        "adopted for a gain on one set, as the product is judged on systems it has not seen."
    )
    return [
        "- **Ranking, rollout-relative and two-stage variants.** A pairwise objective (the "
        "decisive step against every other step of its rollout, each rollout weighted once), an "
        "agent-then-step two-stage (each step's probability times its agent's mass), "
        "rollout-structure features (signed distance to the first error, the first step of the "
        "agent that wrote the final answer, the first step whose content the final answer "
        "carries; `attribution/core/structure_features.py`) and a stacked second stage over "
        "where each step's out-of-fold first-stage score sits in its rollout (gap to the best, "
        "rank, top; `attribution/core/scorers/ranking.py`), step accuracy / removal at 0.2 in "
        "the model-selection rows: " + "; ".join(bits) + ". " + verdict + _left_sets(report)
    ]


def _hazard_bullet(report: dict[str, Any]) -> list[str]:
    """The first-event objective's rows against the default, on every set; a row is adopted
    only if it beats the default's step accuracy on every set without losing removal."""
    default = {"objective": "pointwise", "C": 0.01, "text_buckets": 64, "temperature": 1.0}
    sets = [s for s in report["subsets"] if s.get("model_selection")]
    grid = [r["params"] for r in sets[0]["model_selection"]] if sets else []
    hazards = [p for p in grid if p["objective"] == "hazard"]
    if not hazards:
        return []
    same = {**default, "objective": "hazard"}
    figures, counts, adopted = [], [], []
    spans = []
    for subset in sets:
        base = _selection(subset, **default)
        removals = [
            r["removal_0.2"]["mean"]
            for r in subset["model_selection"]
            if r["params"]["objective"] == "hazard"
        ]
        if base is not None and removals:
            spans.append(
                f"{subset['name']} {min(removals):.3f}-{max(removals):.3f} (default "
                f"{base['removal_0.2']['mean']:.3f})"
            )
    for params in hazards:
        step_wins = removal_kept = 0
        for subset in sets:
            base = _selection(subset, **default)
            row = _selection(subset, **params)
            if base is None or row is None:
                continue
            step_wins += row["step"]["mean"] > base["step"]["mean"]
            removal_kept += row["removal_0.2"]["mean"] >= base["removal_0.2"]["mean"]
            if params == same:
                figures.append(
                    f"{subset['name']} {row['step']['mean']:.1f}% / NLL {row['nll']['mean']:.2f}"
                    f" / {row['removal_0.2']['mean']:.3f} (default {base['step']['mean']:.1f}%"
                    f" / {base['nll']['mean']:.2f} / {base['removal_0.2']['mean']:.3f})"
                )
        counts.append(
            f"C = {params['C']}, {params['text_buckets']} buckets: {step_wins} "
            f"(removal kept on {removal_kept})"
        )
        if step_wins == removal_kept == len(sets):
            adopted.append(f"C = {params['C']}, {params['text_buckets']} buckets")
    return [
        "- **First-event (hazard) objective.** The decisive step is the earliest that goes "
        "wrong, while signs of it come back later, so `objective='hazard'` fits a per-step "
        "hazard h_i = sigmoid(w . x_i) on the steps up to and including the labelled one (the "
        "later steps carry no information) and gives P(i) = h_i * prod_{j<i} (1 - h_j), "
        "normalised over the rollout (`attribution/core/scorers/hazard.py`). Step accuracy / "
        "NLL / removal at 0.2 with the default's C and buckets: "
        + "; ".join(figures)
        + f". On how many of the {len(sets)} sets each of the {len(hazards)} hazard rows "
        "(the pointwise rows' C and buckets) beats the default's step accuracy: "
        + "; ".join(counts)
        + ". Removal at 0.2 over the hazard rows: "
        + "; ".join(spans)
        + ". "
        + (
            "Better on every set without losing removal, and so adopted: "
            + "; ".join(adopted)
            + "."
            if adopted
            else "No row beats the default on every set, so it is not adopted."
        )
    ]


def _left_sets(report: dict[str, Any]) -> str:
    less = [
        s["name"]
        for s in report["subsets"]
        if _removal(s, "learned", 0.2) > _one_sided_removal(s, "left", 0.2)
    ]
    return (
        f" One-sided `left` sets, the other lever for removal, remove less than the two-sided "
        f"ones at alpha 0.2 on {len(less)} of {len(report['subsets'])} sets (variant tables): "
        "they keep every step after the rollback point."
    )


def _set_family_bullet(report: dict[str, Any]) -> list[str]:
    """The rival nested family (grown outward from the mode) against the product's tails."""
    bits = []
    wins = 0
    for subset in report["subsets"]:
        tails = _one_sided_removal(subset, "two_sided", 0.2)
        grown = _one_sided_removal(subset, MODE_OUTWARD, 0.2)
        row = conformal_row(subset["conformal"], "learned", MODE_OUTWARD, "none", 0.2)
        if row is None or "coverage" not in row:
            continue
        wins += grown > tails
        bits.append(
            f"{subset['name']} {grown:.3f} against {tails:.3f} "
            f"(coverage {row['coverage']['mean']:.3f})"
        )
    if not bits:
        return []
    verdict = (
        "It removes more on every set: worth a place in the product."
        if wins == len(bits)
        else f"It removes more on {wins} of {len(bits)} sets, so the product keeps equal-mass "
        "tails: the removal goal is not lost to the shape of the sets."
    )
    return [
        "- **Another set family.** Growing one interval from the most probable step toward its "
        "more probable neighbour (the shortest interval of a given mass when the scores have one "
        "peak) is as valid under split conformal calibration; whether it removes more is "
        "empirical. Removal at alpha 0.2, grown against two-sided tails, on the same splits: "
        + "; ".join(bits)
        + f". {verdict}"
    ]


def _one_sided_removal(subset: dict[str, Any], variant: str, alpha: float) -> float:
    row = conformal_row(subset["conformal"], "learned", variant, "none", alpha)
    return float(row["removal"]["mean"]) if row and "removal" in row else float("nan")


def _airline_bullet(report: dict[str, Any]) -> list[str]:
    airline = [s for s in report["subsets"] if s["name"] not in SUBSETS]
    lines = []
    for subset in airline:
        row = conformal_row(subset["conformal"], "learned", "two_sided", "none", 0.2)
        heuristic = subset["accuracy"]["heuristic"]["step"]["mean"]
        if row is None or "removal" not in row:
            continue
        lines.append(
            f"- **{subset['name']}.** {subset['trajectories']} failed rollouts of "
            f"{subset['tasks']} tasks labelled by the gold-action rule, no hand label: step "
            f"accuracy {subset['accuracy']['learned']['step']['mean']:.1f}% (heuristic "
            f"{heuristic:.1f}%), coverage at alpha 0.2 {fmt_pm(row['coverage'])}, removal "
            f"{fmt_pm(row['removal'])}. The scorer learns the rule's step (mostly a mutating "
            "call), which is what the guarantee then refers to."
        )
    check = report.get("gold_rule_check")
    if check:
        lines.append(
            "- **How much to trust the gold-action rule.** A successful rollout has no decisive "
            "error, so a label on one is a false alarm. With the outcome-neutral tools taken from "
            f"a random half of the tasks and the rule judged on the other half ({check['splits']} "
            f"splits), it labels {100 * check['successes_flagged']:.1f}% of the held-out "
            f"successes and {100 * check['failures_labelled']:.1f}% of the held-out failures; "
            "the plain rule (first mutating call no gold action matches) labels "
            f"{100 * check['successes_flagged_by_first_extra_mutating_call']:.1f}% of the "
            "successes. Failed calls (error results), prose arguments (a hand-off summary) and "
            "tools that successes deviate with as often as failures make the difference."
        )
    lines.append(
        "- **Per agent system.** The product calibrates tau per agent system "
        "(`attribution/core/system_calibration.py`); a system with fewer than m labels, "
        "ceil((m+1)(1-alpha)) > m (9 at alpha 0.1), gets the scorer's ranking and its deficit, "
        "no set, unless the project opts in to borrowing another system's calibration, which "
        "the rollout page then says. The labelling queue (`attribution/core/labelling_queue.py`) "
        "asks for those deficits first, in a random order, since calibration labels must stay "
        "exchangeable with the rollouts they cover. A system with fewer unlabelled failed "
        "rollouts than its deficit comes last (reason `short`): labelling all of them still "
        "brings no claim, and the queue page and its rollouts say so and point to uploading "
        "more of its rollouts or borrowing a calibration (a trial of `make run` found two "
        "such systems, of 2 and 4 failed rollouts, in the queue's first four places)."
    )
    return lines


def _transfer_bullet(transfer: dict[str, Any]) -> str:
    verdict = shipped_scorer_verdict(transfer)
    return (
        f"- **No shipped pre-trained scorer.** Trained on one labelled set and applied to another, "
        f"the learned scorer beats the label-free heuristic in {verdict['step']} of "
        f"{verdict['pairs']} pairs on step accuracy and in {verdict['removal']} of "
        f"{verdict['pairs']} on removal (table above); trained on all the other sets together, "
        f"in {verdict['others_step']} of {verdict['others']} targets on step accuracy and in "
        f"{verdict['others_removal']} of {verdict['others']} on removal. A model of some agent "
        "systems' decisive steps does not carry over to another system's, so projects with "
        "fewer than 40 labels keep the heuristic; the gain comes from a project's own labels, "
        "hand-made or from gold actions."
    )


def transfer_section(transfer: dict[str, Any]) -> list[str]:
    """The transfer table: the shipped learned scorer against the heuristic, per pair."""
    lines = [
        f"| source (trained on) | target | scorer | step accuracy % | NLL | coverage at "
        f"{transfer['alpha']} | removal at {transfer['alpha']} |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in transfer["rows"]:
        for scorer, title in (("learned", "learned on the source"), ("heuristic", "heuristic")):
            figures = row[scorer]
            source = row["source"] if scorer == "learned" else "(no training)"
            lines.append(
                f"| {source} | {row['target']} | {title} | {figures['step']:.1f} | "
                f"{figures['nll']:.3f} | {fmt_pm(figures['coverage'])} | "
                f"{fmt_pm(figures['removal'])} |"
            )
    lines += [
        "",
        f"Calibration on a random half of the target's tasks, {transfer['n_splits']} splits.",
    ]
    return lines


PER_SYSTEM_TITLES = {
    "own_scorer": "own scorer, own labels (the product)",
    "per_system": "one scorer of all systems, per-system tau",
    "pooled": "pooled over the project",
    "pooled_without_own": "pooled, the system's own labels left out",
}


def per_system_section(per_system: dict[str, Any]) -> list[str]:
    """Coverage and removal per agent system under pooled and per-system calibration."""
    lines = [
        "| agent system | alpha | calibration | coverage (mean ± sd) | removal |",
        "|---|---|---|---|---|",
    ]
    for row in per_system["rows"]:
        lines.append(
            f"| {row['system']} | {row['alpha']} | {PER_SYSTEM_TITLES[row['calibration']]} | "
            f"{fmt_pm(row['coverage'])} | {fmt_pm(row['removal'])} |"
        )
    gaps = {
        kind: [
            abs(r["coverage"]["mean"] - (1 - r["alpha"]))
            for r in per_system["rows"]
            if r["calibration"] == kind
        ]
        for kind in PER_SYSTEM_TITLES
    }
    below = {
        kind: sum(
            r["coverage"]["mean"] < 1 - r["alpha"] - 0.02
            for r in per_system["rows"]
            if r["calibration"] == kind
        )
        for kind in PER_SYSTEM_TITLES
    }
    claims = per_system["claims_without_own_labels"]
    made = sum(c["claim_rate"] > 0 for c in claims)
    lines += [
        "",
        f"{per_system['n_splits']} splits. With a system's own labels left out, the per-system "
        f"calibration claimed coverage for it in {made} of {len(claims)} system-alpha cells "
        "(no claim: only the ranking and the labels it needs); the pooled tau claims it in all.",
        "Mean distance of the mean coverage from 1 - alpha: "
        + ", ".join(
            f"{PER_SYSTEM_TITLES[kind]} {sum(values) / max(len(values), 1):.3f} "
            f"({below[kind]} cells more than 0.02 below)"
            for kind, values in gaps.items()
        )
        + ". With one scorer trained on all three systems the scores of these three are close "
        "enough that pooling costs little here; the per-system calibration is what keeps that "
        "an observation rather than an assumption, and what refuses a claim without labels.",
    ]
    removal = {
        (r["system"], r["calibration"], r["alpha"]): r["removal"]["mean"]
        for r in per_system["rows"]
    }
    compared = [
        f"{system} {removal[(system, 'own_scorer', alpha)]:.3f} against "
        f"{removal[(system, 'per_system', alpha)]:.3f} at {alpha}"
        for (system, kind, alpha) in sorted(removal)
        if kind == "own_scorer" and (system, "per_system", alpha) in removal
    ]
    if compared:
        lines.append(
            "Removal with each system's own scorer against one scorer trained on all systems "
            "(both with per-system tau): " + "; ".join(compared) + "."
        )
    return lines
