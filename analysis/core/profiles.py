"""What each misbehaviour is: a name, exemplars, its size and share, spread and lift.

The name comes from what most members share (:mod:`analysis.core.naming`), with the words
that set the cluster apart from the others (:mod:`analysis.core.distinctive_terms`) kept
beside it as its terms.

Example:
    >>> failure_lift(failed=3, total=4, base_rate=0.5)
    1.5
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from analysis.core.cluster import NOISE
from analysis.core.cluster_summary import summarise
from analysis.core.diagnoses import diagnosis_phrases
from analysis.core.distinctive_terms import class_tfidf_terms
from analysis.core.lift import (
    LiftEstimate,
    comparable,
    generalises,
    length_strata,
    recurs_in,
    rollout_outcomes,
)
from analysis.core.lift import (
    failure_lift as stratified_lift,
)
from analysis.core.mast import mast_suggestion
from analysis.core.name_collisions import tell_apart
from analysis.core.naming import DOMINANT, dominant_signals, is_loose, name_cluster
from analysis.core.phrases import NameVocabulary, key_phrases_with_shares, spread_sample
from analysis.core.representation import StepRepresenter
from analysis.core.steps import WrongStep, action_pattern

MAST_TEXT_CHARS = 4000
EXEMPLARS = 5
NAME_TERMS = 3


@dataclass
class MisbehaviourProfile:
    """One cluster of wrong steps, described. ``label`` is HDBSCAN's cluster number."""

    label: int
    size: int
    weight: float
    share: float
    name: str
    terms: list[str]
    pattern: str
    pattern_share: float
    exemplars: list[str]
    environments: dict[str, int] = field(default_factory=dict)
    tasks: int = 0
    policy_models: dict[str, int] = field(default_factory=dict)
    rollouts: int = 0
    # How many tasks / environments / policy models it recurs in: where its members weigh
    # at least half a wrong step (analysis.core.lift.recurs_in); "generalises" counts these.
    recurs: dict[str, int] = field(default_factory=dict)
    generalises: bool = False
    lift: float | None = None
    # Crude and length-stratified (Mantel-Haenszel) failure risk ratios (analysis.core.lift).
    lift_unadjusted: float | None = None
    lift_adjusted: float | None = None
    # Rollouts containing it in the lengths the adjusted lift compares, and why a lift is
    # missing (a GAP_* code of analysis.core.lift: the crude one's, else the adjusted one's).
    lift_adjusted_rollouts: int = 0
    lift_gap: str = ""
    signals: dict[str, float] = field(default_factory=dict)  # share of members with each
    template: str = ""  # the error template most members drew
    suggested_category: str | None = None  # a MAST code (analysis.core.mast)
    # The share of members pointing to it, and whether a signal or their wording does.
    suggested_support: float | None = None
    suggested_basis: str = ""
    # The label of the larger cluster of the same name when only an ordinal told the two
    # apart (analysis.core.name_collisions.resolve_names): the pipeline makes them one.
    untold_with: int | None = None
    # Its members share no signal, agent, tool, error, phrase or diagnosis: only wording.
    loose: bool = False

    def shared_pattern(self) -> str:
        """The action pattern most members follow, "" when none does: the most common of
        34 steps by 31 experts was "Computer_terminal message", which 2 of them were."""
        return self.pattern if self.pattern_share >= DOMINANT else ""


def dominant_pattern(steps: Sequence[WrongStep]) -> tuple[str, float]:
    """The most common action pattern of the steps and its share.

    >>> s = [WrongStep(key=str(i), rollout="r", index=i, kind="tool_call",
    ...                tool_name="book_reservation" if i < 3 else "get_user")
    ...      for i in range(4)]
    >>> dominant_pattern(s)
    ('calls book_reservation', 0.75)
    """
    if not steps:
        return "", 0.0
    counts = Counter(action_pattern(step) for step in steps)
    pattern, count = min(counts.items(), key=lambda item: (-item[1], item[0]))
    return pattern, count / len(steps)


def misbehaviour_name(pattern: str, pattern_share: float, terms: Sequence[str]) -> str:
    """A short readable name: the dominant action when it dominates, then distinctive words.

    >>> misbehaviour_name("calls book_reservation", 0.9, ["gift", "balance", "card"])
    'calls book_reservation: gift, balance, card'
    >>> misbehaviour_name("WebSurfer message", 0.3, ["pdf", "download"])
    'pdf, download'
    """
    words = ", ".join(terms[:NAME_TERMS])
    if pattern and pattern_share >= 0.5:
        return f"{pattern}: {words}" if words else pattern
    return words or pattern or "unnamed"


def failure_lift(*, failed: float, total: float, base_rate: float | None) -> float | None:
    """Failure rate of the rollouts containing a misbehaviour over the overall rate.

    None when it cannot be told: no rollout contains it, or every rollout (or none)
    failed, so there is nothing to compare against.
    """
    if total == 0 or base_rate is None or base_rate <= 0 or base_rate >= 1:
        return None
    return round((failed / total) / base_rate, 4)


def _mast_texts(
    representer: StepRepresenter, group: Sequence[WrongStep], docs: list[str]
) -> list[str]:
    """Per member: its masked label reason (a diagnosis) when it has one, else its text."""
    return [
        (representer.reason_text(step) if step.reason else doc)[:MAST_TEXT_CHARS]
        for step, doc in zip(group, docs)
    ]


def describe_clusters(
    steps: Sequence[WrongStep],
    labels: np.ndarray,
    probabilities: np.ndarray,
    *,
    assigned_success: Sequence[tuple[str, int]] = (),
    rollout_failed: Mapping[str, bool] | None = None,
    success_scale: float = 1.0,
    representer: StepRepresenter | None = None,
    rollout_length: Mapping[str, int] | None = None,
    rollout_group: Mapping[str, str] | None = None,
    sampled_success: Collection[str] | None = None,
    modes: Sequence[Mapping[str, str]] | None = None,
    task_texts: Iterable[str] | None = None,
    assigned_failure: Sequence[tuple[str, int]] = (),
    sampled_failure: Collection[str] | None = None,
    failure_scale: float = 1.0,
) -> dict[int, MisbehaviourProfile]:
    """A profile for every cluster (noise excluded), keyed by cluster label.

    ``assigned_success`` holds ``(rollout, label)`` pairs for steps of successful rollouts
    that were assigned to the clusters (never clustered themselves): with
    ``rollout_failed`` (every rollout of the project) they give the failure-rate lift.
    When only a sample of the successful rollouts was assigned, ``success_scale`` (all
    successes / sampled successes) scales their count back up; ``sampled_success`` names
    the sampled rollouts (needed for the stratified lifts when the scale is not 1).
    ``assigned_failure``, ``sampled_failure`` and ``failure_scale`` are the same for a
    sample of the failed rollouts, every agent action of each assigned: given them, a
    rollout contains a misbehaviour for the lifts only by assignment, on both sides. A
    failed rollout counted by its wrong steps and a successful one by all its actions
    made a behaviour that every success shares look protective (a planner's turn: 0.20x
    for a phrase said in seven failed rollouts and no success).
    ``rollout_length`` (steps per rollout) and ``rollout_group`` (its environment) give
    the length-stratified lift, compared only in groups with successes. Names and the
    suggested MAST code (from ``modes``, MAST's shipped modes by default) come from the
    members' masked text, signals and error templates (``representer``, fitted on the
    steps when not given). No name holds a word that is rare across ``task_texts`` (the
    project's task texts; by default those the representer was fitted on) but occurs in
    a member's task text: issue 12's rule, read literally.
    """
    if representer is None:
        representer = StepRepresenter().fit(steps)
    total_weight = float(sum(step.weight for step in steps)) or 1.0
    members: dict[int, list[int]] = defaultdict(list)
    for position, label in enumerate(labels.tolist()):
        members[int(label)].append(position)
    clustered = sorted(label for label in members if label != NOISE)
    docs = {
        label: [representer.naming_text(steps[position]) for position in positions]
        for label, positions in members.items()
    }
    patterns = {
        label: dominant_pattern([steps[p] for p in positions])
        for label, positions in members.items()
    }
    # A name's words never include a rare word of a member's task text, even one the
    # member's own masking let through (it came from another member's task).
    exclude = {
        label: set(pattern.split()).union(
            *(representer.task_words(steps[position]) for position in members[label])
        )
        for label, (pattern, _) in patterns.items()
    }
    terms = class_tfidf_terms(docs, top_n=8, min_doc_share=0.1, exclude=exclude)
    vocabulary = NameVocabulary.from_texts(task_texts) if task_texts is not None else None
    forbidden = {
        label: representer.forbidden([steps[position] for position in positions], vocabulary)
        for label, positions in members.items()
        if label != NOISE
    }
    phrases = key_phrases_with_shares(
        {
            # only the members the phrase is mined from are masked for it (100k steps)
            label: [representer.phrase_text(steps[p]) for p in spread_sample(positions)]
            for label, positions in members.items()
        },
        exclude={label: exclude[label] | forbidden[label] for label in forbidden},
        class_sizes={label: len(positions) for label, positions in members.items()},
    )
    diagnoses = diagnosis_phrases(steps, members, representer, exclude, forbidden)
    # The task share "generalises" asks for is of the tasks of the environments a
    # misbehaviour occurs in: a small environment beside a large one can still qualify.
    tasks_of: dict[str, set[str]] = defaultdict(set)
    for step in steps:
        if step.task:
            tasks_of[step.environment].add(step.task)

    outcomes = None
    compared: set[str] = set()
    strata: dict[str, tuple[str, int]] = {}
    base_rate = None
    if rollout_failed:
        outcomes = rollout_outcomes(
            rollout_failed,
            rollout_length=rollout_length,
            rollout_group=rollout_group,
            sampled_success=sampled_success,
            success_scale=success_scale,
            sampled_failure=sampled_failure,
            failure_scale=failure_scale,
        )
        # Only groups (environments) with a success say anything about failing.
        compared = {
            key
            for key in rollout_failed
            if rollout_group is None
            or rollout_group.get(key, "")
            in {rollout_group.get(k, "") for k, failed in rollout_failed.items() if not failed}
        }
        if compared:
            base_rate = sum(1 for key in compared if rollout_failed[key]) / len(compared)
        if outcomes is not None:
            strata = length_strata(comparable(outcomes))
    rollouts_with: dict[int, set[str]] = defaultdict(set)
    for position, label in enumerate(labels.tolist()):
        if label != NOISE:
            rollouts_with[int(label)].add(steps[position].rollout)
    for rollout, label in assigned_success:
        if label != NOISE:
            rollouts_with[int(label)].add(rollout)
    assigned_with: dict[int, set[str]] = defaultdict(set)
    for rollout, label in [*assigned_success, *assigned_failure]:
        if label != NOISE:
            assigned_with[int(label)].add(rollout)
    by_assignment = sampled_failure is not None

    profiles: dict[int, MisbehaviourProfile] = {}
    for label in clustered:
        positions = members[label]
        group = [steps[position] for position in positions]
        pattern, pattern_share = patterns[label]
        label_terms = terms.get(label, [])
        summary = summarise(
            signals=[step.signals for step in group],
            tools=[step.tool_name for step in group],
            agents=[step.agent or step.role for step in group],
            templates=[representer.template(step) for step in group],
            terms=label_terms,
            texts=_mast_texts(representer, group, docs[label]),
            kinds=[step.kind for step in group],
            phrase=phrases.get(label, ("", 0.0))[0],
            phrase_share=phrases.get(label, ("", 0.0))[1],
            forbidden=forbidden[label],
            diagnosis=diagnoses.get(label, ""),
            preceded=[step.preceded_by for step in group],
            one_agent=[step.one_agent for step in group],
        )
        # Exemplars show what the name says: members with the signal it leads with first.
        leading = dominant_signals(summary)[:1]
        ranked = sorted(
            positions,
            key=lambda p: (
                bool(leading) and leading[0] not in steps[p].signals,
                -float(probabilities[p]),
                steps[p].key,
            ),
        )
        exemplars: list[str] = []
        seen_rollouts: set[str] = set()
        for position in ranked:  # the strongest members, one per rollout first
            if steps[position].rollout not in seen_rollouts:
                exemplars.append(steps[position].key)
                seen_rollouts.add(steps[position].rollout)
            if len(exemplars) == EXEMPLARS:
                break
        for position in ranked:
            if len(exemplars) == EXEMPLARS:
                break
            if steps[position].key not in exemplars:
                exemplars.append(steps[position].key)
        environments = Counter(step.environment for step in group if step.environment)
        models = Counter(step.policy_model for step in group if step.policy_model)
        tasks = {step.task for step in group if step.task}
        recurs = {
            "environments": len(recurs_in((step.environment, step.weight) for step in group)),
            "tasks": len(recurs_in((step.task, step.weight) for step in group)),
            "policy_models": len(recurs_in((step.policy_model, step.weight) for step in group)),
        }
        weight = float(sum(step.weight for step in group))
        lift = None
        estimate = LiftEstimate(None, None)
        # Only a misbehaviour with failing members where successes exist has a lift: one
        # whose failures all sit in all-failed environments (Who&When) would otherwise get
        # 0x from the successes of other environments assigned to it.
        if rollout_failed and any(step.rollout in compared for step in group):
            present = assigned_with[label] if by_assignment else rollouts_with[label]
            containing = present & compared
            failed_count = sum(1 for rollout in containing if rollout_failed.get(rollout, True))
            failed = failed_count * failure_scale
            succeeded = (len(containing) - failed_count) * success_scale
            lift = failure_lift(failed=failed, total=failed + succeeded, base_rate=base_rate)
            if outcomes is not None:
                estimate = stratified_lift(outcomes, present, strata=strata)
        suggestion = mast_suggestion(summary, modes)
        profiles[label] = MisbehaviourProfile(
            label=label,
            size=len(group),
            weight=weight,
            share=weight / total_weight,
            name=name_cluster(summary),
            loose=is_loose(summary),
            terms=label_terms,
            pattern=pattern,
            pattern_share=round(pattern_share, 4),
            exemplars=exemplars,
            environments=dict(sorted(environments.items())),
            tasks=len(tasks),
            policy_models=dict(sorted(models.items())),
            rollouts=len({step.rollout for step in group}),
            recurs=recurs,
            generalises=generalises(
                environments=recurs["environments"],
                policy_models=recurs["policy_models"],
                tasks=recurs["tasks"],
                project_tasks=len(
                    set().union(*(tasks_of[e] for e in {step.environment for step in group}))
                ),
            ),
            lift=lift,
            lift_unadjusted=estimate.unadjusted,
            lift_adjusted=estimate.adjusted,
            lift_adjusted_rollouts=estimate.adjusted_rollouts,
            lift_gap=estimate.unadjusted_gap or estimate.adjusted_gap,
            signals={name: round(share, 4) for name, share in summary.signal_shares.items()},
            template=summary.template if summary.template_share >= 0.5 else "",
            suggested_category=suggestion.code if suggestion else None,
            suggested_support=suggestion.support if suggestion else None,
            suggested_basis=suggestion.basis if suggestion else "",
        )
    # No two misbehaviours carry the same name (analysis.core.name_collisions).
    names, untold = tell_apart(
        {label: profile.name for label, profile in profiles.items()},
        {label: [steps[p] for p in members[label]] for label in profiles},
        representer,
        forbidden=forbidden,
        exclude=exclude,
    )
    for label, name in names.items():
        profiles[label].name = name
        profiles[label].untold_with = untold.get(label)
    return profiles


def top_share(profiles: Mapping[int, MisbehaviourProfile], k: int = 8) -> float:
    """Share of all wrong steps covered by the ``k`` largest misbehaviours.

    >>> p = {i: MisbehaviourProfile(i, 1, 1.0, s, "", [], "", 0, []) for i, s in enumerate([.3, .2, .1])}
    >>> top_share(p, k=2)
    0.5
    """
    shares = sorted((profile.share for profile in profiles.values()), reverse=True)
    return round(float(sum(shares[:k])), 6)
