from __future__ import annotations

from analysis.core.phrases import NameVocabulary, is_clean, key_phrases, scrub


def test_it_finds_the_phrase_most_members_share_and_others_do_not():
    docs = {
        0: ["Could you provide your reservation id?", "Please provide your reservation id."] * 3,
        1: ["Let me verify the results.", "I will verify the results now."] * 3,
        -1: ["provide the answer"] * 4,
    }
    assert key_phrases(docs) == {0: "provide your reservation id", 1: "verify the results"}


def test_it_never_puts_an_excluded_word_in_a_phrase():
    docs = {0: ["Moving the trip to Lisbon now", "moving the trip to Lisbon today"] * 3}
    assert "lisbon" not in key_phrases(docs, exclude={0: {"lisbon"}})[0]


def test_it_forbids_rare_words_of_the_members_task_texts_stop_words_included():
    others = [f"cancel my reservation{'!' * i}" for i in range(40)]
    vocabulary = NameVocabulary.from_texts(["does the paintball club cancel", *others])
    assert vocabulary.forbidden(["does the paintball club cancel"]) == {
        "does",
        "the",
        "paintball",
        "club",
    }


def test_it_cuts_forbidden_words_out_of_a_phrase():
    assert scrub("gift card balance is not enough", {"gift"}) == "… card balance is not enough"
    assert not is_clean("An agent says “paintball rules”", {"paintball"})


def test_it_weighs_a_sampled_class_by_the_size_it_stands_for():
    docs = {
        0: ["let me verify the totals", "nothing alike here", "other words entirely"],
        1: [
            "let me verify the totals. seat map",
            "let me verify the totals. seat map",
            "let me verify the totals",
            "a different remark",
        ],
    }
    assert key_phrases(docs)[1] == "let me verify the totals"
    # Class 0's three docs stand for 3,000 steps: the phrase is mostly its, not class 1's.
    assert key_phrases(docs, class_sizes={0: 3000, 1: 4})[1] == "seat map"
