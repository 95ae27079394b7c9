"""Where a merged misbehaviour's steps went: the one home of following merges, light
enough for the pages and exports to import (the clustering module brings numpy, hdbscan
and the embeddings with it)."""

from __future__ import annotations

from analysis.models import Misbehaviour


def resolve_merged(
    misbehaviour: Misbehaviour | None, by_pk: dict[int, Misbehaviour]
) -> Misbehaviour | None:
    """Follow merges to the misbehaviour that now holds the steps (cycles stop)."""
    seen: set[int] = set()
    while misbehaviour is not None and misbehaviour.merged_into_id and misbehaviour.pk not in seen:
        seen.add(misbehaviour.pk)
        target = by_pk.get(misbehaviour.merged_into_id)
        if target is None:
            break
        misbehaviour = target
    return misbehaviour
