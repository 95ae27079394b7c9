"""Partitions the product must beat: structure alone, and plain text clustering.

- ``structural``: one group per (acting agent, step kind, tool name); no text at all.
- ``tfidf_hdbscan``: TF-IDF of the step's words and bigrams, truncated SVD, HDBSCAN with
  the textbook defaults (``min_cluster_size=5``); none of the product's rules (no size
  cap, no parameter scaling).
- ``tfidf_kmeans``: the same vectors cut by k-means with k = the number of categories
  (an oracle's k: the method knows how many groups to find).

The text is frozen here (:func:`baseline_text`): agent, kind, tool, arguments, content
and the context window, as the product's step text was when this set was built, so a
change to the product's text never moves a baseline.

Example:
    >>> from analysis.core.steps import WrongStep
    >>> steps = [WrongStep(key=str(i), rollout="r", index=i, agent="a", kind="tool_call",
    ...                    tool_name="book" if i % 2 else "cancel") for i in range(4)]
    >>> structural(steps)
    [0, 1, 0, 1]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from analysis.core.steps import WrongStep

SVD_COMPONENTS = 50
HDBSCAN_MIN_CLUSTER_SIZE = 5
KMEANS_INIT = 10


def structural(steps: Sequence[WrongStep]) -> list[int]:
    """One label per distinct (agent, kind, tool), numbered in order of first appearance."""
    labels: dict[tuple[str, str, str], int] = {}
    found = []
    for step in steps:
        key = (step.agent or step.role, step.kind, step.tool_name)
        found.append(labels.setdefault(key, len(labels)))
    return found


def structural_min_size(
    steps: Sequence[WrongStep], min_size: int = HDBSCAN_MIN_CLUSTER_SIZE
) -> list[int]:
    """The structural grouping held to a cluster's smallest size: a group of fewer than
    ``min_size`` steps is unclustered (-1), as HDBSCAN leaves a group that small.

    Homogeneity rewards small groups: the plain grouping has 87 groups for Who&When's 184
    steps, most of one or two steps, each perfectly homogeneous. No clustering that names
    recurring behaviours makes groups that small, so this line is structure alone under
    the same rule the product's clusters follow (the report counts unclustered steps as
    one group for every method).

    >>> from analysis.core.steps import WrongStep
    >>> steps = [WrongStep(key=str(i), rollout="r", index=i, agent="a" if i < 5 else f"b{i}")
    ...          for i in range(7)]
    >>> structural_min_size(steps)
    [0, 0, 0, 0, 0, -1, -1]
    """
    labels = structural(steps)
    sizes: dict[int, int] = {}
    for label in labels:
        sizes[label] = sizes.get(label, 0) + 1
    return [label if sizes[label] >= min_size else -1 for label in labels]


def _args(args: Any) -> str:
    if args is None or args == "":
        return ""
    if isinstance(args, str):
        return args
    return json.dumps(args, sort_keys=True, default=str)


def baseline_text(step: WrongStep) -> str:
    """Everything the step shows, as plain words.

    >>> baseline_text(WrongStep(key="1", rollout="r", index=0, agent="WebSurfer",
    ...                         kind="message", content="I clicked it", after="page"))
    'WebSurfer message I clicked it page'
    """
    parts = [
        step.agent or step.role,
        step.kind,
        step.tool_name,
        _args(step.tool_args),
        step.content,
        step.before,
        step.after,
    ]
    return " ".join(" ".join(part.split()) for part in parts if part)


def tfidf_vectors(steps: Sequence[WrongStep], *, seed: int) -> np.ndarray:
    """TF-IDF (words and bigrams, sublinear) reduced by SVD and L2-normalised."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    texts = [baseline_text(step) for step in steps]
    sparse = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1).fit_transform(texts)
    components = max(1, min(SVD_COMPONENTS, sparse.shape[1] - 1, len(texts) - 1))
    reduced = TruncatedSVD(n_components=components, random_state=seed).fit_transform(sparse)
    return np.asarray(normalize(reduced), dtype=np.float64)


def tfidf_hdbscan(steps: Sequence[WrongStep], *, seed: int = 0) -> list[int]:
    """HDBSCAN on the TF-IDF + SVD vectors; -1 for unclustered."""
    import hdbscan

    vectors = tfidf_vectors(steps, seed=seed)
    if len(steps) < HDBSCAN_MIN_CLUSTER_SIZE:
        return [-1] * len(steps)
    clusterer = hdbscan.HDBSCAN(min_cluster_size=HDBSCAN_MIN_CLUSTER_SIZE, core_dist_n_jobs=1)
    return [int(label) for label in clusterer.fit_predict(vectors)]


def tfidf_kmeans(steps: Sequence[WrongStep], *, k: int, seed: int = 0) -> list[int]:
    """k-means on the TF-IDF + SVD vectors with the given k (at most one per step)."""
    from sklearn.cluster import KMeans

    vectors = tfidf_vectors(steps, seed=seed)
    model = KMeans(n_clusters=max(1, min(k, len(steps))), n_init=KMEANS_INIT, random_state=seed)
    return [int(label) for label in model.fit_predict(vectors)]
