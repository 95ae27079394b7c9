"""How well a partition of wrong steps matches their categories: pure functions.

A partition is one label per step; ``NOISE`` (-1) means unclustered. For homogeneity,
NMI and ARI the unclustered steps count as one group of their own (leaving them out
would reward a method for calling every hard step noise). Best-match F1 never matches a
category to the unclustered group: an engineer cannot open "unclustered" as a
misbehaviour.

Example:
    >>> truth = ["a", "a", "a", "b", "b", "c"]
    >>> found = [0, 0, 1, 1, 1, -1]
    >>> round(macro_best_match_f1(truth, found), 3)
    0.533
    >>> unclustered_share(found), top_share(found, 1)
    (0.1667, 0.5)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

NOISE = -1


def _grouped(found: Sequence[int]) -> list[int]:
    """Noise as one more group, with a label no cluster uses."""
    spare = max([label for label in found if label != NOISE], default=0) + 1
    return [spare if label == NOISE else int(label) for label in found]


def _check(truth: Sequence[Hashable], found: Sequence[int]) -> None:
    if len(truth) != len(found):
        raise ValueError("truth and found must label the same steps")
    if not truth:
        raise ValueError("no steps to score")


def homogeneity(truth: Sequence[Hashable], found: Sequence[int]) -> float:
    """Each group holds one category (1.0), unclustered counted as one group.

    >>> homogeneity(["a", "a", "b", "b"], [0, 0, 1, 1]), homogeneity(["a", "b"], [0, 0])
    (1.0, 0.0)
    >>> homogeneity(["a", "a", "b", "b"], [-1, -1, -1, -1])
    0.0
    """
    from sklearn.metrics import homogeneity_score

    _check(truth, found)
    return round(float(homogeneity_score(list(truth), _grouped(found))), 4)


def nmi(truth: Sequence[Hashable], found: Sequence[int]) -> float:
    """Normalised mutual information (arithmetic mean), unclustered as one group.

    >>> nmi(["a", "a", "b", "b"], [5, 5, 7, 7])
    1.0
    """
    from sklearn.metrics import normalized_mutual_info_score

    _check(truth, found)
    return round(float(normalized_mutual_info_score(list(truth), _grouped(found))), 4)


def ari(truth: Sequence[Hashable], found: Sequence[int]) -> float:
    """Adjusted Rand index, unclustered as one group; rewards coarse groupings when one
    category dominates, so it is reported, not chased.

    >>> ari(["a", "a", "b", "b"], [0, 0, 1, 1])
    1.0
    """
    from sklearn.metrics import adjusted_rand_score

    _check(truth, found)
    return round(float(adjusted_rand_score(list(truth), _grouped(found))), 4)


def best_match_f1(truth: Sequence[Hashable], found: Sequence[int]) -> dict[Hashable, float]:
    """For each category, the F1 of the one cluster (not noise) that matches it best.

    F1 of category c and cluster k is 2|c and k| / (|c| + |k|); 0 when no cluster holds
    any step of c.

    >>> best_match_f1(["a", "a", "b"], [0, 0, -1])
    {'a': 1.0, 'b': 0.0}
    """
    _check(truth, found)
    category_sizes = Counter(truth)
    cluster_sizes = Counter(label for label in found if label != NOISE)
    overlap = Counter((c, k) for c, k in zip(truth, found) if k != NOISE)
    scores: dict[Hashable, float] = {}
    for category, size in category_sizes.items():
        best = 0.0
        for (c, k), both in overlap.items():
            if c == category:
                best = max(best, 2.0 * both / (size + cluster_sizes[k]))
        scores[category] = round(best, 4)
    return scores


def macro_best_match_f1(truth: Sequence[Hashable], found: Sequence[int]) -> float:
    """The mean over categories of :func:`best_match_f1` (each category counts once).

    >>> macro_best_match_f1(["a", "a", "b", "b"], [0, 0, 1, 1])
    1.0
    """
    scores = best_match_f1(truth, found)
    return round(sum(scores.values()) / len(scores), 4)


def unclustered_share(found: Sequence[int]) -> float:
    """Share of the steps left unclustered.

    >>> unclustered_share([0, -1, -1, 2])
    0.5
    """
    if not found:
        return 0.0
    return round(sum(1 for label in found if label == NOISE) / len(found), 4)


def top_share(found: Sequence[int], top: int = 8) -> float:
    """Share of all steps that sit in the ``top`` largest clusters (noise is no cluster).

    >>> top_share([0, 0, 0, 1, 2, -1], 2)
    0.6667
    """
    if not found:
        return 0.0
    sizes = sorted(Counter(label for label in found if label != NOISE).values(), reverse=True)
    return round(sum(sizes[:top]) / len(found), 4)


def cluster_count(found: Sequence[int]) -> int:
    """Number of clusters, noise not counted.

    >>> cluster_count([0, 0, 3, -1])
    2
    """
    return len({label for label in found if label != NOISE})


def score_partition(truth: Sequence[Hashable], found: Sequence[int]) -> dict[str, float]:
    """Every figure the report gives for one partition.

    >>> score_partition(["a", "b"], [0, 1])["macro_best_match_f1"]
    1.0
    """
    return {
        "homogeneity": homogeneity(truth, found),
        "macro_best_match_f1": macro_best_match_f1(truth, found),
        "nmi": nmi(truth, found),
        "ari": ari(truth, found),
        "unclustered_share": unclustered_share(found),
        "top8_share": top_share(found, 8),
        "clusters": float(cluster_count(found)),
    }
