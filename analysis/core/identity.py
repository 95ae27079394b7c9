"""Keeping a misbehaviour's identity across re-clusterings by matching member overlap.

HDBSCAN numbers its clusters afresh on every run. To keep a user's name, merge or
category on "the same" misbehaviour, each new cluster is matched one-to-one to the
previous run's cluster it shares the most steps with (Hungarian assignment on the
intersection sizes), and inherits its key when the overlap covers at least half of the
smaller of the two. A cluster that matches nothing gets a new key made from its members.

Example:
    >>> previous = {"mb-a": {"1", "2", "3", "4"}, "mb-b": {"5", "6", "7"}}
    >>> current = {0: {"5", "6", "7", "8"}, 1: {"1", "2", "3"}, 2: {"9", "10", "11"}}
    >>> keys = match_clusters(previous, current)
    >>> keys[0], keys[1], keys[2].startswith("mb-")
    ('mb-b', 'mb-a', True)
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping

import numpy as np

#: Least intersection / size of the smaller cluster for two clusters to be "the same".
MIN_OVERLAP = 0.5


def new_cluster_key(members: Collection[str], taken: Collection[str] = ()) -> str:
    """A key for a new misbehaviour, derived from its members so reruns agree.

    >>> new_cluster_key({"2", "1"}) == new_cluster_key(["1", "2"])
    True
    """
    digest = hashlib.sha1("\n".join(sorted(members)).encode("utf-8")).hexdigest()
    length = 10
    key = f"mb-{digest[:length]}"
    while key in taken:
        length += 2
        key = f"mb-{digest[:length]}"
    return key


def match_clusters(
    previous: Mapping[str, Collection[str]],
    current: Mapping[int, Collection[str]],
    *,
    min_overlap: float = MIN_OVERLAP,
) -> dict[int, str]:
    """A key for every current cluster: a previous key when matched, else a new one."""
    from scipy.optimize import linear_sum_assignment

    old_keys = sorted(previous)
    new_labels = sorted(current)
    keys: dict[int, str] = {}
    if old_keys and new_labels:
        old_sets = [set(previous[key]) for key in old_keys]
        new_sets = [set(current[label]) for label in new_labels]
        overlap = np.array(
            [[len(new & old) for old in old_sets] for new in new_sets], dtype=np.float64
        )
        rows, cols = linear_sum_assignment(-overlap)
        for row, col in zip(rows, cols):
            smaller = min(len(new_sets[row]), len(old_sets[col])) or 1
            if overlap[row, col] / smaller >= min_overlap:
                keys[new_labels[row]] = old_keys[col]
    taken = set(previous) | set(keys.values())
    for label in new_labels:
        if label not in keys:
            keys[label] = new_cluster_key(current[label], taken)
            taken.add(keys[label])
    return keys
