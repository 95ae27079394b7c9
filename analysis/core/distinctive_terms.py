"""The words that set each misbehaviour apart from the others, by class-based TF-IDF: the
members' texts are pooled into one document per cluster, and a word scores high when it
is frequent in that cluster and rare across all of them.

Example:
    >>> docs = {0: ["payment gift card balance"] * 3, 1: ["seat flight unavailable"] * 3}
    >>> class_tfidf_terms(docs, top_n=2)[0]
    ['balance', 'card']
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

# Words every step text has (roles, kinds, our own separators): they name nothing.
GENERIC_WORDS = frozenset(
    {
        "assistant",
        "user",
        "tool",
        "system",
        "message",
        "tool_call",
        "tool_result",
        "thought",
        "request",
        "observation",
        "call",
        "calls",
        "result",
        "human",
        "agent",
        "null",
        "none",
        "true",
        "false",
        "https",
        "http",
        "www",
        "com",
        # The framing of every agent transcript and diagnosis ("Step 2", "the task").
        "step",
        "steps",
        "task",
        "tasks",
    }
)


def class_tfidf_terms(
    docs_by_class: Mapping[int, Sequence[str]],
    *,
    top_n: int = 5,
    min_doc_share: float = 0.0,
    exclude: Mapping[int, Collection[str]] | None = None,
) -> dict[int, list[str]]:
    """The ``top_n`` most distinctive words of each class (c-TF-IDF).

    tf is a word's frequency in the class divided by the class's word count; the weight is
    ``log(1 + A / f)`` with ``A`` the mean word count per class and ``f`` the word's
    frequency over all classes. Ties are broken alphabetically so names are stable.
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    classes = list(docs_by_class)
    if not classes:
        return {}
    joined = [" ".join(docs_by_class[label]) for label in classes]
    vectorizer = CountVectorizer(
        token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z_]+\b",
        stop_words=sorted(ENGLISH_STOP_WORDS | GENERIC_WORDS),
        lowercase=True,
    )
    try:
        counts = vectorizer.fit_transform(joined).astype(np.float64).toarray()
    except ValueError:  # every document was empty or stop words only
        return {label: [] for label in classes}
    words = vectorizer.get_feature_names_out()
    per_class = counts.sum(axis=1, keepdims=True)
    per_class[per_class == 0] = 1.0
    tf = counts / per_class
    mean_words = counts.sum() / len(classes)
    frequency = counts.sum(axis=0)
    idf = np.log(1.0 + mean_words / np.maximum(frequency, 1.0))
    scores = tf * idf
    if min_doc_share > 0:
        for row, label in enumerate(classes):
            presence = (vectorizer.transform(docs_by_class[label]) > 0).sum(axis=0).A1
            needed = max(2.0, min_doc_share * len(docs_by_class[label]))
            scores[row, presence < needed] = 0.0
    for row, label in enumerate(classes):
        for word in (exclude or {}).get(label, ()):
            column = vectorizer.vocabulary_.get(word.lower())
            if column is not None:
                scores[row, column] = 0.0
    terms: dict[int, list[str]] = {}
    for row, label in enumerate(classes):
        order = sorted(
            (index for index in np.flatnonzero(scores[row] > 0)),
            key=lambda index: (-round(float(scores[row, index]), 12), words[index]),
        )
        terms[label] = [str(words[index]) for index in order[:top_n]]
    return terms
