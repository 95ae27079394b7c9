"""Which unlabelled failed rollout to label next, to reach a calibrated state fastest.

The order, and why:

1. **Systems short of labels first** (their *deficit*, see
   :func:`attribution.core.system_calibration.labels_needed`): until a system has enough
   labels, none of its rollouts gets a confidence claim. Systems are taken one at a time,
   the one whose deficit unlocks the most rollouts per label first (unlabelled rollouts /
   deficit), so the first claims arrive after the fewest labels.
2. **Within a system's deficit, a stable random order**, not the scorer's doubt. These
   labels calibrate tau, and conformal coverage holds only when the calibration rollouts
   are exchangeable with the rollouts the sets are made for. Picking the rollouts the
   scorer is least sure of would calibrate on the hardest ones: tau too large, sets too
   wide. A random sample is the representative one; rollouts whose label would go to the
   scorer's training half come after those whose label calibrates, as only the latter
   reduce the deficit. The order is a hash of the rollout id (and ``seed``), so it does
   not change from one refresh to the next and a new rollout lands at a random place.
3. **Then the rollouts whose labels train the scorer, least sure first**: the normalised
   entropy of the step probabilities (1 = uniform, 0 = certain), the usual
   uncertainty-sampling choice; a label where the scorer is already sure teaches it little.
   Rollouts whose labels would calibrate (``trains=False``) keep the random order, for the
   reason of step 2; the two kinds alternate, so the scorer and tau both improve.
4. **Last, systems that cannot reach their deficit with the rollouts there are**
   (fewer unlabelled failed rollouts than labels needed): labelling every one of them
   still brings no claim, so a labeller's time goes first where it does. Their labels
   count once more of their rollouts arrive (or the system borrows a calibration).

Example:
    >>> items = [QueueItem("a1", "A", [0.5, 0.5]), QueueItem("b1", "B", [0.9, 0.1]),
    ...          QueueItem("b2", "B", [0.5, 0.5])]
    >>> [(e.rollout_id, e.reason) for e in labelling_queue(items, {"A": 4, "B": 3}, alpha=0.2)]
    [('b1', 'deficit'), ('a1', 'calibration'), ('b2', 'calibration')]
    >>> [(e.rollout_id, e.reason) for e in labelling_queue(items, {"A": 4, "B": 0}, alpha=0.2)]
    [('a1', 'calibration'), ('b1', 'short'), ('b2', 'short')]
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import zip_longest

import numpy as np
from numpy.typing import ArrayLike

from attribution.core.conformal import normalise
from attribution.core.system_calibration import labels_needed, min_labels_for, system_key

REASON_DEFICIT = "deficit"
REASON_UNCERTAIN = "uncertain"
REASON_CALIBRATION = "calibration"
REASON_SHORT = "short"


@dataclass(frozen=True)
class QueueItem:
    """An unlabelled failed rollout: its id, agent system and current step probabilities.

    ``trains`` says whether its label would train the scorer (True) or calibrate it.
    """

    rollout_id: str
    agent_system: str
    probabilities: ArrayLike
    trains: bool = False


@dataclass(frozen=True)
class QueueEntry:
    rollout_id: str
    agent_system: str
    reason: str
    uncertainty: float


def normalised_entropy(probabilities: ArrayLike) -> float:
    """Entropy of the step probabilities divided by log(n): 1 uniform, 0 certain.

    Example:
        >>> normalised_entropy([0.5, 0.5]), normalised_entropy([1.0, 0.0]), normalised_entropy([1.0])
        (1.0, 0.0, 0.0)
    """
    p = normalise(probabilities)
    if p.size < 2:
        return 0.0
    nonzero = p[p > 0]
    return max(0.0, float(-(nonzero * np.log(nonzero)).sum() / math.log(p.size)))


def stable_random_rank(rollout_id: str, seed: int = 0) -> str:
    """A random but reproducible sort key for a rollout.

    Example:
        >>> stable_random_rank("r1") == stable_random_rank("r1"), len(stable_random_rank("r1"))
        (True, 16)
    """
    return hashlib.sha256(f"{seed}:{rollout_id}".encode()).hexdigest()[:16]


def labelling_queue(
    items: Sequence[QueueItem],
    labels_by_system: Mapping[str, int],
    *,
    alpha: float,
    min_labels: int = 0,
    seed: int = 0,
) -> list[QueueEntry]:
    """Every item once, in the order to label them (see the module docstring)."""
    by_system: dict[str, list[QueueItem]] = {}
    for item in sorted(items, key=lambda i: stable_random_rank(i.rollout_id, seed)):
        by_system.setdefault(system_key(item.agent_system), []).append(item)
    labels: dict[str, int] = {}
    for system, count in labels_by_system.items():
        labels[system_key(system)] = labels.get(system_key(system), 0) + count
    deficits = {
        system: labels_needed(labels.get(system, 0), alpha, min_labels) for system in by_system
    }

    def unlock_order(system: str) -> tuple[float, str]:
        return (-len(by_system[system]) / deficits[system], system)

    short = {s for s in by_system if len(by_system[s]) < deficits[s]}
    queue: list[QueueEntry] = []
    rest: list[QueueItem] = []
    reachable = (s for s in by_system if deficits[s] > 0 and s not in short)
    for system in sorted(reachable, key=unlock_order):
        # A label that would train the scorer does not reduce the deficit: rollouts whose
        # label calibrates come first (a stable sort keeps their random order).
        members = sorted(by_system[system], key=lambda item: item.trains)
        queue += [_entry(item, REASON_DEFICIT) for item in members[: deficits[system]]]
        rest += members[deficits[system] :]
    for system, members in by_system.items():
        if deficits[system] == 0:
            rest += members
    training = sorted(
        (i for i in rest if i.trains),
        key=lambda i: (
            -normalised_entropy(i.probabilities),
            stable_random_rank(i.rollout_id, seed),
        ),
    )
    calibrating = sorted(
        (i for i in rest if not i.trains), key=lambda i: stable_random_rank(i.rollout_id, seed)
    )
    for learn, calibrate in zip_longest(training, calibrating):
        if learn is not None:
            queue.append(_entry(learn, REASON_UNCERTAIN))
        if calibrate is not None:
            queue.append(_entry(calibrate, REASON_CALIBRATION))
    for system in sorted(short, key=lambda s: (deficits[s] - len(by_system[s]), s)):
        members = sorted(by_system[system], key=lambda item: item.trains)
        queue += [_entry(item, REASON_SHORT) for item in members]
    return queue


def _entry(item: QueueItem, reason: str) -> QueueEntry:
    return QueueEntry(
        rollout_id=item.rollout_id,
        agent_system=system_key(item.agent_system),
        reason=reason,
        uncertainty=round(normalised_entropy(item.probabilities), 6),
    )


@dataclass(frozen=True)
class SystemProgress:
    """Progress of one agent system toward "calibrated at 1 - alpha"."""

    agent_system: str
    labels: int
    target: int
    needed: int

    @property
    def calibrated(self) -> bool:
        return self.needed == 0


def calibration_progress(
    labels_by_system: Mapping[str, int], *, alpha: float, min_labels: int = 0
) -> list[SystemProgress]:
    """Labels, target and labels still needed per system, systems furthest away first.

    Example:
        >>> [(p.agent_system, p.needed) for p in calibration_progress({"A": 3, "B": 12}, alpha=0.1)]
        [('A', 6), ('B', 0)]
    """
    target = max(min_labels_for(alpha), min_labels)
    rows = [
        SystemProgress(system_key(s), m, target, labels_needed(m, alpha, min_labels))
        for s, m in labels_by_system.items()
    ]
    return sorted(rows, key=lambda p: (-p.needed, p.agent_system))
