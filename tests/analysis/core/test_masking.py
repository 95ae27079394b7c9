from __future__ import annotations

from analysis.core.masking import (
    TaskVocabulary,
    mask_text,
    strip_placeholders,
    task_words,
)


def test_it_masks_numbers_and_amounts():
    assert mask_text("3 bags cost $150.00, or 200 USD") == "<num> bags cost <amount>, or <amount>"


def test_it_masks_reservation_codes_and_mixed_ids():
    assert mask_text("Reservation HXDUBJ on flight HAT030") == "Reservation <id> on flight <id>"


def test_it_keeps_the_descriptive_part_of_an_id():
    assert mask_text("payment_id=gift_card_8190876") == "payment_id=gift_card_<id>"


def test_it_keeps_shouted_words_that_are_not_codes():
    assert mask_text("TERMINATE now, CANCEL it") == "TERMINATE now, CANCEL it"


def test_it_masks_short_codes_in_prose():
    text = "Flights from IAH to SFO and the AAPL price, says NASA"
    assert mask_text(text) == "Flights from <id> to <id> and the <id> price, says <id>"


def test_it_keeps_generic_acronyms_and_shouted_headings():
    text = "Send the user ID as JSON to the API. PLAN FOR SOLVING THE TASK: NOT YET"
    assert mask_text(text) == text


def test_it_masks_uuids_and_hex():
    text = "run 123e4567-e89b-12d3-a456-426614174000 at 0xDEADBEEF"
    assert mask_text(text) == "run <id> at <id>"


def test_it_masks_dates_and_times():
    text = "leave 2024-05-15T10:00:00, back May 20, 2024 or 05/21/2024 at 3pm"
    assert mask_text(text) == "leave <date>, back <date> or <date> at <date>"


def test_it_masks_urls_and_emails():
    text = "see https://example.org/page?id=3 or mail ann.lee@example.com"
    assert mask_text(text) == "see <url> or mail <email>"


def test_it_masks_quoted_values_but_not_json_keys():
    assert mask_text('{"city": "Lisbon"} and \'Porto\'') == '{"city": <quoted>} and <quoted>'


def test_it_leaves_apostrophes_alone():
    assert mask_text("the user's card isn't valid") == "the user's card isn't valid"


def test_it_masks_proper_nouns_inside_a_sentence_only():
    text = "Booked. Flights from Boston to New York, says Orchestrator to WebSurfer"
    assert mask_text(text) == "Booked. Flights from <name> to <name>, says <name> to WebSurfer"


def test_it_keeps_capitalised_sentence_starts():
    assert mask_text("Error: Payment declined. Please retry.") == (
        "Error: Payment declined. Please retry."
    )


def test_it_masks_words_of_the_task_text_even_inside_identifiers():
    words = task_words("My name is Mia Li and I want to fly to Cologne")
    assert mask_text("user mia_li_3668 flies to cologne", task_words=words) == (
        "user <task-word>_<task-word>_<id> flies to <task-word>"
    )


def test_it_never_masks_action_verbs_from_the_task_text():
    assert "cancel" not in task_words("Please cancel and book again")


def test_it_keeps_domain_words_that_many_tasks_share():
    texts = [f"change the flight reservation of user {name}" for name in "abcdefghijklmnopqrst"]
    vocabulary = TaskVocabulary.from_texts(texts + ["change the flight reservation of zed"])
    assert vocabulary.entities("change the flight reservation of zed") == {"zed"}


def test_it_does_not_mask_inside_placeholders():
    assert mask_text("id 42", task_words={"num", "id"}) == "<task-word> <num>"


def test_it_strips_placeholders_for_names():
    assert strip_placeholders("balance of <amount> is not enough (<id>)") == (
        "balance of … is not enough (…)"
    )
