"""Action-level analysis: how deviations from the gold actions change the odds of success.

Pure Python and numpy/scikit-learn, no Django: ``attribution.action_analysis`` feeds it
plain lists read from the database and stores what it returns.

Each rollout's tool calls are diffed against its gold actions (tau-bench keeps them in
``info.task.actions``). A call that matches no gold action with the same name and the same
arguments is an *extra* deviation; a gold action that no call matches is a *missing* one.
Deviations are split by whether the tool changes the world's state (mutating: book, cancel,
update...) or only reads it. A logistic regression of success on the two counts then says
how the odds of success change per extra deviation of each kind (odds ratio exp(beta)),
with a 95% Wald interval.

Example:
    >>> gold = [GoldAction("book", {"id": 1}, True)]
    >>> calls = [ToolCall(3, "get_user", {}, False), ToolCall(5, "book", {"id": 2}, True)]
    >>> diff = diff_actions(calls, gold)
    >>> (diff.mutating, diff.read_only, diff.decisive_step)
    (2, 1, 5)
    >>> diff.decisive_reason
    'book called with arguments that no gold action has'
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ingest.core.vocabulary import is_mutating_tool

Z95 = 1.959964
MIN_ROLLOUTS = 10
REGULARISATION_C = 100.0


@dataclass(frozen=True)
class ToolCall:
    step_index: int
    name: str
    args: Any
    is_mutating: bool | None


@dataclass(frozen=True)
class GoldAction:
    name: str
    kwargs: Any
    is_mutating: bool | None


@dataclass
class ActionDiff:
    """Deviations of one rollout from its gold actions."""

    mutating: int = 0
    read_only: int = 0
    extra: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    decisive_step: int | None = None
    decisive_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RolloutActions:
    rollout_id: int
    success: bool
    calls: Sequence[ToolCall]
    gold: Sequence[GoldAction]


@dataclass
class OddsRatio:
    kind: str
    coefficient: float
    odds_ratio: float
    low: float
    high: float
    mean_deviations: float

    @property
    def change_percent(self) -> float:
        """How the odds of success change per extra deviation, in percent (-92 = cut by 92%)."""
        return 100.0 * (self.odds_ratio - 1.0)


@dataclass
class ActionAnalysisResult:
    rollouts: int
    with_gold: int
    successes: int
    odds: list[OddsRatio]
    success_by_count: list[dict[str, Any]]
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for item, odds in zip(data["odds"], self.odds):
            item["change_percent"] = odds.change_percent
        return data


def canonical_arguments(value: Any) -> str:
    """Arguments as a comparable string: key order and 5 vs 5.0 do not matter.

    >>> canonical_arguments({"b": 5.0, "a": [1]}) == canonical_arguments('{"a": [1], "b": 5}')
    True
    """

    def normalise(item: Any) -> Any:
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, dict):
            return {str(k): normalise(v) for k, v in item.items()}
        if isinstance(item, list):
            return [normalise(v) for v in item]
        return item

    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(normalise(value if value is not None else {}), sort_keys=True)


def _mutating(flag: bool | None, name: str) -> bool:
    if flag is not None:
        return flag
    return bool(is_mutating_tool(name))


def gold_actions(raw: Any) -> list[GoldAction] | None:
    """Gold actions from tau-bench's ``info.task.actions`` list; None when absent.

    >>> [a.name for a in gold_actions([{"name": "cancel_reservation", "kwargs": {}}])]
    ['cancel_reservation']
    """
    if not isinstance(raw, list):
        return None
    actions = []
    for item in raw:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            name = item["name"]
            actions.append(GoldAction(name, item.get("kwargs") or {}, is_mutating_tool(name)))
    return actions


def diff_actions(calls: Sequence[ToolCall], gold: Sequence[GoldAction]) -> ActionDiff:
    """Match calls to gold actions (same name and arguments, in order) and count the rest.

    The earliest decisive deviation is the first mutating call that no gold action
    matches: the first time the agent changed the world in a way the task did not ask for.
    """
    unmatched = [(g.name, canonical_arguments(g.kwargs), g) for g in gold]
    gold_names = {g.name for g in gold}
    diff = ActionDiff()
    for call in sorted(calls, key=lambda c: c.step_index):
        key = (call.name, canonical_arguments(call.args))
        position = next(
            (i for i, (name, args, _) in enumerate(unmatched) if (name, args) == key), None
        )
        if position is not None:
            unmatched.pop(position)
            continue
        mutating = _mutating(call.is_mutating, call.name)
        diff.extra.append({"step": call.step_index, "tool": call.name, "mutating": mutating})
        if mutating:
            diff.mutating += 1
            if diff.decisive_step is None:
                diff.decisive_step = call.step_index
                diff.decisive_reason = (
                    f"{call.name} called with arguments that no gold action has"
                    if call.name in gold_names
                    else f"{call.name} called, which no gold action asks for"
                )
        else:
            diff.read_only += 1
    for name, _, action in unmatched:
        mutating = _mutating(action.is_mutating, name)
        diff.missing.append({"tool": name, "mutating": mutating})
        if mutating:
            diff.mutating += 1
        else:
            diff.read_only += 1
    if diff.decisive_step is None:
        first_missing = next((m for m in diff.missing if m["mutating"]), None)
        if first_missing is not None:
            diff.decisive_reason = f"never called {first_missing['tool']} as the gold actions do"
    return diff


def _fit(features: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients of a logistic regression and their standard errors.

    The standard errors come from the inverse of the penalised Fisher information
    X'WX + I/C at the fit (the Wald approximation), intercept included.
    """
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=REGULARISATION_C, max_iter=1000)
    model.fit(features, outcome)
    design = np.column_stack([np.ones(len(features)), features])
    probability = model.predict_proba(features)[:, 1]
    weights = probability * (1.0 - probability)
    information = design.T @ (design * weights[:, None])
    penalty = np.eye(design.shape[1]) / REGULARISATION_C
    penalty[0, 0] = 0.0  # the intercept is not penalised
    covariance = np.linalg.pinv(information + penalty)
    errors = np.sqrt(np.clip(np.diag(covariance)[1:], 0.0, None))
    return np.asarray(model.coef_[0], dtype=float), errors


def odds_of_success(counts: np.ndarray, success: np.ndarray) -> list[OddsRatio]:
    """Odds ratio of success per extra deviation of each kind, with a 95% Wald interval.

    ``counts`` has one row per rollout and two columns: mutating and read-only deviations.

    >>> counts = np.array([[0, 1], [0, 3], [1, 0], [2, 2], [0, 0], [1, 4]] * 5)
    >>> success = np.array([1, 1, 0, 0, 1, 0] * 5)
    >>> [(o.kind, o.odds_ratio < 1) for o in odds_of_success(counts, success)]
    [('mutating', True), ('read_only', True)]
    """
    counts = np.asarray(counts, dtype=float)
    success = np.asarray(success, dtype=int)
    coefficients, errors = _fit(counts, success)
    result = []
    for column, kind in enumerate(("mutating", "read_only")):
        beta, error = coefficients[column], errors[column]
        result.append(
            OddsRatio(
                kind=kind,
                coefficient=float(beta),
                odds_ratio=math.exp(beta),
                low=math.exp(beta - Z95 * error),
                high=math.exp(beta + Z95 * error),
                mean_deviations=float(counts[:, column].mean()),
            )
        )
    return result


def _success_by_count(diffs: Sequence[ActionDiff], success: Sequence[bool]) -> list[dict[str, Any]]:
    """Success rate of rollouts with 0, 1, 2 and 3+ deviations of each kind."""
    rows = []
    for kind in ("mutating", "read_only"):
        for bucket in range(4):
            picked = [
                ok for diff, ok in zip(diffs, success) if min(getattr(diff, kind), 3) == bucket
            ]
            rows.append(
                {
                    "kind": kind,
                    "deviations": f"{bucket}+" if bucket == 3 else str(bucket),
                    "rollouts": len(picked),
                    "success_rate": (sum(picked) / len(picked)) if picked else None,
                }
            )
    return rows


def analyse(
    rollouts: Sequence[RolloutActions],
) -> tuple[ActionAnalysisResult, dict[int, ActionDiff]]:
    """Diff every rollout and fit the regression when there is enough data for it."""
    diffs = {r.rollout_id: diff_actions(r.calls, r.gold) for r in rollouts}
    success = [r.success for r in rollouts]
    ordered = [diffs[r.rollout_id] for r in rollouts]
    result = ActionAnalysisResult(
        rollouts=len(rollouts),
        with_gold=len(rollouts),
        successes=sum(success),
        odds=[],
        success_by_count=_success_by_count(ordered, success) if rollouts else [],
    )
    if len(rollouts) < MIN_ROLLOUTS or result.successes in (0, len(rollouts)):
        result.message = (
            f"The regression needs at least {MIN_ROLLOUTS} rollouts with gold actions, "
            "some successful and some failed."
        )
        return result, diffs
    counts = np.array([[d.mutating, d.read_only] for d in ordered], dtype=float)
    result.odds = odds_of_success(counts, np.array(success, dtype=int))
    return result, diffs
