from __future__ import annotations

import numpy as np

from analysis.core.cluster import (
    NOISE,
    apply_map,
    fit_clusters,
    merge_map,
    params_for_size,
    soft_labels,
)
from analysis.core.pipeline import assign_wrong_steps, cluster_wrong_steps
from analysis.core.representation import StepRepresenter
from analysis.core.steps import WrongStep


def _blobs(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.eye(3, 6) * 6
    points = [c + rng.normal(0, 0.4, (40, 6)) for c in centres]
    stragglers = centres[:1] + rng.normal(0, 1.6, (6, 6))
    return np.vstack([*points, stragglers])


def test_it_lets_noise_join_only_a_cluster_it_reaches_the_level_of():
    points = _blobs()
    model = fit_clusters(points, params_for_size(len(points)))
    labels, strengths = soft_labels(model, model.labels_, model.probabilities_, level=0.05)
    clustered = model.labels_ != NOISE
    assert (labels[clustered] == model.labels_[clustered]).all()
    assert (labels == NOISE).sum() <= (model.labels_ == NOISE).sum()
    never, _ = soft_labels(model, model.labels_, model.probabilities_, level=1.01)
    assert (never == model.labels_).all()


def test_it_merges_clusters_whose_centroids_lie_within_their_spread():
    rng = np.random.default_rng(1)
    near = rng.normal(0, 1.0, (60, 2))
    far = rng.normal(0, 1.0, (30, 2)) + 20
    labels = np.array([0] * 30 + [1] * 30 + [2] * 30)
    mapping = merge_map(np.vstack([near, far]), labels)
    assert mapping == {0: 0, 1: 0, 2: 1}
    assert apply_map(np.array([2, NOISE, 1]), mapping).tolist() == [1, NOISE, 0]


def test_it_adds_a_structural_block_for_who_acted_and_how():
    steps = [
        WrongStep(key=str(i), rollout=f"r{i}", index=0, agent="assistant", kind="tool_call",
                  tool_name=tool, content="same words")
        for i, tool in enumerate(["book", "book", "cancel", "cancel"])
    ]  # fmt: skip
    representer = StepRepresenter(structure_weight=1.0).fit(steps)
    text = np.ones((4, 3), dtype=np.float32) + np.arange(4)[:, None]
    representer.fit_scale(text, representer.signal_matrix(steps), steps)
    combined = representer.combine(text, steps)
    structure = combined[:, -2:]
    assert structure.shape == (4, 2) and representer.structure_scale_ > 0
    assert (structure[0] == structure[1]).all() and not (structure[0] == structure[2]).all()


def test_it_names_an_agent_in_the_structural_block_only_when_it_recurs():
    steps = [
        WrongStep(key=f"{agent}{i}", rollout=f"{agent}-r{i}", index=0, agent=agent,
                  role="assistant", kind="message", content="text")
        for agent, runs in (("Verification_Expert", 3), ("Paintball_Expert", 1))
        for i in range(runs)
    ]  # fmt: skip
    representer = StepRepresenter().fit(steps)
    assert representer.structures_ == ["Verification_Expert|message|", "assistant|message|"]


EXTRA = ["late", "twice", "again", "wrongly", "quickly", "slowly"]


def test_it_assigns_new_steps_through_the_same_merge_and_soft_rules():
    steps = [
        WrongStep(key=f"{tool}{i}", rollout=f"{tool}-r{i}", index=0, kind="tool_call",
                  tool_name=tool, content=f"{word} {word} {EXTRA[i % 6]} {EXTRA[i % 5]}")
        for tool, word in (("book", "seat"), ("cancel", "refund"), ("search", "query"))
        for i in range(12)
    ]  # fmt: skip
    outcome = cluster_wrong_steps(
        steps, seed=0, with_metrics=False, soft_noise_quantile=0.1, merge_near=True
    )
    assert outcome.model.label_map is not None and outcome.model.soft_noise > 0
    labels, _, _ = assign_wrong_steps(outcome.model, steps)
    assert labels.tolist() == outcome.labels.tolist()
