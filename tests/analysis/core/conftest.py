"""Synthetic wrong steps in known groups, shared by the core tests as a fixture."""

from __future__ import annotations

import random

import pytest

from analysis.core.steps import WrongStep

GROUPS = {
    "book": ("book_reservation", "payment gift card balance insufficient charge"),
    "cancel": ("cancel_reservation", "refund policy cancel insurance basic economy"),
    "search": ("search_direct_flight", "origin destination date flights nonstop airport"),
    "web": ("", "webpage screenshot viewport scroll click browser"),
}
FILLER = ["the", "a", "please", "then", "with", "for", "and", "user", "agent", "okay"]


def synthetic_steps(per_group: int = 40, seed: int = 0) -> tuple[list[WrongStep], dict[str, str]]:
    """Steps of four groups (distinct tools and vocabulary) and each step's true group."""
    rng = random.Random(seed)
    steps: list[WrongStep] = []
    truth: dict[str, str] = {}
    for group, (tool, words) in GROUPS.items():
        vocabulary = words.split()
        for i in range(per_group):
            picked = rng.sample(vocabulary, 4) + rng.sample(FILLER, 3)
            rng.shuffle(picked)
            key = f"{group}-{i:03d}"
            steps.append(
                WrongStep(
                    key=key,
                    rollout=f"r-{group}-{i % 10}",
                    index=i,
                    agent="assistant",
                    role="assistant",
                    kind="tool_call" if tool else "message",
                    tool_name=tool,
                    content=" ".join(picked),
                    environment=f"env{i % 4}",
                    task=f"task{i % 7}",
                    policy_model="gpt-test",
                )
            )
            truth[key] = group
    return steps, truth


@pytest.fixture
def synthetic():
    """The generator itself: ``steps, truth = synthetic(per_group=40, seed=0)``."""
    return synthetic_steps
