"""The whole clustering of a project's wrong steps, and the assignment of new ones.

``cluster_wrong_steps`` embeds (through the cache), reduces, clusters, describes and
returns a :class:`ClusteringOutcome` whose ``model`` can be pickled and used later by
``assign_wrong_steps`` to place new steps into the existing misbehaviours without a
full re-clustering. ``should_recluster`` says when the data grew enough for a new one.

Example:
    >>> from analysis.core.steps import WrongStep
    >>> steps = [WrongStep(key=f"{g}{i}", rollout=f"r{g}{i}", index=0, kind="tool_call",
    ...                    tool_name=tool, content=f"{word} {word} problem {i % 3}")
    ...          for g, (tool, word) in enumerate([("book", "seat"), ("cancel", "refund"),
    ...                                            ("search", "query")])
    ...          for i in range(12)]
    >>> outcome = cluster_wrong_steps(steps, seed=0)
    >>> sorted(profile.pattern for profile in outcome.profiles.values())
    ['calls book', 'calls cancel', 'calls search']
    >>> labels, _, _ = assign_wrong_steps(outcome.model, steps[:2])
    >>> labels.tolist() == outcome.labels[:2].tolist()
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.core.cluster import (
    NOISE,
    ClusterParams,
    Reducer,
    apply_map,
    assign,
    fit_clusters,
    member_level,
    merge_map,
    params_for_size,
    soft_assign,
    soft_labels,
)
from analysis.core.cluster_summary import summarise
from analysis.core.embeddings import (
    TFIDF,
    WORDLLAMA,
    EmbeddingCache,
    TfidfSvdEmbedder,
    embed_texts,
    make_embedder,
)
from analysis.core.naming import dominant_signals
from analysis.core.profiles import MisbehaviourProfile, describe_clusters, top_share
from analysis.core.representation import SIGNAL_WEIGHT, STRUCTURE_WEIGHT, StepRepresenter
from analysis.core.steps import Source, WrongStep, step_text

#: Re-cluster from scratch when the wrong steps grew by this fraction since the last run.
RECLUSTER_GROWTH = 0.25
#: ... or when this many more labelled decisive steps are among them (and a quarter more).
RECLUSTER_LABELS = 5
#: The adopted settings of the variants of docs/clustering.md ("Variants tried"): none of
#: soft assignment of noise (an absolute level, or a quantile of the members' own) and
#: merging near clusters was adopted.
SOFT_NOISE = 0.0
SOFT_NOISE_QUANTILE = 0.0
MERGE_NEAR = False
#: Clusters whose names only an ordinal tells apart become one (docs/clustering.md).
MERGE_UNTOLD = True
#: A cluster whose members weigh less than one wrong step is not a misbehaviour: a
#: member's weight is its chance of being its rollout's decisive error (1 for a label, an
#: unlabelled rollout's candidates sharing one), so the cluster is expected to hold no
#: decisive error at all. A group of low-probability signal steps of three rollouts
#: weighed 0.02 and was listed as "0% of wrong steps", recurring in no task.
MIN_CLUSTER_WEIGHT = 1.0
#: Points used for the silhouette and DBCV scores (DBCV is quadratic per cluster).
METRIC_SAMPLE = 2_000

Progress = Callable[[str, float], None]


@dataclass
class FittedPipeline:
    """Everything needed to place new steps where the last full run would have."""

    backend: str
    embedder: Any
    reducer: Reducer
    clusterer: Any
    params: ClusterParams
    # None for models of the plain pipeline (and pickles made before it existed).
    representer: StepRepresenter | None = None
    # HDBSCAN label -> misbehaviour label after merging near-duplicates (None: no merge),
    # and the soft-membership level at which noise joins a cluster (0: never).
    label_map: dict[int, int] | None = None
    soft_noise: float = 0.0
    # Misbehaviour label -> the signals its name is made of (``required_signals``); a new
    # step joins a misbehaviour only when it shows them all. None: no gate (the plain
    # pipeline, and pickles made before the gate existed).
    required_signals: dict[int, tuple[str, ...]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        embedder = state["embedder"]
        if hasattr(embedder, "session_"):  # an ONNX session is rebuilt on load, not pickled
            embedder = type(embedder)(
                **{k: v for k, v in vars(embedder).items() if not k.endswith("_")}
            )
            state["embedder"] = embedder
        return state


@dataclass
class ClusteringOutcome:
    steps: list[WrongStep]
    labels: np.ndarray
    probabilities: np.ndarray
    coords: np.ndarray
    profiles: dict[int, MisbehaviourProfile]
    model: FittedPipeline
    metrics: dict[str, Any] = field(default_factory=dict)


def _noop(stage: str, fraction: float) -> None:
    return None


def canonical_order(steps: Sequence[WrongStep]) -> list[WrongStep]:
    """Steps sorted by key, one per key (the heaviest kept): input order never matters."""
    by_key: dict[str, WrongStep] = {}
    for step in steps:
        kept = by_key.get(step.key)
        if kept is None or step.weight > kept.weight:
            by_key[step.key] = step
    return [by_key[key] for key in sorted(by_key)]


def quality_metrics(reduced: np.ndarray, labels: np.ndarray, *, seed: int = 0) -> dict[str, Any]:
    """Silhouette (clustered points only) and DBCV (hdbscan.validity_index) on a sample."""
    import hdbscan
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(seed)
    index = np.arange(len(labels))
    if len(index) > METRIC_SAMPLE:
        index = np.sort(rng.choice(index, METRIC_SAMPLE, replace=False))
    sample, sample_labels = reduced[index], labels[index]
    clustered = sample_labels != NOISE
    silhouette = dbcv = None
    if len(set(sample_labels[clustered].tolist())) >= 2:
        silhouette = float(silhouette_score(sample[clustered], sample_labels[clustered]))
        try:
            with np.errstate(all="ignore"):
                value = float(
                    hdbscan.validity_index(np.asarray(sample, dtype=np.float64), sample_labels)
                )
            dbcv = value if np.isfinite(value) else None
        except (ValueError, ZeroDivisionError, IndexError, AssertionError):
            # hdbscan's DBCV asserts on clusters of identical points (the same masked step
            # many times): a quality figure must never fail the clustering it describes.
            dbcv = None
    return {"silhouette": silhouette, "dbcv": dbcv}


def cluster_wrong_steps(
    steps: Sequence[WrongStep],
    *,
    backend: str = WORDLLAMA,
    cache: EmbeddingCache | None = None,
    seed: int = 0,
    params: ClusterParams | None = None,
    success_steps: Sequence[WrongStep] = (),
    rollout_failed: Mapping[str, bool] | None = None,
    embedder_options: Mapping[str, Any] | None = None,
    with_metrics: bool = True,
    progress: Progress = _noop,
    behaviour: bool = True,
    rollout_length: Mapping[str, int] | None = None,
    rollout_group: Mapping[str, str] | None = None,
    modes: Sequence[Mapping[str, str]] | None = None,
    signal_weight: float = SIGNAL_WEIGHT,
    structure_weight: float = STRUCTURE_WEIGHT,
    soft_noise: float = SOFT_NOISE,
    soft_noise_quantile: float = SOFT_NOISE_QUANTILE,
    merge_near: bool = MERGE_NEAR,
    merge_untold: bool = MERGE_UNTOLD,
) -> ClusteringOutcome:
    """Cluster the wrong steps into misbehaviours (a full run).

    With ``behaviour`` (the default) each step is embedded as its masked text with its
    signals and error template, and its signal vector joins the embedding
    (:mod:`analysis.core.representation`); ``behaviour=False`` is the plain pipeline
    (raw step text only), kept as a baseline. ``rollout_length`` and ``rollout_group``
    (rollout key to step count and environment) give the length-stratified lift;
    ``modes`` the taxonomy the suggested categories come from (MAST by default).
    ``signal_weight`` and ``structure_weight`` give the signal and structural blocks
    that share of the text embedding's variance; ``soft_noise`` lets a noise step join
    the cluster its soft membership reaches that level for (``soft_noise_quantile``: the
    level is that quantile of the clustered steps' own best memberships); ``merge_near`` joins
    clusters whose centroids lie within their own spread (see ``analysis.core.cluster``).
    """
    timings: dict[str, float] = {}
    ordered = canonical_order(steps)
    representer = (
        StepRepresenter(signal_weight, structure_weight).fit([*ordered, *success_steps])
        if behaviour
        else None
    )
    if representer is not None:
        representer.remember()
    texts = [representer.text(step) if representer else step_text(step) for step in ordered]

    started = time.perf_counter()
    progress("embedding", 0.0)
    options = dict(embedder_options or {})
    if backend == TFIDF:
        options.setdefault("random_state", seed)
    embedder = make_embedder(backend, **options)
    if not ordered:
        empty = np.zeros(0)
        model = FittedPipeline(
            backend, embedder, Reducer(), None, params or params_for_size(0), representer
        )
        nothing = {"steps": 0, "clusters": 0, "noise_share": 0.0, "top8_share": 0.0}
        if representer is not None:
            representer.forget()
        return ClusteringOutcome(
            [], empty.astype(np.intp), empty, np.zeros((0, 2)), {}, model, nothing
        )
    if isinstance(embedder, TfidfSvdEmbedder):
        embedder.fit(texts)
    vectors = embed_texts(texts, embedder, cache)
    if representer is not None:
        representer.fit_scale(vectors, representer.signal_matrix(ordered), ordered)
        vectors = representer.combine(vectors, ordered)
    timings["embed_s"] = time.perf_counter() - started

    started = time.perf_counter()
    progress("reducing", 0.4)
    chosen = params or params_for_size(len(ordered), random_state=seed)
    if len(ordered) >= 2:
        reducer = Reducer(n_components=chosen.n_components, random_state=seed).fit(vectors)
        reduced = reducer.transform(vectors)
    else:
        reducer = Reducer(n_components=chosen.n_components, random_state=seed)
        reduced = np.zeros((len(ordered), 1))
    timings["reduce_s"] = time.perf_counter() - started

    started = time.perf_counter()
    progress("clustering", 0.55)
    clusterer = fit_clusters(reduced, chosen)
    labels = np.asarray(clusterer.labels_, dtype=np.intp)
    probabilities = np.asarray(clusterer.probabilities_, dtype=np.float64)
    if soft_noise_quantile > 0 and not getattr(clusterer, "too_small_", False):
        soft_noise = member_level(clusterer, labels, soft_noise_quantile)
    if soft_noise > 0 and not getattr(clusterer, "too_small_", False):
        labels, probabilities = soft_labels(clusterer, labels, probabilities, soft_noise)
    label_map = merge_map(reduced, labels) if merge_near else None
    labels = apply_map(labels, label_map)
    timings["cluster_s"] = time.perf_counter() - started
    model = FittedPipeline(
        backend=backend,
        embedder=embedder,
        reducer=reducer,
        clusterer=clusterer,
        params=chosen,
        representer=representer,
        label_map=label_map,
        soft_noise=soft_noise,
    )

    started = time.perf_counter()
    progress("describing", 0.8)

    def assign_successes() -> list[tuple[str, int]]:
        if not (success_steps and rollout_failed):
            return []
        success_labels, _, _ = assign_wrong_steps(model, success_steps, cache=cache)
        return [(step.rollout, int(label)) for step, label in zip(success_steps, success_labels)]

    def described(
        labels: np.ndarray, assigned_success: list[tuple[str, int]]
    ) -> dict[int, MisbehaviourProfile]:
        return describe_clusters(
            ordered,
            labels,
            probabilities,
            assigned_success=assigned_success,
            rollout_failed=rollout_failed,
            representer=representer,
            rollout_length=rollout_length,
            rollout_group=rollout_group,
            sampled_success={step.rollout for step in success_steps},
            modes=modes,
        )

    if representer is not None:
        model.required_signals = required_signals(ordered, labels)
    assigned_success = assign_successes()
    profiles = described(labels, assigned_success)

    def remapped(mapping: dict[int, int]) -> dict[int, MisbehaviourProfile]:
        # Labels through ``mapping`` (a label it leaves out becomes noise), in the fitted
        # model too, so that a new step lands where a fresh run would put it.
        nonlocal labels, assigned_success
        labels = apply_map(labels, mapping)
        model.label_map = (
            {raw: mapping.get(label, NOISE) for raw, label in model.label_map.items()}
            if model.label_map
            else mapping
        )
        if representer is not None:
            model.required_signals = required_signals(ordered, labels)
        assigned_success = [
            (rollout, mapping.get(label, NOISE)) for rollout, label in assigned_success
        ]
        return described(labels, assigned_success)

    untold = {label: p.untold_with for label, p in profiles.items() if p.untold_with is not None}
    if merge_untold and untold:
        # Clusters that only an ordinal told apart are one misbehaviour to whoever reads
        # the names: "Orchestrator repeats the same action (2)", "(3)", ... were five.
        # No trait told the parts apart, so they share their dominant signals, and the
        # merged cluster requires the same ones: each success assigned to a part belongs
        # to the merged one, as a fresh assignment would find (the test checks it).
        profiles = remapped({label: untold.get(label, label) for label in profiles})
    weightless = [label for label, p in profiles.items() if p.weight < MIN_CLUSTER_WEIGHT]
    if weightless:
        profiles = remapped({label: label for label in profiles if label not in weightless})
    coords = reducer.map_coordinates(reduced) if len(ordered) >= 2 else np.zeros((len(ordered), 2))
    timings["describe_s"] = time.perf_counter() - started

    metrics: dict[str, Any] = {
        "steps": len(ordered),
        "clusters": len(profiles),
        "noise_share": float(np.mean(labels == NOISE)) if len(labels) else 0.0,
        "capped": bool(getattr(clusterer, "capped_", False)),
        "top8_share": top_share(profiles, 8),
        **{key: round(value, 4) for key, value in timings.items()},
    }
    if with_metrics and len(ordered) >= 3:
        started = time.perf_counter()
        metrics.update(quality_metrics(reduced, labels, seed=seed))
        metrics["metrics_s"] = round(time.perf_counter() - started, 4)
    if representer is not None:
        representer.forget()
    progress("done", 1.0)
    return ClusteringOutcome(
        steps=ordered,
        labels=labels,
        probabilities=probabilities,
        coords=coords,
        profiles=profiles,
        model=model,
        metrics=metrics,
    )


def assign_wrong_steps(
    model: FittedPipeline, steps: Sequence[WrongStep], *, cache: EmbeddingCache | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, membership strengths and 2-D map coordinates for new steps.

    Uses the fitted embedder, PCA and ``hdbscan.approximate_predict``: no cluster is
    created or moved, so it costs milliseconds per hundred steps.
    """
    if not steps:
        return np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros((0, 2))
    representer = getattr(model, "representer", None)
    texts = [representer.text(step) if representer else step_text(step) for step in steps]
    vectors = embed_texts(texts, model.embedder, cache)
    if representer is not None:
        vectors = representer.combine(vectors, steps)
    if not hasattr(model.reducer, "pca_"):
        return (
            np.full(len(steps), NOISE, dtype=np.intp),
            np.zeros(len(steps)),
            np.zeros((len(steps), 2)),
        )
    reduced = model.reducer.transform(vectors)
    labels, strengths = assign(model.clusterer, reduced)
    soft = getattr(model, "soft_noise", 0.0)
    if soft > 0:
        labels, strengths = soft_assign(model.clusterer, reduced, labels, strengths, soft)
    labels = apply_map(labels, getattr(model, "label_map", None))
    labels, strengths = gate_by_signals(
        labels, strengths, steps, getattr(model, "required_signals", None)
    )
    return labels, strengths, model.reducer.map_coordinates(reduced)


def required_signals(steps: Sequence[WrongStep], labels: np.ndarray) -> dict[int, tuple[str, ...]]:
    """Per misbehaviour, the signals its name is made of (``naming.dominant_signals``).

    A misbehaviour named "gives up right after a failure" must not take in a step that
    did not give up: nearest in the embedding is not the same behaviour, and a successful
    rollout's closing reply placed there made giving up look protective (failure lift
    0.24x on a project where only failures gave up).

    >>> from analysis.core.steps import WrongStep
    >>> steps = [WrongStep(key=str(i), rollout="r", index=i, signals=("gave_up_after_failure",))
    ...          for i in range(3)]
    >>> required_signals(steps, np.array([0, 0, -1]))
    {0: ('gave_up_after_failure',)}
    """
    members: dict[int, list[Sequence[str]]] = {}
    for step, label in zip(steps, labels.tolist()):
        if label != NOISE:
            members.setdefault(int(label), []).append(step.signals)
    return {
        label: tuple(dominant_signals(summarise(signals=group, tools=(), agents=(), templates=())))
        for label, group in sorted(members.items())
    }


def gate_by_signals(
    labels: np.ndarray,
    strengths: np.ndarray,
    steps: Sequence[WrongStep],
    required: Mapping[int, Sequence[str]] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """New steps placed in a misbehaviour without the signals it requires become noise.

    >>> from analysis.core.steps import WrongStep
    >>> step = WrongStep(key="1", rollout="r", index=0, signals=())
    >>> gate_by_signals(np.array([0]), np.array([0.9]), [step], {0: ("gave_up_after_failure",)})
    (array([-1]), array([0.]))
    """
    if not required:
        return labels, strengths
    labels = np.array(labels, copy=True)
    strengths = np.array(strengths, dtype=np.float64, copy=True)
    for position, (step, label) in enumerate(zip(steps, labels.tolist())):
        needed = required.get(int(label), ()) if label != NOISE else ()
        if needed and not set(needed) <= set(step.signals):
            labels[position] = NOISE
            strengths[position] = 0.0
    return labels, strengths


def should_recluster(
    *,
    clustered_at_last_run: int,
    current: int,
    growth: float = RECLUSTER_GROWTH,
    labelled_at_last_run: int | None = None,
    labelled: int = 0,
) -> bool:
    """True when no full run exists yet, the wrong steps grew by ``growth`` since it, or
    the labelled ones grew by ``growth`` and at least ``RECLUSTER_LABELS`` (a label
    replaces its rollout's guessed steps by the one it names: assignment alone kept the
    groups made before twenty labels of an unseen system; None: the run did not count).

    >>> should_recluster(clustered_at_last_run=0, current=10)
    True
    >>> should_recluster(clustered_at_last_run=1000, current=1100)
    False
    >>> should_recluster(clustered_at_last_run=1000, current=1300)
    True
    >>> should_recluster(clustered_at_last_run=100, current=100, labelled_at_last_run=0, labelled=4)
    False
    >>> should_recluster(clustered_at_last_run=100, current=100, labelled_at_last_run=0, labelled=5)
    True
    """
    if clustered_at_last_run <= 0:
        return True
    if labelled_at_last_run is not None and labelled >= labelled_at_last_run + max(
        RECLUSTER_LABELS, growth * labelled_at_last_run
    ):
        return True
    return current >= clustered_at_last_run * (1.0 + growth)


def labelled_count(steps: Sequence[WrongStep]) -> int:
    """How many of the wrong steps are labelled decisive steps."""
    return sum(1 for step in steps if step.source == Source.LABEL)
