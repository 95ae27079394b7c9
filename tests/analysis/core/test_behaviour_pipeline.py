from __future__ import annotations

import pickle
import random
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from analysis.core.behaviour import DREW_ERROR, IGNORED_ERROR, REPEATED_ACTION
from analysis.core.cluster import NOISE
from analysis.core.naming import PHRASES, signal_wordings
from analysis.core.pipeline import assign_wrong_steps, cluster_wrong_steps
from analysis.core.profiles import describe_clusters
from analysis.core.representation import StepRepresenter
from analysis.core.steps import WrongStep

FIXED_WORDS = {
    word.lower()
    for signal in PHRASES
    for wording in signal_wordings(signal)
    for word in re.findall(r"[A-Za-z]+", " ".join(wording))
}
DATA = Path(__file__).resolve().parents[3] / "../shared/data"
NAMES = ["mia", "noah", "ava", "liam", "emma", "omar", "zoe", "ivan", "lena", "raj", "kai"]
CITIES = ["Boston", "Seattle", "Denver", "Atlanta", "Phoenix", "Dallas", "Miami", "Austin"]
BEHAVIOURS = {
    "gift": ("update_reservation_flights", "Error: gift card balance is not enough", (DREW_ERROR,)),
    "seats": ("book_reservation", "Error: not enough seats on flight HAT{n}", (DREW_ERROR,)),
    "retry": ("search_direct_flight", "[]", (REPEATED_ACTION, IGNORED_ERROR)),
}


def behaviour_steps(per_group: int, seed: int, prefix: str = "") -> tuple[list[WrongStep], dict]:
    """Steps of three behaviours whose arguments and task words differ in every step."""
    rng = random.Random(seed)
    steps, truth = [], {}
    for group, (tool, error, signals) in BEHAVIOURS.items():
        for i in range(per_group):
            name, city = rng.choice(NAMES), rng.choice(CITIES)
            number = rng.randint(100, 999)
            key = f"{prefix}{group}-{i:03d}"
            steps.append(
                WrongStep(
                    key=key,
                    rollout=f"{prefix}r-{group}-{i}",
                    index=4,
                    agent="assistant",
                    role="assistant",
                    kind="tool_call",
                    tool_name=tool,
                    tool_args={"user_id": f"{name}_{number}", "destination": city.upper()[:3]},
                    arg_sources=(("destination", "user"), ("user_id", "user")),
                    content=f"Let me do that for {name.title()}, flying to {city}",
                    signals=signals,
                    error=error.format(n=number) if signals[0] == DREW_ERROR else "",
                    after=error.format(n=number),
                    environment="airline",
                    task=f"{prefix}t{i}",
                    task_text=f"You are {name}_{number} and want to fly to {city}.",
                )
            )
            truth[key] = group
    return steps, truth


def purity(steps, labels, truth) -> float:
    by_label: dict[int, Counter[str]] = {}
    for step, label in zip(steps, labels.tolist()):
        if label != NOISE:
            by_label.setdefault(label, Counter())[truth[step.key]] += 1
    clustered = sum(sum(c.values()) for c in by_label.values())
    return sum(max(c.values()) for c in by_label.values()) / max(clustered, 1)


def assert_one_misbehaviour_per_behaviour(outcome, truth) -> None:
    """The three behaviours of behaviour_steps came out as three pure misbehaviours."""
    assert len(outcome.profiles) == 3
    assert purity(outcome.steps, outcome.labels, truth) == 1.0
    assert np.mean(outcome.labels != NOISE) > 0.9


def test_it_embeds_calls_that_differ_only_by_argument_values_as_one_text():
    steps, _ = behaviour_steps(per_group=2, seed=0)
    representer = StepRepresenter().fit(steps)
    assert representer.text(steps[0]) == representer.text(steps[1])


def test_it_makes_near_duplicates_with_different_values_one_misbehaviour():
    steps, truth = behaviour_steps(per_group=20, seed=0)
    outcome = cluster_wrong_steps(steps, seed=0, with_metrics=False)
    assert_one_misbehaviour_per_behaviour(outcome, truth)


def test_it_separates_steps_whose_words_agree_but_behaviour_differs():
    steps, _ = behaviour_steps(per_group=20, seed=1)
    retries = [s for s in steps if s.tool_name == "search_direct_flight"]
    plain = [
        WrongStep(**{**vars(s), "key": "p" + s.key, "rollout": "p" + s.rollout, "signals": ()})
        for s in retries
    ]
    truth = {s.key: "signals" for s in retries} | {s.key: "plain" for s in plain}
    outcome = cluster_wrong_steps(retries + plain, seed=0, with_metrics=False)
    assert len(outcome.profiles) == 2
    assert purity(outcome.steps, outcome.labels, truth) == 1.0


def test_it_assigns_new_steps_with_the_stored_representation():
    steps, truth = behaviour_steps(per_group=20, seed=0)
    outcome = cluster_wrong_steps(steps, seed=0, with_metrics=False)
    label_of = {truth[s.key]: int(label) for s, label in zip(outcome.steps, outcome.labels)}
    new_steps, new_truth = behaviour_steps(per_group=5, seed=7, prefix="new-")
    model = pickle.loads(pickle.dumps(outcome.model))
    labels, _, _ = assign_wrong_steps(model, new_steps)
    assert [int(label) for label in labels] == [label_of[new_truth[s.key]] for s in new_steps]


def test_it_keeps_labelled_and_unlabelled_steps_of_one_behaviour_together():
    """A reviewer's reason on some steps must not split their behaviour from the same
    behaviour's unlabelled steps (it did: every misbehaviour of a half-labelled project
    came twice, once "(diagnosed as ...)")."""
    steps, truth = behaviour_steps(per_group=20, seed=0)
    reasons = {
        "gift": "paid with a gift card whose balance could not cover the fare difference",
        "seats": "booked a flight that had no seats left in the chosen cabin",
        "retry": "kept searching the same route after it returned nothing",
    }
    half = [
        replace(step, reason=reasons[truth[step.key]]) if i % 2 else step
        for i, step in enumerate(steps)
    ]
    outcome = cluster_wrong_steps(half, seed=0, with_metrics=False)
    assert_one_misbehaviour_per_behaviour(outcome, truth)


def test_it_assigns_no_step_to_a_misbehaviour_whose_signals_it_lacks():
    steps, truth = behaviour_steps(per_group=20, seed=0)
    outcome = cluster_wrong_steps(steps, seed=0, with_metrics=False)
    label_of = {truth[s.key]: int(label) for s, label in zip(outcome.steps, outcome.labels)}
    assert set(outcome.model.required_signals[label_of["retry"]]) == {
        REPEATED_ACTION,
        IGNORED_ERROR,
    }
    new_steps, new_truth = behaviour_steps(per_group=5, seed=7, prefix="new-")
    same_words_other_behaviour = [
        replace(step, signals=()) for step in new_steps if new_truth[step.key] == "retry"
    ]
    labels, strengths, _ = assign_wrong_steps(outcome.model, same_words_other_behaviour)
    assert set(labels.tolist()) == {NOISE}
    assert not strengths.any()


def test_it_counts_successes_in_a_misbehaviour_only_when_they_show_its_behaviour():
    """A successful rollout's closing reply is near "gives up right after a failure" in
    the embedding; counted there, giving up looked protective (lift 0.24x)."""
    steps, truth = behaviour_steps(per_group=20, seed=0)
    retries = [s for s in steps if truth[s.key] == "retry"]
    successes = [
        replace(step, key="ok" + step.key, rollout=f"ok{i}", signals=())
        for i, step in enumerate(retries)
    ]
    rollout_failed = {s.rollout: True for s in steps} | {s.rollout: False for s in successes}
    outcome = cluster_wrong_steps(
        steps, seed=0, success_steps=successes, rollout_failed=rollout_failed, with_metrics=False
    )
    retry_label = next(
        int(label) for s, label in zip(outcome.steps, outcome.labels) if truth[s.key] == "retry"
    )
    assert outcome.profiles[retry_label].lift is not None
    assert outcome.profiles[retry_label].lift > 1


def test_it_reports_crude_and_length_stratified_lifts():
    steps, _ = behaviour_steps(per_group=20, seed=0)
    rollout_failed = {s.rollout: True for s in steps} | {f"ok{i}": False for i in range(30)}
    lengths = {s.rollout: 10 + s.index for s in steps} | {f"ok{i}": 8 + i % 10 for i in range(30)}
    outcome = cluster_wrong_steps(
        steps, seed=0, rollout_failed=rollout_failed, rollout_length=lengths, with_metrics=False
    )
    profile = next(iter(outcome.profiles.values()))
    assert profile.lift_unadjusted is None  # every rollout without it succeeded: no failures
    assert profile.lift is not None and profile.lift > 1


def test_it_keeps_the_plain_pipeline_as_a_baseline():
    steps, _ = behaviour_steps(per_group=10, seed=0)
    outcome = cluster_wrong_steps(steps, seed=0, behaviour=False, with_metrics=False)
    assert outcome.model.representer is None


def _all_words(text: str) -> set[str]:
    tokens = {token.lower().strip("'_") for token in re.findall(r"[A-Za-z0-9_']+", text or "")}
    return tokens | {part for token in tokens for part in token.split("_") if part}


def test_it_puts_no_task_entity_in_the_names_of_the_demo_misbehaviours():
    """Issue 12's rule, literally: no name holds a word that is in fewer than 5% of the
    project's (distinct) task texts but in a member's task text; no word is excused."""
    if not DATA.exists():
        pytest.skip("shared data not present")
    from analysis.core.demo import load_demo

    demo = load_demo(DATA)
    outcome = cluster_wrong_steps(
        demo.wrong, seed=0, with_metrics=False, success_steps=demo.success,
        rollout_failed=demo.rollout_failed,
    )  # fmt: skip
    texts = {step.task_text for step in demo.wrong + demo.success if step.task_text}
    frequency = Counter(word for text in texts for word in _all_words(text))
    rare = {word for word, count in frequency.items() if count < 0.05 * len(texts)}
    assert outcome.profiles
    for label, profile in outcome.profiles.items():
        members = [s for s, m in zip(outcome.steps, outcome.labels.tolist()) if m == label]
        member_words = set().union(*(_all_words(s.task_text) for s in members))
        named = {w.lower().strip("'_") for w in re.findall(r"[A-Za-z0-9_']+", profile.name)}
        assert not named & rare & member_words, profile.name


def _same_step_other_requests(per_group: int) -> list[WrongStep]:
    requests = [
        "please find the cheapest restaurants near the old harbour for dinner tonight",
        "what will the weather forecast say about heavy rain on tomorrow morning",
    ]
    return [
        WrongStep(
            key=f"g{group}-{i:03d}",
            rollout=f"r{group}-{i}",
            index=3,
            agent="assistant",
            role="assistant",
            kind="tool_call",
            tool_name="web_search",
            tool_args={"query": "x"},
            arg_sources=(("query", "user"),),
            content="Let me look that up",
            signals=(REPEATED_ACTION,),
            before=request,
            after="no results",
            preceded_by="user",
            task=f"t{group}-{i}",
        )
        for group, request in enumerate(requests)
        for i in range(per_group)
    ]


def test_it_makes_clusters_that_only_an_ordinal_tells_apart_one_misbehaviour():
    steps = _same_step_other_requests(per_group=20)
    apart = cluster_wrong_steps(steps, seed=0, with_metrics=False, merge_untold=False)
    assert len(apart.profiles) == 2
    assert any(name.endswith("(2)") for name in (p.name for p in apart.profiles.values()))
    merged = cluster_wrong_steps(steps, seed=0, with_metrics=False)
    assert len(merged.profiles) == 1
    assert np.all(merged.labels == next(iter(merged.profiles)))
    new_labels, _, _ = assign_wrong_steps(merged.model, steps[:3] + steps[-3:])
    assert set(new_labels.tolist()) == set(merged.profiles)


def test_the_successes_of_merged_clusters_are_those_a_fresh_assignment_finds():
    steps = _same_step_other_requests(per_group=20)
    # Successes: half repeat the action (they join), half do not (the signal gate keeps
    # them out), from both kinds of request.
    successes = [
        replace(step, key=f"s-{step.key}", rollout=f"s-{step.rollout}", signals=signals)
        for position, step in enumerate(steps[::4])
        for signals in [(REPEATED_ACTION,) if position % 2 else ()]
    ]
    failed = {step.rollout: True for step in steps} | {s.rollout: False for s in successes}
    failed |= {f"other-{i}": True for i in range(10)}  # failures without it: a finite lift
    merged = cluster_wrong_steps(
        steps, seed=0, with_metrics=False, success_steps=successes, rollout_failed=failed
    )
    (label,) = merged.profiles
    fresh, _, _ = assign_wrong_steps(merged.model, successes)
    again = describe_clusters(
        merged.steps,
        merged.labels,
        merged.probabilities,
        assigned_success=[(s.rollout, int(m)) for s, m in zip(successes, fresh.tolist())],
        rollout_failed=failed,
        representer=merged.model.representer,
        sampled_success={s.rollout for s in successes},
    )
    assert 0 < int(np.sum(fresh == label)) < len(successes)
    assert merged.profiles[label].lift_unadjusted == again[label].lift_unadjusted
    assert merged.profiles[label].lift_unadjusted is not None


def test_a_full_run_masks_each_step_once_without_changing_a_text_or_the_pickle():
    steps = _same_step_other_requests(per_group=10)
    representer = cluster_wrong_steps(steps, seed=0, with_metrics=False).model.representer
    assert representer._memo is None
    plain = [(representer.text(s), representer.naming_text(s)) for s in steps]
    representer.remember()
    remembered = [(representer.text(s), representer.naming_text(s)) for s in steps]
    assert remembered == plain and representer._memo
    assert "_memo" not in vars(pickle.loads(pickle.dumps(representer)))
    representer.forget()
