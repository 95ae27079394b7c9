"""Dimension reduction and HDBSCAN, with parameters derived from the number of steps.

HDBSCAN in 384 (or 128) dimensions is slow and memory-hungry (20k points took minutes),
so vectors are first reduced by PCA to ``n_components`` (10 by default): there the
k-d tree makes the core distances cheap and 100k points cluster in well under a minute.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> centres = np.eye(3, 8) * 5
    >>> points = np.vstack([c + rng.normal(0, 0.3, (40, 8)) for c in centres])
    >>> model = fit_clusters(points, params_for_size(len(points)))
    >>> sorted(set(model.labels_.tolist()))
    [0, 1, 2]
    >>> labels, strengths = assign(model, points[:2])
    >>> labels.tolist() == model.labels_[:2].tolist()
    True
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

NOISE = -1


@dataclass(frozen=True)
class ClusterParams:
    """What HDBSCAN and the reduction are run with; stored on each clustering run."""

    min_cluster_size: int
    min_samples: int
    n_components: int = 10
    cluster_selection_method: str = "eom"
    random_state: int = 0
    # A cluster above this share of the steps is refitted with a size cap (see fit_clusters).
    max_cluster_share: float = 0.3
    # ...and the capped fit is kept only if it leaves at most this much more noise,
    max_extra_noise: float = 0.25
    # ...unless the uncapped blob held more than this share: then the capped fit always wins.
    max_blob_share: float = 0.5

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def params_for_size(n: int, *, n_components: int = 10, random_state: int = 0) -> ClusterParams:
    """Parameters scaled to the data: a misbehaviour must hold about 0.5% of the steps.

    The floor of 5 steps keeps three look-alike steps from being called a pattern on tiny
    projects; the ceiling keeps 100k steps from merging into a handful of blobs. Clusters
    are selected by excess of mass: leaf selection split grown groups into fragments
    (measured on synthetic data: 4 true groups became 6 once they grew by half).

    >>> params_for_size(300).min_cluster_size, params_for_size(100_000).min_cluster_size
    (5, 150)
    """
    min_cluster_size = int(min(150, max(5, round(0.005 * n))))
    min_samples = int(max(2, min(min_cluster_size, round(math.log2(max(n, 2))))))
    method = "eom"
    return ClusterParams(
        min_cluster_size=min_cluster_size,
        min_samples=min(min_samples, min_cluster_size),
        n_components=n_components,
        cluster_selection_method=method,
        random_state=random_state,
    )


class Reducer:
    """PCA to a few dimensions plus a 2-D projection for the map, fitted once per run."""

    def __init__(self, n_components: int = 10, random_state: int = 0) -> None:
        self.n_components = n_components
        self.random_state = random_state

    def fit(self, vectors: np.ndarray) -> Reducer:
        from sklearn.decomposition import PCA

        n, dims = vectors.shape
        components = max(1, min(self.n_components, dims, max(n - 1, 1)))
        solver = "randomized" if n > 5_000 else "full"
        self.pca_ = PCA(n_components=components, svd_solver=solver, random_state=self.random_state)
        self.pca_.fit(vectors)
        return self

    def transform(self, vectors: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(self.pca_.transform(vectors), dtype=np.float64)

    def map_coordinates(self, reduced: np.ndarray) -> np.ndarray:
        """2-D coordinates for the scatter map: the first two principal components."""
        coords = np.zeros((reduced.shape[0], 2))
        width = min(2, reduced.shape[1])
        coords[:, :width] = reduced[:, :width]
        return coords


def _hdbscan(params: ClusterParams, max_cluster_size: int = 0):
    import hdbscan

    return hdbscan.HDBSCAN(
        min_cluster_size=max(2, params.min_cluster_size),
        min_samples=params.min_samples,
        cluster_selection_method=params.cluster_selection_method,
        max_cluster_size=max_cluster_size,
        prediction_data=True,
        core_dist_n_jobs=1,
    )


def _noise(labels: np.ndarray) -> float:
    return float(np.mean(labels == NOISE)) if len(labels) else 0.0


def fit_clusters(reduced: np.ndarray, params: ClusterParams):  # -> hdbscan.HDBSCAN
    """HDBSCAN from the ``hdbscan`` package with prediction data for later assignment.

    Returns the fitted clusterer; ``labels_`` holds -1 for noise ("unclustered").
    Too few points for one cluster give all-noise labels without calling HDBSCAN.

    Excess-of-mass selection prefers one big parent over its children: on the demo
    project (Who&When and tau-bench together) it called 69% of the wrong steps one
    blob. When a cluster holds more than ``max_cluster_share`` of the steps, HDBSCAN is
    refitted with that size cap, which keeps the children instead, and the capped fit
    wins unless it leaves more than ``max_extra_noise`` more steps unclustered (three
    equal true groups must not become noise). A blob of more than ``max_blob_share`` of
    all wrong steps is never kept, whatever the noise: with the sentence model the 184
    Who&When decisive steps formed one 87% "misbehaviour" that named nothing, while the
    capped fit finds recognisable groups and calls the rest unclustered, which is what
    they are. ``capped_`` says which fit was kept.
    """
    n = reduced.shape[0]
    clusterer = _hdbscan(params)
    if n < max(params.min_cluster_size, params.min_samples + 1, 3):
        clusterer.labels_ = np.full(n, NOISE, dtype=np.intp)
        clusterer.probabilities_ = np.zeros(n)
        clusterer.too_small_ = True
        clusterer.capped_ = False
        return clusterer
    data = np.asarray(reduced, dtype=np.float64)
    clusterer.fit(data)
    clusterer.too_small_ = False
    clusterer.capped_ = False
    clustered = clusterer.labels_[clusterer.labels_ != NOISE]
    largest = int(np.bincount(clustered).max()) if len(clustered) else 0
    cap = int(params.max_cluster_share * n)
    if params.max_cluster_share and largest > cap >= 2 * params.min_cluster_size:
        capped = _hdbscan(params, max_cluster_size=cap).fit(data)
        blob = largest > params.max_blob_share * n
        if blob or _noise(capped.labels_) <= _noise(clusterer.labels_) + params.max_extra_noise:
            capped.too_small_ = False
            capped.capped_ = True
            return capped
    return clusterer


def assign(clusterer, reduced: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels and membership strengths of new points, via ``hdbscan.approximate_predict``.

    New points never create clusters: a point far from every cluster is noise (-1).
    """
    import hdbscan

    n = reduced.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0)
    if getattr(clusterer, "too_small_", False) or int(np.max(clusterer.labels_, initial=-1)) < 0:
        return np.full(n, NOISE, dtype=np.intp), np.zeros(n)
    labels, strengths = hdbscan.approximate_predict(
        clusterer, np.asarray(reduced, dtype=np.float64)
    )
    return np.asarray(labels, dtype=np.intp), np.asarray(strengths, dtype=np.float64)


def _finite(vectors: np.ndarray) -> np.ndarray:
    # hdbscan divides by zero on clusters of identical points (the same masked step many
    # times): such a membership says nothing, so it counts as none.
    with np.errstate(all="ignore"):
        return np.nan_to_num(np.atleast_2d(np.asarray(vectors, dtype=np.float64)), nan=0.0)


def soft_labels(
    clusterer, labels: np.ndarray, probabilities: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Noise points whose soft membership of one cluster is at least ``level`` join it.

    ``hdbscan.all_points_membership_vectors`` gives each point's probability of being in
    each cluster (its distance- and outlier-based memberships, times its probability of
    being in any cluster at all). At ``level`` 0.5 a point joins only a cluster it more
    likely belongs to than not; the clustered points keep their labels.
    """
    import hdbscan

    found = np.asarray(labels).copy()
    strengths = np.asarray(probabilities, dtype=np.float64).copy()
    if level <= 0 or int(found.max(initial=-1)) < 0 or not np.any(found == NOISE):
        return found, strengths
    vectors = _finite(hdbscan.all_points_membership_vectors(clusterer))
    best = vectors.argmax(axis=1)
    share = vectors.max(axis=1)
    joining = (found == NOISE) & (share >= level)
    found[joining] = best[joining]
    strengths[joining] = share[joining]
    return found, strengths


def member_level(clusterer, labels: np.ndarray, quantile: float) -> float:
    """The ``quantile`` of the clustered points' own best soft memberships: a noise point
    reaching it is as much a member as the weakest members already are."""
    import hdbscan

    clustered = np.asarray(labels) != NOISE
    if not np.any(clustered):
        return 0.0
    vectors = _finite(hdbscan.all_points_membership_vectors(clusterer))
    return float(np.quantile(vectors[clustered].max(axis=1), quantile))


def soft_assign(
    clusterer, reduced: np.ndarray, labels: np.ndarray, strengths: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """The same rule for new points that ``approximate_predict`` called noise."""
    import hdbscan

    noise = labels == NOISE
    if level <= 0 or not np.any(noise) or int(np.max(clusterer.labels_, initial=-1)) < 0:
        return labels, strengths
    vectors = _finite(
        hdbscan.membership_vector(clusterer, np.asarray(reduced[noise], dtype=np.float64))
    )
    best, share = vectors.argmax(axis=1), vectors.max(axis=1)
    labels, strengths = labels.copy(), strengths.copy()
    positions = np.flatnonzero(noise)
    keep = share >= level
    labels[positions[keep]] = best[keep]
    strengths[positions[keep]] = share[keep]
    return labels, strengths


def merge_map(reduced: np.ndarray, labels: np.ndarray) -> dict[int, int]:
    """Cluster label -> merged label, joining clusters whose centroids are nearer than
    either cluster's own median member-to-centroid distance (near-duplicates: the two
    overlap by their own spread). Labels are renumbered 0..m-1 in order of first label.

    >>> points = np.array([[0.0], [0.4], [0.1], [0.5], [9.0], [9.2]])
    >>> merge_map(points, np.array([0, 0, 1, 1, 2, 2]))
    {0: 0, 1: 0, 2: 1}
    """
    clusters = sorted(int(label) for label in set(labels.tolist()) if label != NOISE)
    centres, radii = {}, {}
    for label in clusters:
        members = reduced[labels == label]
        centres[label] = members.mean(axis=0)
        radii[label] = float(np.median(np.linalg.norm(members - centres[label], axis=1)))
    parent = {label: label for label in clusters}

    def root(label: int) -> int:
        while parent[label] != label:
            label = parent[label]
        return label

    for position, first in enumerate(clusters):
        for second in clusters[position + 1 :]:
            distance = float(np.linalg.norm(centres[first] - centres[second]))
            if distance < min(radii[first], radii[second]):
                a, b = root(first), root(second)
                parent[max(a, b)] = min(a, b)
    roots = sorted({root(label) for label in clusters})
    number = {r: i for i, r in enumerate(roots)}
    return {label: number[root(label)] for label in clusters}


def apply_map(labels: np.ndarray, mapping: dict[int, int] | None) -> np.ndarray:
    """Labels through a merge map (noise stays noise)."""
    if not mapping:
        return labels
    return np.array([mapping.get(int(label), NOISE) for label in labels], dtype=np.intp)
