"""Pieces of the learned scorer's first-event objective (``objective="hazard"``).

The decisive step is the *earliest* step that goes wrong, while signs of wrongness often
come back in later steps. A discrete-time hazard model says exactly that: step i gets a
hazard h_i = sigmoid(w . x_i), the chance that the rollout goes wrong at i given that it had
not gone wrong before, and

    P(decisive = i) = h_i * prod_{j < i} (1 - h_j),

normalised over the rollout. Normalising, rather than giving the mass left after the last
step (prod_j (1 - h_j)) to the last step, is conditioning on what is known of every
scored rollout: it failed, so its decisive step lies within it. The leftover mass says
nothing about where, and piling it on the last step would make long quiet rollouts point
at their end.

Training maximises the likelihood of the labelled step: the steps before it survived
(target 0), the labelled one is the event (target 1), and the steps after it carry no
information, since the rollout had already gone wrong. That is a plain logistic
regression on the survival rows; rows grow with the steps: linear.

Worked example: hazards 0.1, 0.8, 0.8 (two bad-looking steps, the second one first).
Unnormalised masses 0.1, 0.9 * 0.8 = 0.72 and 0.9 * 0.2 * 0.8 = 0.144, over their sum 0.964:
the first bad step takes 0.75 and the repeat 0.15, where a softmax of the same scores would
split the two evenly.

Example:
    >>> import numpy as np
    >>> logits = np.log(np.array([0.1, 0.8, 0.8]) / np.array([0.9, 0.2, 0.2]))
    >>> np.exp(first_event_log_mass(logits) - np.log(0.964)).round(3).tolist()
    [0.104, 0.747, 0.149]
    >>> survival_rows(np.array([3, 2]), np.array([1, 0])).tolist()
    [0, 1, 3]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def survival_rows(lengths: NDArray[np.int64], steps: NDArray[np.int64]) -> NDArray[np.int64]:
    """Indices into the stacked steps of each rollout's steps up to and including its
    labelled one (the rows at risk); the target is 1 on the last row of each rollout."""
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    return np.concatenate([np.arange(s, s + k + 1) for s, k in zip(starts, steps, strict=True)])


def first_event_log_mass(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """log P(first event at i) for one rollout's hazard logits, before normalising:
    log h_i + sum_{j < i} log(1 - h_j), computed without overflow."""
    log_hazard = -np.logaddexp(0.0, -logits)  # log sigmoid(z)
    log_survive = -np.logaddexp(0.0, logits)  # log (1 - sigmoid(z))
    survived_before = np.concatenate(([0.0], np.cumsum(log_survive)[:-1]))
    return np.asarray(log_hazard + survived_before, dtype=np.float64)
