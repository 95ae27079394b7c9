from __future__ import annotations

from analysis.core.distinctive_terms import class_tfidf_terms


def test_it_ignores_words_of_a_single_rollout_when_asked():
    docs = {0: ["refund denied cologne", "refund denied", "refund denied"], 1: ["seat taken"] * 3}
    assert "cologne" not in class_tfidf_terms(docs, min_doc_share=0.1)[0]
