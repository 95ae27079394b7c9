"""The product's clustering, called the way ``analysis.services`` calls it.

``analysis.services._recluster`` runs ``cluster_wrong_steps(gathered.wrong,
backend=settings.FAULTLINE_EMBEDDINGS, cache=..., seed=0, progress=...)``: the default
parameters, the backend from the setting (``wordllama`` by default, ``tfidf`` as the
fallback). This is the one place the evaluation calls the core pipeline; when the
pipeline's signature changes, this function follows it and nothing else does.

Example:
    >>> from analysis.core.steps import WrongStep
    >>> steps = [WrongStep(key=f"{t}{i}", rollout=f"r{i}", index=0, kind="tool_call",
    ...                    tool_name=t, content=f"{t} {t} {i % 3}")
    ...          for t in ("book", "cancel") for i in range(12)]
    >>> labels = product_labels(steps, backend="tfidf", seed=0)
    >>> len(labels), len(set(labels[:12])), labels[0] != labels[12]
    (24, 1, True)
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.core.embeddings import MemoryCache
from analysis.core.pipeline import cluster_wrong_steps
from analysis.core.steps import WrongStep


def product_labels(steps: Sequence[WrongStep], *, backend: str, seed: int = 0) -> list[int]:
    """One label per step, in the order given (-1: unclustered)."""
    outcome = cluster_wrong_steps(
        steps, backend=backend, cache=MemoryCache(), seed=seed, with_metrics=False
    )
    by_key = {step.key: int(label) for step, label in zip(outcome.steps, outcome.labels)}
    return [by_key[step.key] for step in steps]
