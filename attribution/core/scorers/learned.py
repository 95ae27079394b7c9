"""The default scorer: a linear model over per-step features, normalised per trajectory.

Two training objectives, both normalised by a per-trajectory softmax of the step logits
(divided by ``temperature``); the default was chosen by the evaluation in
docs/attribution.md (model selection table: higher step accuracy and removal on both
Who&When subsets, at a slightly worse log-likelihood):

- ``softmax``: a conditional logit. Step i of trajectory t gets the logit
  w . x_ti and p_ti = softmax_i(w . x_t); w minimises the negative log-likelihood of the
  labelled steps plus an L2 penalty ||w||^2 / (2C). The model is trained directly for the
  quantity the conformal sets consume: one distribution per trajectory.
- ``pointwise`` (default): scikit-learn's LogisticRegression on "is this the decisive step?" with
  balanced classes, its decision function softmaxed within each trajectory.
- ``hazard``: a discrete-time first-event model (:mod:`attribution.core.scorers.hazard`):
  per-step hazards sigmoid(w . x_i) fitted by LogisticRegression on the steps up to and
  including the labelled one, P(decisive = i) = h_i * prod_{j<i} (1 - h_j) normalised over
  the rollout, so the first of several bad-looking steps takes the mass.
- ``pairwise``, and the ``agent_stage``, ``stacked`` and ``structure`` options: ranking,
  two-stage and rollout-relative variants measured in the model-selection table and not
  adopted (:mod:`attribution.core.scorers.ranking`,
  :mod:`attribution.core.structure_features`).

Features are standardised with the training rows' mean and scale (``mean_``, ``scale_``).

Example:
    >>> from types import SimpleNamespace as NS
    >>> def traj(bad):
    ...     return NS(task_text="", steps=[NS(role="assistant", content="ok"),
    ...               NS(role="assistant", content="Error!" if bad == 1 else "fine"),
    ...               NS(role="assistant", content="Error!" if bad == 2 else "done")])
    >>> trajs = [traj(1), traj(2)] * 5
    >>> scorer = LearnedScorer(C=10.0).fit(trajs, [0, 1] * 5)
    >>> scorer.predict([traj(1), traj(2)]).tolist()
    [0, 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold

from attribution.core.content_features import (
    CONTENT_FEATURES,
    content_features,
    relative_feature_names,
    relative_features,
)
from attribution.core.features import FEATURE_VERSION, feature_names, step_features
from attribution.core.scorers.base import (
    MSG_NOT_FITTED,
    Steps,
    StepScorer,
    check_training_data,
    softmax,
)
from attribution.core.scorers.hazard import first_event_log_mass, survival_rows
from attribution.core.scorers.ranking import (
    agent_codes,
    agent_stage,
    pairwise_rows,
    rollout_relative,
)
from attribution.core.structure_features import STRUCTURE_FEATURES, structure_features
from attribution.core.view import TrajectoryView

OBJECTIVES = ("softmax", "pointwise", "pairwise", "hazard", "boosted")
MSG_BAD_OBJECTIVE = "objective must be 'softmax', 'pointwise', 'pairwise', 'hazard' or 'boosted'."
# The stacked variant's second stage: few columns, so a mild penalty; folds for its
# out-of-fold first-stage scores.
STACK_C = 1.0
STACK_FOLDS = 3
MSG_BAD_C = "C must be a positive number."
MSG_BAD_TEMPERATURE = "temperature must be a positive number."


def _segment_softmax(
    logits: NDArray[np.float64], starts: NDArray[np.int64], rows: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-trajectory softmax of stacked logits and each trajectory's log-normaliser."""
    peaks = np.maximum.reduceat(logits, starts)
    weights = np.exp(logits - peaks[rows])
    totals = np.add.reduceat(weights, starts)
    return weights / totals[rows], np.log(totals) + peaks


class LearnedScorer(StepScorer):
    """Linear per-step model, per-trajectory softmax; scikit-learn conventions."""

    kind: ClassVar[str] = "learned"

    def __init__(
        self,
        C: float = 0.01,  # noqa: N803 (scikit-learn's name)
        objective: str = "pointwise",
        text_buckets: int = 64,
        max_iter: int = 500,
        temperature: float = 1.0,
        random_state: int | None = 0,
        content: bool = False,
        structure: bool = False,
        agent_stage: bool = False,
        stacked: bool = False,
    ) -> None:
        self.C = C
        self.content = content
        self.structure = structure
        self.agent_stage = agent_stage
        self.stacked = stacked
        self.temperature = temperature
        self.objective = objective
        self.text_buckets = text_buckets
        self.max_iter = max_iter
        self.random_state = random_state

    def get_params(self) -> dict[str, Any]:
        return {
            "C": self.C,
            "objective": self.objective,
            "text_buckets": self.text_buckets,
            "max_iter": self.max_iter,
            "temperature": self.temperature,
            "random_state": self.random_state,
            "content": self._content,
            "structure": self._option("structure"),
            "agent_stage": self._option("agent_stage"),
            "stacked": self._option("stacked"),
        }

    @property
    def feature_version(self) -> str:
        return (
            f"{FEATURE_VERSION}-t{self.text_buckets}"
            + ("-c1" if self._content else "")
            + ("-s1" if self._option("structure") else "")
            + ("-a1" if self._option("agent_stage") else "")
        )

    @property
    def _content(self) -> bool:
        return self._option("content")

    def _option(self, name: str) -> bool:
        # Scorers pickled before an option existed have no such attribute.
        return bool(getattr(self, name, False))

    def features(self, trajectory: Any) -> NDArray[np.float64]:
        """The step matrix; with ``agent_stage`` its last column is each step's agent code,
        which the model does not weigh (it only regroups the probabilities)."""
        matrix = step_features(trajectory, text_buckets=self.text_buckets)
        if self._content:
            matrix = np.hstack((matrix, content_features(trajectory)))
            names = feature_names(self.text_buckets) + list(CONTENT_FEATURES)
            matrix = np.hstack((matrix, relative_features(matrix, names)))
        if self._option("structure"):
            matrix = np.hstack((matrix, structure_features(trajectory)))
        if self._option("agent_stage"):
            matrix = np.hstack((matrix, agent_codes(trajectory)[:, None]))
        return matrix

    def _feature_names(self) -> list[str]:
        names = feature_names(self.text_buckets)
        if self._content:
            names += list(CONTENT_FEATURES) + relative_feature_names()
        if self._option("structure"):
            names += list(STRUCTURE_FEATURES)
        return names

    def _weighed(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        return matrix[:, :-1] if self._option("agent_stage") else matrix

    def fit(self, trajectories: Sequence[Any], decisive_steps: Steps) -> LearnedScorer:
        views, steps = check_training_data(trajectories, decisive_steps)
        return self.fit_matrices([self.features(v) for v in views], steps)

    def fit_matrices(
        self, matrices: Sequence[NDArray[np.float64]], decisive_steps: Steps
    ) -> LearnedScorer:
        """Fit on precomputed :meth:`features` matrices (the evaluation reuses them)."""
        if self.objective not in OBJECTIVES:
            raise ValueError(MSG_BAD_OBJECTIVE)
        if not self.C > 0:
            raise ValueError(MSG_BAD_C)
        if not self.temperature > 0:
            raise ValueError(MSG_BAD_TEMPERATURE)
        steps = np.asarray(list(decisive_steps), dtype=np.int64)
        weighed = [self._weighed(x) for x in matrices]
        if not any(x.shape[0] > 0 for x in weighed):
            raise ValueError("LearnedScorer needs at least one labelled trajectory with steps.")
        if self._option("stacked"):
            return self._fit_stacked(weighed, steps)
        return self._fit_first_stage(weighed, steps)

    def _fit_first_stage(
        self, matrices: Sequence[NDArray[np.float64]], steps: NDArray[np.int64]
    ) -> LearnedScorer:
        kept = [i for i, x in enumerate(matrices) if x.shape[0] > 0]
        lengths = np.array([matrices[i].shape[0] for i in kept])
        stacked = np.vstack([matrices[i] for i in kept])
        self.mean_ = stacked.mean(axis=0)
        scale = stacked.std(axis=0)
        self.scale_ = np.where(scale > 1e-12, scale, 1.0)
        # Standardised in place: the stacked rows are the largest array of a fit.
        x = stacked
        x -= self.mean_
        x /= self.scale_
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        targets = starts + steps[kept]
        self.n_features_in_ = x.shape[1]
        self.feature_names_in_ = np.array(self._feature_names(), dtype=object)
        if self.objective == "boosted":
            y = np.zeros(x.shape[0], dtype=np.int64)
            y[targets] = 1
            self.booster_ = HistGradientBoostingClassifier(
                max_iter=self.max_iter,
                learning_rate=0.05,
                max_leaf_nodes=8,
                min_samples_leaf=20,
                l2_regularization=1.0 / self.C,
                class_weight="balanced",
                early_stopping=False,
                random_state=self.random_state,
            ).fit(x, y)
            self.coef_ = np.zeros(x.shape[1])
            self.intercept_ = 0.0
            return self
        if self.objective == "pointwise":
            y = np.zeros(x.shape[0], dtype=np.int64)
            y[targets] = 1
            model = LogisticRegression(
                C=self.C,
                class_weight="balanced",
                max_iter=self.max_iter,
                random_state=self.random_state,
            )
            model.fit(x, y)
            self.coef_ = model.coef_.ravel().astype(np.float64)
            self.intercept_ = float(model.intercept_[0])
            return self
        if self.objective == "hazard":
            at_risk = survival_rows(lengths, steps[kept])
            y = np.zeros(x.shape[0], dtype=np.int64)
            y[targets] = 1
            # Unweighted: the fitted h_i must stay conditional probabilities for the
            # product of survivals to mean anything (balanced classes would inflate them).
            hazard = LogisticRegression(
                C=self.C, max_iter=self.max_iter, random_state=self.random_state
            ).fit(x[at_risk], y[at_risk])
            self.coef_ = hazard.coef_.ravel().astype(np.float64)
            self.intercept_ = float(hazard.intercept_[0])
            return self
        if self.objective == "pairwise":
            pairs, labels, weights = pairwise_rows(x, lengths, steps[kept])
            if not pairs.shape[0]:
                raise ValueError("The pairwise objective needs a rollout with two steps.")
            ranker = LogisticRegression(
                C=self.C,
                fit_intercept=False,
                max_iter=self.max_iter,
                random_state=self.random_state,
            )
            # Weights scaled to one per row on average, so C means what it means pointwise.
            ranker.fit(pairs, labels, sample_weight=weights * weights.size / weights.sum())
            self.coef_ = ranker.coef_.ravel().astype(np.float64)
            self.intercept_ = 0.0
            return self
        rows = np.repeat(np.arange(len(kept)), lengths)

        def loss_and_grad(w: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
            logits = x @ w
            probs, log_norm = _segment_softmax(logits, starts, rows)
            nll = float(np.sum(log_norm - logits[targets]))
            residual = probs
            residual[targets] -= 1.0
            grad = x.T @ residual + w / self.C
            return nll + float(w @ w) / (2 * self.C), grad

        # A zero start and a deterministic quasi-Newton solver: the same data and
        # parameters always give the same weights; random_state has nothing to draw here.
        result = minimize(
            loss_and_grad,
            np.zeros(x.shape[1]),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": self.max_iter},
        )
        self.coef_ = np.asarray(result.x, dtype=np.float64)
        self.intercept_ = 0.0
        self.n_iter_ = int(result.nit)
        return self

    def _fit_stacked(
        self, matrices: Sequence[NDArray[np.float64]], steps: NDArray[np.int64]
    ) -> LearnedScorer:
        """First stage on everything; second stage on out-of-fold first-stage logits."""
        params = {**self.get_params(), "stacked": False, "agent_stage": False}
        kept = [i for i, x in enumerate(matrices) if x.shape[0] > 0]
        folds = KFold(
            n_splits=min(STACK_FOLDS, len(kept)), shuffle=True, random_state=self.random_state
        )
        relative: list[NDArray[np.float64]] = []
        targets: list[NDArray[np.int64]] = []
        for train, held in folds.split(kept) if len(kept) > 1 else []:
            inner = LearnedScorer(**params)._fit_first_stage(
                [matrices[kept[j]] for j in train], steps[[kept[j] for j in train]]
            )
            for j in held:
                i = kept[j]
                relative.append(rollout_relative(inner._logits(matrices[i])))
                target = np.zeros(matrices[i].shape[0], dtype=np.int64)
                target[steps[i]] = 1
                targets.append(target)
        self._fit_first_stage(matrices, steps)
        if not relative:
            return self  # one rollout: nothing to stack on
        z = np.vstack(relative)
        self.stage2_mean_ = z.mean(axis=0)
        scale = z.std(axis=0)
        self.stage2_scale_ = np.where(scale > 1e-12, scale, 1.0)
        second = LogisticRegression(
            C=STACK_C,
            class_weight="balanced",
            max_iter=self.max_iter,
            random_state=self.random_state,
        ).fit((z - self.stage2_mean_) / self.stage2_scale_, np.concatenate(targets))
        self.stage2_coef_ = second.coef_.ravel().astype(np.float64)
        return self

    def _logits(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        standardised = (matrix - self.mean_) / self.scale_
        if hasattr(self, "booster_"):
            return np.asarray(self.booster_.decision_function(standardised), dtype=np.float64)
        logits = standardised @ self.coef_ + self.intercept_
        if self.objective == "hazard":
            logits = first_event_log_mass(logits)
        if hasattr(self, "stage2_coef_"):
            z = (rollout_relative(logits) - self.stage2_mean_) / self.stage2_scale_
            logits = z @ self.stage2_coef_
        return np.asarray(logits, dtype=np.float64)

    def proba_from_matrix(self, matrix: NDArray[np.float64]) -> NDArray[np.float64]:
        if not hasattr(self, "coef_"):
            raise RuntimeError(MSG_NOT_FITTED)
        if matrix.shape[0] == 0:
            return np.zeros(0)
        probabilities = softmax(self._logits(self._weighed(matrix)) / self.temperature)
        if self._option("agent_stage"):
            return agent_stage(probabilities, matrix[:, -1])
        return probabilities

    def _scores(self, view: TrajectoryView) -> NDArray[np.float64]:
        return self.proba_from_matrix(self.features(view))

    def top_features(self, k: int = 10) -> list[tuple[str, float]]:
        """The k features with the largest absolute standardised weights."""
        if not hasattr(self, "coef_"):
            raise RuntimeError(MSG_NOT_FITTED)
        order = np.argsort(-np.abs(self.coef_))[:k]
        return [(str(self.feature_names_in_[i]), float(self.coef_[i])) for i in order]
