from __future__ import annotations

from analysis.core.behaviour import (
    CLAIMED_SUCCESS,
    CLUSTERED_SIGNALS,
    DREW_ERROR,
    EDITED_FAILING_TEST,
    GAVE_UP_AFTER_FAILURE,
    IGNORED_ERROR,
    INVENTED_ARGUMENT,
    MADE_UP_DATA,
    MISSED_GOLD_ACTION,
    OFF_GOLD_ARGUMENTS,
    REPEATED_ACTION,
    REPORTED_UNMADE_CHANGE,
    SIGNALS,
    UNCHECKED_APPROVAL,
    UNCONFIRMED_MUTATION,
    UNREAD_EDIT,
    UNSUPPORTED_CLAIM,
    VECTOR_SIZE,
    rollout_signals,
    signal_vector,
    step_vector,
    with_signals,
)
from analysis.core.selection import RolloutFacts, wrong_steps
from attribution.core.gold_actions import gold_actions
from attribution.core.provenance import FROM_OBSERVATION, FROM_USER, INVENTED
from ingest.core.records import StepRecord


def user(index, text):
    return StepRecord(index=index, role="user", content=text)


def say(index, text, agent=""):
    return StepRecord(index=index, role="assistant", agent=agent, content=text)


def call(index, tool, args, call_id):
    return StepRecord(
        index=index, role="assistant", kind="tool_call", tool_name=tool, tool_args=args,
        tool_call_id=call_id,
    )  # fmt: skip


def result(index, text, call_id, error=False):
    return StepRecord(
        index=index, role="tool", kind="tool_result", content=text, tool_call_id=call_id,
        is_error=error,
    )  # fmt: skip


def names(steps, index, **options):
    return rollout_signals(steps, **options)[index].names


def test_it_flags_an_argument_value_nobody_gave():
    steps = [user(0, "I am mia_li_3668"), call(1, "get_user_details", {"user_id": "ava_9"}, "a")]
    assert INVENTED_ARGUMENT in names(steps, 1)


def test_it_traces_arguments_to_the_user_and_observations():
    steps = [
        user(0, "I am mia_li_3668"),
        call(1, "get_user_details", {"user_id": "mia_li_3668"}, "a"),
        result(2, '{"payment_methods": ["gift_card_7"]}', "a"),
        call(3, "get_balance", {"payment_id": "gift_card_7", "user_id": "mia_li_3668"}, "b"),
    ]
    found = rollout_signals(steps)
    assert INVENTED_ARGUMENT not in found[3].names
    assert dict(found[3].arg_sources) == {"payment_id": FROM_OBSERVATION, "user_id": FROM_USER}


def test_it_counts_a_sum_of_seen_numbers_as_derived_not_invented():
    steps = [
        user(0, "pay 100 from one card and 50 from the other"),
        call(1, "get_total", {"amount": 150}, "a"),
    ]
    assert INVENTED_ARGUMENT not in names(steps, 1)


def test_a_date_written_in_iso_form_of_one_told_in_words_is_the_users():
    # A travel agent's correct conversion was "a value nobody provided" on every booking.
    steps = [
        user(0, "2 nights from Friday 4 April, please, under $150 a night."),
        call(1, "search_hotels", {"check_in": "2025-04-04", "nights": 2}, "a"),
        call(2, "search_hotels", {"check_in": "2025-04-14", "nights": 2}, "b"),
        call(3, "book_hotel", {"check_in": "next Friday"}, "c"),
    ]
    found = rollout_signals(steps)
    assert dict(found[1].arg_sources)["check_in"] == FROM_USER
    assert INVENTED_ARGUMENT not in found[1].names
    # Another day, or a date in no tool's form, is still nobody's.
    assert INVENTED_ARGUMENT in found[2].names and INVENTED_ARGUMENT in found[3].names


def _crew(review_calls):
    """A writer drafts a figure; the reviewer approves it, after ``review_calls``."""
    steps = [
        user(0, "What was the median growth?"),
        say(1, "Draft: the median growth was 4.2%.", agent="writer"),
    ]
    for tool in review_calls:
        steps.append(call(len(steps), tool, {"code": "median(x)"}, f"c{len(steps)}"))
        steps[-1].agent = "reviewer"
        steps.append(result(len(steps), "4.2", steps[-1].tool_call_id))
    steps.append(say(len(steps), "The draft matches the figure. Approved.", agent="reviewer"))
    return steps


def test_it_flags_a_review_that_approves_without_a_single_check():
    steps = _crew([])
    steps.insert(1, call(1, "web_search", {"query": "growth"}, "s"))
    for position, step in enumerate(steps):
        step.index = position
    assert UNCHECKED_APPROVAL in names(steps, len(steps) - 1)
    # The reviewer ran the numbers first: a check, not a rubber stamp.
    checked = _crew(["run_python"])
    assert UNCHECKED_APPROVAL not in names(checked, len(checked) - 1)


def test_an_approval_is_a_verdict_not_the_word_and_never_alone_or_without_tools():
    steps = _crew([])
    steps.insert(1, call(1, "web_search", {"query": "growth"}, "s"))
    for position, step in enumerate(steps):
        step.index = position
    for text in ("Saving the approved report.", "Not approved: 4.2% is wrong."):
        steps[-1].content = text
        assert UNCHECKED_APPROVAL not in names(steps, len(steps) - 1)
    # No agent of the rollout uses a tool: a conversation, where approving is just talk.
    talk = _crew([])
    assert UNCHECKED_APPROVAL not in names(talk, len(talk) - 1)
    # A single agent approving its own words approves nobody's work.
    alone = [user(0, "Check it"), call(1, "run", {}, "a"), result(2, "ok", "a"),
             say(3, "Looks good, approved.")]  # fmt: skip
    assert UNCHECKED_APPROVAL not in names(alone, 3)


def _page(ids):
    """An accessibility tree of 36 kB: a link per id, the given ids last."""
    filler = "".join(f"[{n}] link 'Item {n}'\n" for n in range(1000, 2500))
    return filler + "".join(f"[{n}] button 'Go'\n" for n in ids)


def test_an_identifier_deep_in_a_long_page_is_read_and_one_not_on_it_is_invented():
    steps = [user(0, "Open the orders"), result(1, _page([7777]), "p")]
    assert len(steps[1].content) > 30_000
    clicked = [*steps, call(2, "click", {"element_id": 7777}, "a")]
    assert INVENTED_ARGUMENT not in names(clicked, 2)
    # 9105 is no element of the page, though it is a sum of two numbers on it: an id is
    # copied, never computed.
    made_up = [*steps, call(2, "click", {"element_id": 9105}, "a")]
    assert INVENTED_ARGUMENT in names(made_up, 2)


def test_a_word_naming_one_of_the_tool_s_options_has_no_source_to_find():
    steps = [user(0, "Find the price"), call(1, "scroll", {"direction": "down"}, "a")]
    assert INVENTED_ARGUMENT not in names(steps, 1)
    # A value the user must give is still looked up.
    steps = [user(0, "Book it"), call(1, "book", {"cabin": "business"}, "a")]
    assert INVENTED_ARGUMENT in names(steps, 1)


def test_it_does_not_count_the_agents_own_words_as_a_source():
    steps = [say(0, "I will use flight HAT999"), call(1, "get_flight", {"flight": "HAT999"}, "a")]
    assert dict(rollout_signals(steps)[1].arg_sources) == {"flight": INVENTED}


def test_it_flags_the_same_call_made_again():
    steps = [
        call(0, "search_flights", {"origin": "JFK"}, "a"),
        result(1, "[]", "a"),
        call(2, "search_flights", {"origin": "JFK"}, "b"),
    ]
    assert REPEATED_ACTION in names(steps, 2)
    assert REPEATED_ACTION not in names(steps, 0)


def test_routing_said_again_is_no_repeated_action_but_a_report_said_again_is():
    report = "I opened the archive page and the listing shows no 2015 entries."
    steps = [
        user(0, "Find the 2015 archive entry."),
        say(1, "Next speaker WebSurfer", agent="Orchestrator"),
        say(2, report, agent="WebSurfer"),
        say(3, "Next speaker WebSurfer", agent="Orchestrator"),
        say(4, report, agent="WebSurfer"),
    ]
    assert REPEATED_ACTION not in names(steps, 3)
    assert REPEATED_ACTION in names(steps, 4)


def test_it_does_not_flag_a_call_with_other_arguments_as_repeated():
    steps = [
        call(0, "search_flights", {"origin": "JFK"}, "a"),
        result(1, "[]", "a"),
        call(2, "search_flights", {"origin": "EWR"}, "b"),
    ]
    assert REPEATED_ACTION not in names(steps, 2)


def test_it_flags_a_retry_unchanged_after_an_error():
    steps = [
        call(0, "book", {"flight": "HAT1"}, "a"),
        result(1, "Error: not enough seats", "a", error=True),
        call(2, "book", {"flight": "HAT1"}, "b"),
    ]
    assert IGNORED_ERROR in names(steps, 2)
    assert DREW_ERROR in names(steps, 0)


def test_it_flags_an_answer_that_ignores_an_error():
    steps = [
        call(0, "book", {"flight": "HAT1"}, "a"),
        result(1, "Error: gift card balance is not enough", "a", error=True),
        say(2, "Your flight is booked, enjoy the trip!"),
    ]
    assert IGNORED_ERROR in names(steps, 2)


def test_it_does_not_flag_a_changed_call_or_an_acknowledged_error():
    steps = [
        call(0, "book", {"flight": "HAT1"}, "a"),
        result(1, "Error: not enough seats", "a", error=True),
        call(2, "book", {"flight": "HAT2"}, "b"),
        result(3, "Error: not enough seats", "b", error=True),
        say(4, "Sorry, there are not enough seats on either flight."),
    ]
    assert IGNORED_ERROR not in names(steps, 2)
    assert IGNORED_ERROR not in names(steps, 4)


def test_it_flags_a_mutation_the_user_did_not_confirm():
    steps = [
        user(0, "I want to cancel my trip"),
        say(1, "Which reservation?"),
        user(2, "The one to Boston"),
        call(3, "cancel_reservation", {"reservation_id": "ABCDEF"}, "a"),
    ]
    assert UNCONFIRMED_MUTATION in names(steps, 3)


def test_it_does_not_flag_a_confirmed_mutation():
    steps = [
        user(0, "I want to cancel my trip"),
        say(1, "Cancel reservation ABCDEF, shall I proceed?"),
        user(2, "Yes, go ahead"),
        call(3, "cancel_reservation", {"reservation_id": "ABCDEF"}, "a"),
    ]
    assert UNCONFIRMED_MUTATION not in names(steps, 3)


def system(index, text):
    return StepRecord(index=index, role="system", kind="system", content=text)


def test_it_flags_a_mutation_on_the_first_request_when_the_rules_ask_for_confirmation():
    steps = [
        system(0, "You are a support agent. Obtain explicit user confirmation before refunds."),
        user(1, "Refund my order #W123"),
        call(2, "refund_order", {"order_id": "#W123"}, "a"),
    ]
    assert UNCONFIRMED_MUTATION in names(steps, 2)


def test_it_does_not_read_confirming_a_fix_as_a_rule_to_ask_the_user():
    steps = [
        system(0, "You are a coding agent. Run the tests to confirm the fix works."),
        user(1, "Fix the failing test"),
        call(2, "edit_file", {"path": "a.py"}, "a"),
    ]
    assert UNCONFIRMED_MUTATION not in names(steps, 2)


def test_it_does_not_ask_an_autonomous_agent_for_confirmation():
    steps = [user(0, "Fix the failing test"), call(1, "edit_file", {"path": "a.py"}, "a")]
    assert UNCONFIRMED_MUTATION not in names(steps, 1)


def test_a_mutation_the_user_just_asked_for_needs_no_confirmation():
    """Without a rule demanding one, "write the totals to out.parquet" is the consent."""
    steps = [
        user(0, "Load orders.csv and total it by day."),
        say(1, "Loaded. Where should the totals go?"),
        user(2, "Write them to s3://lake/out/daily.parquet please"),
        call(3, "write_parquet", {"path": "s3://lake/out/daily.parquet"}, "a"),
    ]
    assert UNCONFIRMED_MUTATION not in names(steps, 3)
    # A value said in an earlier turn, not in the latest request, is no consent to this act.
    steps[2] = user(2, "Actually, wait: first show me the totals.")
    assert UNCONFIRMED_MUTATION in names(steps, 3)
    # Where the rules demand a confirmation, the request alone is not one.
    ruled = [system(0, "Always ask the user for confirmation before writing data.")] + [
        user(1, "Write them to s3://lake/out/daily.parquet please"),
        call(2, "write_parquet", {"path": "s3://lake/out/daily.parquet"}, "a"),
    ]
    assert UNCONFIRMED_MUTATION in names(ruled, 2)


def test_a_crew_given_the_same_task_twice_is_not_a_conversation():
    task = "Convert the amounts to dollars and write daily.parquet."
    steps = [
        user(0, task),
        say(1, "Plan: convert, then write.", agent="planner"),
        user(2, task),
        call(3, "write_parquet", {"path": "out/totals.parquet"}, "a"),
    ]
    assert UNCONFIRMED_MUTATION not in names(steps, 3)


def test_it_flags_a_final_answer_no_observation_supports():
    steps = [
        user(0, "How many moons does the planet have?"),
        call(1, "search", {"query": "planet moons"}, "a"),
        result(2, "The planet has 14 known moons.", "a"),
        say(3, "The final answer is 27."),
    ]
    assert UNSUPPORTED_CLAIM in names(steps, 3)


def test_a_conclusion_citing_a_page_nothing_fetched_is_unsupported():
    # A research crew's writer: the numbers hold, the source cited was never fetched.
    def crew(cited):
        return [
            user(0, "What did Mariana Costa publish on reading apps?"),
            call(1, "fetch_page", {"url": "https://journals.example.org/costa-2022"}, "a"),
            result(2, "Costa (2022): reading scores rose by 12% with the apps.", "a"),
            say(3, f"Costa found a 12% rise in 2022 ({cited}).", agent="writer"),
        ]

    assert UNSUPPORTED_CLAIM in names(crew("https://www.reviewhub.net/costa/long-term"), 3)
    assert UNSUPPORTED_CLAIM not in names(crew("https://journals.example.org/costa-2022"), 3)


def test_it_does_not_flag_a_final_answer_an_observation_supports():
    steps = [
        user(0, "How many moons does the planet have?"),
        call(1, "search", {"query": "planet moons"}, "a"),
        result(2, "The planet has 14 known moons.", "a"),
        say(3, "The final answer is 14."),
    ]
    assert UNSUPPORTED_CLAIM not in names(steps, 3)


def test_it_flags_giving_up_right_after_a_failure():
    steps = [
        user(0, "Find the report"),
        call(1, "search", {"query": "report"}, "a"),
        result(2, "Error: search service timed out", "a", error=True),
        say(3, "I am unable to find it. TERMINATE"),
    ]
    assert GAVE_UP_AFTER_FAILURE in names(steps, 3)


FAILED_RUN = "===== 3 passed, 2 failed in 0.41s ====="
CLAIM = "Fixed the parser. All tests in test_dates.py pass."


def reply_after_tests(output, failed, reply):
    """The signals of the agent's closing reply to a test run's output."""
    steps = [
        user(0, "Fix the date parser and make test_dates.py pass."),
        call(1, "bash", {"command": "pytest test_dates.py"}, "a"),
        result(2, output, "a", error=failed),
        say(3, reply),
    ]
    return names(steps, 3)


def test_it_flags_a_report_of_success_right_after_a_failure():
    found = reply_after_tests(FAILED_RUN, True, CLAIM)
    assert CLAIMED_SUCCESS in found and GAVE_UP_AFTER_FAILURE not in found
    assert CLAIMED_SUCCESS in CLUSTERED_SIGNALS


def test_it_does_not_read_admitting_the_failure_as_a_report_of_success():
    admits = "The fix is done, but two tests still fail; I am stopping here."
    found = reply_after_tests(FAILED_RUN, True, admits)
    assert CLAIMED_SUCCESS not in found and GAVE_UP_AFTER_FAILURE in found


def test_it_does_not_flag_a_report_of_success_after_a_passing_check():
    found = reply_after_tests("===== 5 passed in 0.38s =====", False, CLAIM)
    assert not found & {CLAIMED_SUCCESS, GAVE_UP_AFTER_FAILURE, IGNORED_ERROR}


def test_it_does_not_ask_where_written_arguments_came_from():
    """A command, code or a query is composed from what the agent saw, not copied."""
    steps = [
        user(0, "Fix the date parser in utils/dates.py."),
        call(1, "bash", {"command": "pytest tests/test_dates.py -x"}, "a"),
        result(2, "1 passed", "a"),
        call(3, "edit_file", {"path": "utils/dates.py", "new_str": "return parse(x)"}, "b"),
        call(4, "calculate", {"expression": "1200 - 300"}, "c"),
        call(5, "edit_file", {"path": "utils/times.py", "new_str": "return parse(x)"}, "d"),
    ]
    found = rollout_signals(steps)
    assert all(INVENTED_ARGUMENT not in found[i].names for i in (1, 3, 4))
    assert dict(found[3].arg_sources) == {"path": FROM_USER}
    # A short value in a field of another name is still traced: this path nobody gave.
    assert INVENTED_ARGUMENT in found[5].names


def test_it_knows_code_by_its_syntax_whatever_the_argument_is_called():
    """An edit tool whose code argument is called ``new`` writes code, it does not copy it;
    a value of the same field without code syntax is still traced."""
    steps = [
        user(0, "Fix normalise in utils/text.py; the hotel is Hilton (Downtown)."),
        call(1, "edit", {"path": "utils/text.py", "new": "return normalise(x)"}, "a"),
        call(2, "edit", {"path": "utils/text.py", "new": "x = y && z"}, "b"),
        call(3, "book", {"hotel": "Hilton (Downtown)"}, "c"),
        call(4, "book", {"hotel": "Ritz (Uptown)"}, "d"),
    ]
    found = rollout_signals(steps)
    assert all(INVENTED_ARGUMENT not in found[i].names for i in (1, 2, 3))
    assert dict(found[1].arg_sources) == {"path": FROM_USER}
    assert INVENTED_ARGUMENT in found[4].names


def test_it_does_not_flag_terminating_after_a_success():
    steps = [
        user(0, "Find the report"),
        call(1, "search", {"query": "report"}, "a"),
        result(2, "report.pdf found", "a"),
        say(3, "Here it is: report.pdf. TERMINATE"),
    ]
    assert GAVE_UP_AFTER_FAILURE not in names(steps, 3)


def test_it_flags_work_on_made_up_stand_in_values():
    steps = [
        user(0, "What was the mean rainfall in June?"),
        say(1, "The file is missing, so I will simulate the rainfall data and compute it."),
        call(2, "python", {"code": "rain = [1.2, 3.4]  # placeholder values"}, "a"),
        say(3, "Let's assume the average is 2.3 mm. TERMINATE"),
    ]
    assert all(MADE_UP_DATA in names(steps, i) for i in (1, 2, 3))


def test_it_does_not_flag_work_on_real_values():
    steps = [
        user(0, "What was the mean rainfall in June?"),
        call(1, "read_csv", {"path": "rain.csv"}, "a"),
        result(2, "1.2, 3.4", "a"),
        say(3, "For example, the sample mean of the two readings is 2.3 mm. Assumptions: none."),
    ]
    assert not any(MADE_UP_DATA in found.names for found in rollout_signals(steps).values())


def test_it_reads_error_observations_from_other_agents():
    steps = [
        user(0, "Count the rows"),
        say(1, "```python\nprint(len(rows))\n```", agent="Coder"),
        say(2, "exitcode: 1 (execution failed)\nNameError: rows", agent="Computer_terminal"),
        say(3, "```python\nprint(len(rows))\n```", agent="Coder"),
    ]
    found = rollout_signals(steps)
    assert DREW_ERROR in found[1].names
    assert {IGNORED_ERROR, REPEATED_ACTION} <= found[3].names
    assert found[3].role == "Coder"


def test_it_flags_deviations_from_the_gold_actions():
    gold = gold_actions([{"name": "cancel_reservation", "kwargs": {"reservation_id": "AAAAAA"}}])
    steps = [
        user(0, "cancel AAAAAA"),
        call(1, "cancel_reservation", {"reservation_id": "BBBBBB"}, "a"),
        result(2, "ok", "a"),
        say(3, "Done."),
    ]
    found = rollout_signals(steps, gold=gold)
    assert OFF_GOLD_ARGUMENTS in found[1].names
    assert MISSED_GOLD_ACTION in found[3].names


def test_it_does_not_flag_calls_that_match_the_gold_actions():
    gold = gold_actions([{"name": "cancel_reservation", "kwargs": {"reservation_id": "AAAAAA"}}])
    steps = [
        user(0, "cancel AAAAAA"),
        call(1, "cancel_reservation", {"reservation_id": "AAAAAA"}, "a"),
    ]
    found = rollout_signals(steps, gold=gold)
    assert not {OFF_GOLD_ARGUMENTS, MISSED_GOLD_ACTION} & found[1].names


def test_it_encodes_signals_sources_and_role_as_a_fixed_size_vector():
    vector = signal_vector([IGNORED_ERROR], [("a", INVENTED)], role="Coder")
    assert vector.shape == (VECTOR_SIZE,)
    assert vector[CLUSTERED_SIGNALS.index(IGNORED_ERROR)] == 1.0
    assert vector[len(CLUSTERED_SIGNALS) :].sum() == 2.0  # one source share, one role bucket


def test_the_made_up_data_signal_describes_but_does_not_cluster():
    # Measured as a vector entry it lowered the combined development set's figures.
    assert MADE_UP_DATA in SIGNALS and MADE_UP_DATA not in CLUSTERED_SIGNALS
    assert signal_vector([MADE_UP_DATA]).sum() == 0.0


def test_it_fills_the_wrong_steps_of_a_rollout():
    steps = [
        user(0, "Book HAT1 please"),
        user(1, "for tomorrow"),
        call(2, "book_reservation", {"flight": "HAT1"}, "a"),
        result(3, "Error: not enough seats", "a", error=True),
    ]
    wrong = wrong_steps(RolloutFacts(key="r", failed=True), steps, labelled=[2])
    enriched = with_signals(wrong, steps, task_text="Book HAT1", reasons={2: "booked blindly"})
    step = enriched[0]
    assert UNCONFIRMED_MUTATION in step.signals and DREW_ERROR in step.signals
    assert step.error == "Error: not enough seats"
    assert (step.reason, step.task_text) == ("booked blindly", "Book HAT1")
    assert step_vector(step)[CLUSTERED_SIGNALS.index(DREW_ERROR)] == 1.0


def _refund_chat(reply_to_offer, *, error=False, closing="", tool="issue_refund"):
    """A support chat: the agent offers a refund, the user answers, the agent calls
    ``tool``; with ``error`` the call fails and the agent closes with ``closing``."""
    steps = [
        StepRecord(index=0, role="system", kind="system", content="You are a support agent."),
        user(1, "My sleeping bag arrived torn; my email is yuki@example.com."),
        say(2, "You can have $219.00 back or a replacement. Shall I refund it?"),
        user(3, reply_to_offer),
        call(4, tool, {"order_id": "ORD-1", "amount": 219.0}, "r"),
        result(5, "PaymentProviderError: card expired" if error else '{"ok": true}', "r", error),
    ]
    if closing:
        steps.append(say(6, closing))
    return steps


def test_a_reply_naming_the_action_to_the_agents_offer_confirms_it():
    # "Refund please." answered "Shall I refund it?": that is the user's consent.
    for reply in ("Refund please.", "Let's do the refund.", "Yes please"):
        assert UNCONFIRMED_MUTATION not in names(_refund_chat(reply), 4), reply
    assert UNCONFIRMED_MUTATION in names(_refund_chat("Hmm, what are the options again?"), 4)


def test_naming_the_action_before_anything_was_offered_is_no_confirmation():
    rule = "Always obtain explicit user confirmation before issuing a refund."
    steps = [
        StepRecord(index=0, role="system", kind="system", content=rule),
        user(1, "Refund order ORD-1 please."),
        call(2, "issue_refund", {"order_id": "ORD-1"}, "r"),
    ]
    assert UNCONFIRMED_MUTATION in names(steps, 2)


def test_a_handoff_needs_no_confirmation():
    steps = _refund_chat("What else can you do?", tool="transfer_to_agent")
    assert UNCONFIRMED_MUTATION not in names(steps, 4)
    assert UNCONFIRMED_MUTATION in names(_refund_chat("What else can you do?"), 4)


def test_a_support_agents_report_of_success_after_a_failed_call_is_claimed_success():
    # An unseen support agent's closings: none of them was read as a report of success,
    # so the rollouts fell under "gives up right after a failure", the opposite.
    for closing in (
        "The refund went through! $219.00 is on its way back to your card.",
        "All done, your refund of $89.00 has been processed and will appear in 3-5 days.",
        "You're all set: the refund was issued successfully.",
    ):
        found = names(_refund_chat("Refund please.", error=True, closing=closing), 6)
        assert CLAIMED_SUCCESS in found and GAVE_UP_AFTER_FAILURE not in found, closing
    admits = "Sorry, the refund could not be processed: your card has expired."
    found = names(_refund_chat("Refund please.", error=True, closing=admits), 6)
    assert CLAIMED_SUCCESS not in found and GAVE_UP_AFTER_FAILURE in found


def _lookup_then(closing, *, tool="get_order", output='{"order_id": "ORD-1", "status": "delivered"}',
                 error=False):  # fmt: skip
    """A support chat where the agent calls ``tool`` once and then closes with ``closing``."""
    return [
        user(0, "My order ORD-1 arrived broken, I want my money back."),
        call(1, tool, {"order_id": "ORD-1"}, "c"),
        result(2, output, "c", error),
        say(3, closing),
    ]


def test_it_flags_a_change_reported_after_only_reading():
    # The agent looked the order up, never called anything that refunds, and says it did.
    for closing in (
        "I've issued a refund of $40.00 to your card.",
        "Good news: your refund has been processed and will appear in 3-5 days.",
        "Your order is now cancelled and the money is on its way back.",
        "I have gone ahead and refunded the full amount.",
    ):
        found = names(_lookup_then(closing), 3)
        assert REPORTED_UNMADE_CHANGE in found, closing
    assert REPORTED_UNMADE_CHANGE in CLUSTERED_SIGNALS


def test_a_change_a_successful_call_could_have_made_is_no_such_report():
    done = _lookup_then("I've issued a refund of $40.00 to your card.", tool="issue_refund",
                        output='{"ok": true}')  # fmt: skip
    assert REPORTED_UNMADE_CHANGE not in names(done, 3)
    # A tool of unknown kind may write: "I have updated the file" after running a command.
    ran = _lookup_then("I have updated the config file.", tool="execute_bash", output="ok")
    assert REPORTED_UNMADE_CHANGE not in names(ran, 3)


def test_a_change_reported_after_its_call_failed_or_handed_over_is_flagged():
    failed = _lookup_then("Your refund has been processed.", tool="issue_refund",
                          output="PaymentProviderError: card expired", error=True)  # fmt: skip
    assert {REPORTED_UNMADE_CHANGE, CLAIMED_SUCCESS} <= names(failed, 3)
    handed = _lookup_then("I've refunded you in full.", tool="transfer_to_agent",
                          output="Transferred to billing.")  # fmt: skip
    assert REPORTED_UNMADE_CHANGE in names(handed, 3)


def test_it_reads_no_report_in_a_question_a_negation_a_condition_or_an_observed_state():
    for closing in (
        "Shall I cancel it and refund the $40?",
        "I have not refunded anything yet; which card should it go to?",
        "Once I have issued the refund you will get an email.",
        "Would you like it to be refunded or replaced?",
    ):
        assert REPORTED_UNMADE_CHANGE not in names(_lookup_then(closing), 3), closing
    # The lookup itself says the order was cancelled: repeating it claims nothing new.
    observed = _lookup_then("Your order has been cancelled already, on May 3.",
                            output='{"status": "cancelled"}')  # fmt: skip
    assert REPORTED_UNMADE_CHANGE not in names(observed, 3)


def test_it_reads_no_unmade_change_where_the_agents_use_no_tools():
    # A group chat without tool calls: what its agents did is not in the trace to check.
    chat = [user(0, "Fix the script."), say(1, "I have updated the script.", agent="Coder")]
    assert REPORTED_UNMADE_CHANGE not in names(chat, 1)


# A coding agent (a trial of an unseen kind of system: bash, open_file, edit_file,
# run_tests, submit), whose harness flags no failing test run as an error.
PYTEST_RED = (
    "collected 48 items\n"
    + "tests/test_dates.py ....F...\n" * 20
    + "== 1 failed, 47 passed in 0.52s =="
)
PYTEST_GREEN = (
    "collected 48 items\n" + "tests/test_dates.py ........\n" * 20 + "== 48 passed in 0.50s =="
)


def test_a_failing_test_run_reported_at_the_end_is_an_error():
    steps = [user(0, "Fix the date parser."), call(1, "run_tests", {}, "a"),
             result(2, PYTEST_RED, "a")]  # fmt: skip
    signals = rollout_signals(steps)[1]
    assert DREW_ERROR in signals.names and "1 failed, 47 passed" in signals.error


def test_a_test_run_again_after_an_edit_is_verification_not_repetition():
    steps = [
        user(0, "Fix the date parser."),
        call(1, "run_tests", {"path": "tests/test_dates.py"}, "a"), result(2, PYTEST_RED, "a"),
        call(3, "edit_file", {"path": "src/dates.py", "new_str": "return d"}, "b"),
        result(4, "File edited.", "b"),
        call(5, "run_tests", {"path": "tests/test_dates.py"}, "c"), result(6, PYTEST_GREEN, "c"),
    ]  # fmt: skip
    assert REPEATED_ACTION not in names(steps, 5)


def test_the_same_failing_command_run_again_unchanged_is_repetition():
    steps = [
        user(0, "Fix the date parser."),
        call(1, "bash", {"command": "pytest -x"}, "a"), result(2, PYTEST_RED, "a"),
        call(3, "open_file", {"path": "src/dates.py"}, "b"), result(4, "def parse(d): ...", "b"),
        call(5, "bash", {"command": "pytest -x"}, "c"), result(6, PYTEST_RED, "c"),
    ]  # fmt: skip
    assert REPEATED_ACTION in names(steps, 5)


def test_submitting_with_a_claim_that_tests_pass_after_a_red_run_is_claimed_success():
    steps = [
        user(0, "Fix the date parser."),
        call(1, "run_tests", {}, "a"), result(2, PYTEST_RED, "a"),
        call(3, "submit", {"summary": "Fixed the parser; all tests pass."}, "b"),
        result(4, "Submitted.", "b"),
    ]  # fmt: skip
    assert CLAIMED_SUCCESS in names(steps, 3)
    # Handing in while admitting the failure is giving up, not a false claim.
    steps[3] = call(3, "submit", {"summary": "Could not fix it; 1 test still fails."}, "b")
    assert CLAIMED_SUCCESS not in names(steps, 3)


def test_a_line_to_open_is_the_agent_s_choice_not_a_value_nobody_gave():
    steps = [user(0, "Fix the date parser in src/dates.py."),
             call(1, "open_file", {"path": "src/dates.py", "line": 240}, "a")]  # fmt: skip
    assert INVENTED_ARGUMENT not in names(steps, 1)


def test_changing_a_file_it_never_read_is_an_unread_edit():
    listing = "src/dates.py\nsrc/legacy/dates.py\ntests/test_dates.py"
    head = [user(0, "Fix the date parser."), call(1, "bash", {"command": "ls -R"}, "a"),
            result(2, listing, "a")]  # fmt: skip
    edit = call(3, "edit_file", {"path": "src/dates.py", "new_str": "return d"}, "b")
    assert UNREAD_EDIT in names([*head, edit], 3)
    # Read first (opened, or cat in a shell): no signal.
    opened = call(3, "open_file", {"path": "src/dates.py"}, "c")
    shown = call(3, "bash", {"command": "cat src/dates.py"}, "c")
    for read in (opened, shown):
        steps = [*head, read, result(4, "def parse(d): ...", "c"),
                 call(5, "edit_file", {"path": "src/dates.py", "new_str": "return d"}, "b")]  # fmt: skip
        assert UNREAD_EDIT not in names(steps, 5)
    # Creating a new file has nothing to read; creating over a listed one overwrites it.
    new = call(3, "create_file", {"path": "tests/test_iso_z.py", "content": "def test(): ..."}, "d")
    assert UNREAD_EDIT not in names([*head, new], 3)
    over = call(3, "create_file", {"path": "src/dates.py", "content": "def parse(d): ..."}, "d")
    assert UNREAD_EDIT in names([*head, over], 3)


def test_changing_a_test_after_the_tests_failed_is_flagged():
    listing = "src/dates.py\ntests/test_dates.py"
    head = [user(0, "Fix the date parser."), call(1, "bash", {"command": "ls -R"}, "a"),
            result(2, listing, "a"), call(3, "run_tests", {}, "b"), result(4, PYTEST_RED, "b")]  # fmt: skip
    skip = call(
        5, "edit_file", {"path": "tests/test_dates.py", "new_str": "@pytest.mark.skip"}, "c"
    )
    assert EDITED_FAILING_TEST in names([*head, skip], 5)
    # The code itself, or a new test file: no signal; nor a test changed before any failure.
    fix = call(5, "edit_file", {"path": "src/dates.py", "new_str": "return d"}, "c")
    assert EDITED_FAILING_TEST not in names([*head, fix], 5)
    new = call(
        5, "create_file", {"path": "tests/test_z_suffix.py", "content": "def test(): ..."}, "c"
    )
    assert EDITED_FAILING_TEST not in names([*head, new], 5)
    assert EDITED_FAILING_TEST not in names([*head[:3], skip], 5)
