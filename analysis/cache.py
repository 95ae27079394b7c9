"""The embedding cache in the database: one row per (model namespace, text sha256)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from analysis.models import CachedEmbedding

# SQLite allows 999 variables per statement in old builds; stay well under it.
CHUNK = 500


class DatabaseEmbeddingCache:
    """``analysis.core.embeddings.EmbeddingCache`` backed by ``CachedEmbedding`` rows."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0

    def get_many(self, namespace: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = sorted(set(hashes))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), CHUNK):
            rows = CachedEmbedding.objects.filter(
                namespace=namespace, content_hash__in=wanted[start : start + CHUNK]
            ).values_list("content_hash", "vector")
            for digest, blob in rows:
                found[digest] = np.frombuffer(bytes(blob), dtype=np.float32)
        self.hits += len(found)
        self.misses += len(wanted) - len(found)
        return found

    def put_many(self, namespace: str, vectors: dict[str, np.ndarray]) -> None:
        rows = [
            CachedEmbedding(
                namespace=namespace,
                content_hash=digest,
                dims=int(vector.shape[0]),
                vector=np.asarray(vector, dtype=np.float32).tobytes(),
            )
            for digest, vector in vectors.items()
        ]
        CachedEmbedding.objects.bulk_create(rows, batch_size=CHUNK, ignore_conflicts=True)


def embedding_cache_prune(*, keep_namespaces: Iterable[str]) -> int:
    """Drop vectors of TF-IDF models no run uses any more (a refit is a new namespace)."""
    keep = set(keep_namespaces)
    stale = CachedEmbedding.objects.filter(namespace__startswith="tfidf").exclude(
        namespace__in=keep
    )
    deleted, _ = stale.delete()
    return deleted
