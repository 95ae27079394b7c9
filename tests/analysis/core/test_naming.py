from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from analysis.core.behaviour import (
    CLAIMED_SUCCESS,
    DREW_ERROR,
    IGNORED_ERROR,
    INVENTED_ARGUMENT,
    OFF_GOLD_ARGUMENTS,
    REPEATED_ACTION,
    UNCONFIRMED_MUTATION,
    UNSUPPORTED_CLAIM,
)
from analysis.core.cluster_summary import ClusterSummary, summarise
from analysis.core.mast import mast_suggestion, shipped_modes
from analysis.core.naming import (
    PHRASE_CHARS,
    PHRASES,
    behaviour_name,
    key_phrase,
    name_cluster,
    signal_wordings,
    structural_name,
)
from analysis.core.profiles import describe_clusters
from analysis.core.steps import WrongStep

PEOPLE = ["Mia Li", "Noah Kim", "Ava Ross", "Liam Chen", "Emma Diaz", "Omar Haddad"]
CITIES = ["Boston", "Seattle", "Denver", "Atlanta", "Phoenix", "Dallas"]


def gift_card_cluster() -> list[WrongStep]:
    steps = []
    for i, (person, city) in enumerate(zip(PEOPLE, CITIES)):
        first, last = person.lower().split()
        steps.append(
            WrongStep(
                key=f"g{i}",
                rollout=f"r{i}",
                index=5,
                agent="assistant",
                role="assistant",
                kind="tool_call",
                tool_name="update_reservation_flights",
                tool_args={
                    "reservation_id": f"{'ABCDEF'[i:]}{'XYZ'[:i]}QQ"[:6].upper(),
                    "payment_id": f"gift_card_{1000 + 7 * i}",
                },
                arg_sources=(("payment_id", "invented"), ("reservation_id", "user")),
                signals=(DREW_ERROR, INVENTED_ARGUMENT, UNCONFIRMED_MUTATION),
                error=f"Error: gift card balance is not enough (gift_card_{1000 + 7 * i})",
                after="Error: gift card balance is not enough",
                content=f"Changing the flight of {person} to {city} now",
                task=f"t{i}",
                task_text=f"You are {first}_{last}_{1234 + i}. Move your trip to {city}.",
            )
        )
    return steps


def claim_cluster() -> list[WrongStep]:
    return [
        WrongStep(
            key=f"c{i}",
            rollout=f"q{i}",
            index=9,
            agent="Orchestrator",
            role="assistant",
            kind="message",
            content=f"The final answer is {city}, founded in {1800 + i}.",
            signals=(UNSUPPORTED_CLAIM,),
            reason=f"The agent reported {city} without verifying it was right.",
            task=f"w{i}",
            task_text=f"Which city did {person} found? Answer about {city}.",
        )
        for i, (person, city) in enumerate(zip(PEOPLE, CITIES))
    ]


def entity_words(steps: list[WrongStep]) -> set[str]:
    words = {"abcdef", "qq", "gift_card_1000"}
    for step in steps:
        words |= {w.lower() for w in re.findall(r"[A-Za-z]+", step.task_text) if len(w) > 2}
        words |= {w.lower() for w in " ".join(PEOPLE + CITIES).split()}
    return (
        words
        - {"you", "are", "move", "your", "trip", "which", "city", "did", "found"}
        - {
            "answer",
            "about",
        }
    )


def test_it_names_a_cluster_by_its_dominant_signals_tool_and_error_template():
    steps = gift_card_cluster()
    profile = describe_clusters(steps, np.zeros(len(steps), dtype=int), np.ones(len(steps)))[0]
    assert profile.name == (
        "Calls update_reservation_flights without the user's confirmation, with a value "
        "nobody provided (gift card balance is not enough)"
    )


def test_it_puts_no_task_entity_in_the_names():
    steps = gift_card_cluster() + claim_cluster()
    labels = np.array([0] * 6 + [1] * 6)
    profiles = describe_clusters(steps, labels, np.ones(len(steps)))
    for profile in profiles.values():
        named = {w.lower() for w in re.findall(r"[A-Za-z_0-9]+", profile.name)}
        assert not named & entity_words(steps), profile.name
        assert not named & {w.lower() for w in profile.terms} & entity_words(steps)


def test_a_second_clause_never_repeats_what_the_lead_says():
    both = [[CLAIMED_SUCCESS, IGNORED_ERROR, DREW_ERROR]] * 3
    summary = summarise(signals=both, tools=[""] * 3, agents=["coder"] * 3, templates=[""] * 3)
    assert behaviour_name(summary) == "Coder reports success right after a failure"
    ignored = [[IGNORED_ERROR, REPEATED_ACTION]] * 3
    summary = summarise(signals=ignored, tools=[""] * 3, agents=["coder"] * 3, templates=[""] * 3)
    assert behaviour_name(summary) == (
        "Coder carries on after an error without changing anything, repeating an earlier action"
    )


def test_it_names_a_multi_agent_cluster_by_its_agent():
    steps = claim_cluster()
    profile = describe_clusters(steps, np.zeros(6, dtype=int), np.ones(6))[0]
    assert profile.name.startswith("Orchestrator gives a final answer that no observation supports")


def test_it_suggests_the_mast_mode_a_signal_implies():
    summary = summarise(
        signals=[[REPEATED_ACTION]] * 3, tools=["search"] * 3, agents=["a"] * 3, templates=[""] * 3
    )
    assert mast_suggestion(summary).code == "MAST-3"
    summary = summarise(
        signals=[[IGNORED_ERROR]] * 2, tools=["x"] * 2, agents=["a"] * 2, templates=[""] * 2
    )
    assert mast_suggestion(summary).code == "MAST-10"


def test_a_single_agent_s_misbehaviour_is_never_suggested_an_inter_agent_mode():
    # A coding agent alone re-runs the failing tests after their error: no other agent's
    # input was ignored; the repetition decides.
    def loop(one_agent: bool) -> ClusterSummary:
        return summarise(
            signals=[[IGNORED_ERROR, REPEATED_ACTION]] * 4,
            tools=["run_tests"] * 4,
            agents=["main"] * 4,
            templates=[""] * 4,
            one_agent=[one_agent] * 4,
        )

    assert mast_suggestion(loop(one_agent=True)).code == "MAST-3"
    assert mast_suggestion(loop(one_agent=False)).code == "MAST-10"
    # Nor by wording: a text that reads like a reset of the conversation.
    reset = ["the conversation was restarted and reset from the beginning"] * 3
    assert mast_suggestion(ClusterSummary(texts=reset)).code == "MAST-6"
    alone = mast_suggestion(ClusterSummary(texts=reset, one_agent_share=1.0))
    assert alone is None or alone.code != "MAST-6"


def test_it_suggests_a_mode_from_the_label_reasons_when_no_signal_decides():
    steps = claim_cluster()
    steps = [WrongStep(**{**vars(step), "signals": ()}) for step in steps]
    profile = describe_clusters(steps, np.zeros(6, dtype=int), np.ones(6))[0]
    assert profile.suggested_category == "MAST-12"


def test_it_suggests_nothing_without_signals_or_telling_words():
    assert mast_suggestion(ClusterSummary(texts=["clicks the blue button twice"])) is None


def test_every_cluster_with_telling_words_gets_its_most_voted_mode_and_its_support():
    from analysis.core.mast import BASIS_SIGNAL, BASIS_WORDING
    from analysis.core.profiles import MisbehaviourProfile
    from analysis.evaluation.mast_report import kept

    texts = ["the agent did not verify the result it reported"] * 3 + ["clicks twice"] * 7
    weak = mast_suggestion(ClusterSummary(texts=texts))
    assert (weak.code, weak.support, weak.basis) == ("MAST-12", 0.3, BASIS_WORDING)
    # The rule before it waited for half the members.
    profile = MisbehaviourProfile(
        0, 10, 10.0, 1.0, "", [], "", 0, [], suggested_category=weak.code,
        suggested_support=weak.support, suggested_basis=weak.basis,
    )  # fmt: skip
    assert kept(profile, 0.5) is None
    strong = mast_suggestion(ClusterSummary(signal_shares={REPEATED_ACTION: 0.8}, texts=texts))
    assert (strong.code, strong.support, strong.basis) == ("MAST-3", 0.8, BASIS_SIGNAL)


def test_it_suggests_only_codes_of_the_shipped_taxonomy():
    codes = {mode["code"] for mode in shipped_modes()}
    assert len(codes) == 14 and "MAST-12" in codes


def test_it_gives_no_behaviour_name_when_no_signal_dominates():
    summary = ClusterSummary(signal_shares={REPEATED_ACTION: 0.3}, tool="search", tool_share=1.0)
    assert behaviour_name(summary) == ""


def test_it_uses_the_masked_key_phrase_when_no_error_template_dominates():
    summary = ClusterSummary(terms=["refund", "policy"], phrase="explain the refund policy")
    assert key_phrase(summary) == "“explain the refund policy”"


def test_it_names_a_cluster_without_a_dominant_signal_with_a_sentence():
    summary = ClusterSummary(
        agent="Verification_Expert", agent_share=0.4, agent_family="Expert",
        agent_family_share=0.9, kind="message", kind_share=1.0, phrase="verify the results",
    )  # fmt: skip
    assert name_cluster(summary) == "An expert says “verify the results”"


def test_it_keeps_a_rare_word_of_a_members_task_out_of_every_part_of_a_name():
    summary = ClusterSummary(
        signal_shares={DREW_ERROR: 1.0}, tool="update_reservation_flights", tool_share=1.0,
        template="Error: gift card balance is not enough", template_share=1.0,
        agent="Paintball_Expert", agent_share=1.0, forbidden=frozenset({"gift", "paintball"}),
    )  # fmt: skip
    name = name_cluster(summary)
    assert (
        name == "Calls update_reservation_flights and gets an error (… card balance is not enough)"
    )


def test_it_rewords_even_fixed_words_and_tools_a_members_task_makes_rare():
    words = frozenset({"assistant", "message", "calculate"})
    said = ClusterSummary(agent="assistant", agent_share=1.0, kind="message", kind_share=1.0)
    called = ClusterSummary(kind="tool_call", kind_share=1.0, tool="calculate", tool_share=1.0)
    assert name_cluster(replace(said, forbidden=words)) == "An agent replies"
    assert name_cluster(replace(called, forbidden=words)) == "Calls a tool"


def test_a_signal_keeps_its_place_in_the_name_when_a_word_of_its_wording_is_rare():
    # "other" was in 14 of the demo's 384 tasks (under 5%) and in a member's task text.
    summary = ClusterSummary(
        signal_shares={OFF_GOLD_ARGUMENTS: 1.0, UNCONFIRMED_MUTATION: 0.8},
        tool="book_reservation", tool_share=1.0,
    )  # fmt: skip
    assert behaviour_name(summary) == (
        "Calls book_reservation without the user's confirmation,"
        " with arguments other than the task's"
    )
    rare = replace(summary, forbidden=frozenset({"other", "confirmation"}))
    assert behaviour_name(rare) == (
        "Calls book_reservation before the user agreed, with arguments unlike the expected ones"
    )
    # With every wording of the second signal forbidden, the first still leads alone.
    gone = replace(summary, forbidden=frozenset({"other", "unlike"}))
    assert behaviour_name(gone) == "Calls book_reservation without the user's confirmation"
    # Every wording says the signal in words other than the first's.
    for signal in PHRASES:
        leads = [lead for lead, _, _ in signal_wordings(signal)]
        assert len(leads) == len(set(leads)) >= 2


def test_a_key_phrase_the_diagnosis_holds_is_not_named_as_what_the_agent_said():
    summary = ClusterSummary(
        agent="Verification_Expert", agent_share=1.0, kind="message", kind_share=1.0,
        phrase="search results", phrase_share=0.2, diagnosis="search results",
    )  # fmt: skip
    assert name_cluster(summary) == (
        "Verification_Expert writes a message (diagnosed as “search results”)"
    )
    other = replace(summary, phrase="let's execute", phrase_share=0.3)
    assert name_cluster(other) == (
        "Verification_Expert often says “let's execute” (diagnosed as “search results”)"
    )


def test_it_adds_the_diagnosis_the_members_label_reasons_share():
    reasons = [
        "provides incorrect ticket prices for the show",
        "it provides incorrect ticket prices",
    ]
    steps = [
        WrongStep(
            key=f"d{i}",
            rollout=f"r{i}",
            index=1,
            agent="Pricing_Expert",
            role="user",
            kind="message",
            content=f"The total is {10 + i} dollars.",
            reason=reasons[i % 2],
        )
        for i in range(6)
    ]
    profiles = describe_clusters(steps, np.zeros(6, dtype=np.int64), np.ones(6))
    # The key phrase came from the reasons: the name does not say the agent said it.
    assert profiles[0].name == (
        "Pricing_Expert writes a message (diagnosed as “provides incorrect ticket prices”)"
    )


def test_a_name_with_no_phrase_and_no_tool_says_when_the_agent_acts():
    summary = ClusterSummary(
        agent="assistant", agent_share=1.0, kind="message", kind_share=1.0,
        preceded_by="user", preceded_share=0.61,
    )  # fmt: skip
    assert structural_name(summary).endswith("right after the user's message")
    # Not when no situation is shared by most members, and never with a forbidden word.
    assert "right after" not in structural_name(replace(summary, preceded_share=0.4))
    banned = replace(
        summary, preceded_by="result:get_weather", forbidden=frozenset({"get_weather"})
    )
    assert structural_name(banned).endswith("right after a tool result")
    # A tool or a key phrase already says what the agent does: no situation then.
    with_tool = replace(summary, kind="tool_call", tool="search", tool_share=1.0)
    assert structural_name(with_tool) == "Calls search"
    # When "message" is a forbidden word, the user is still named.
    strict = replace(summary, forbidden=frozenset({"message"}))
    assert structural_name(strict) == "The assistant replies right after the user"
    # The agent's own thought before it is its own step, not another agent.
    planner = ClusterSummary(
        agent="Orchestrator (thought)", agent_share=1.0, kind="message", kind_share=1.0,
        preceded_by="agent:Orchestrator (-> WebSurfer)", preceded_share=0.9,
    )  # fmt: skip
    assert structural_name(planner) == "Orchestrator plans the next step right after its own step"


def test_two_tools_that_hold_half_the_calls_together_name_the_cluster():
    calls = summarise(
        signals=[[]] * 10,
        tools=["get_user"] * 4 + ["cancel"] * 3 + ["think"] * 3,
        agents=["assistant"] * 10,
        templates=[""] * 10,
        kinds=["tool_call"] * 10,
    )
    assert (calls.tool, calls.second_tool, calls.second_tool_share) == ("get_user", "cancel", 0.3)
    assert structural_name(calls) == "Calls get_user or cancel"
    # Spread over many tools, or with a forbidden tool name: no pair, the most used tool.
    spread = replace(calls, tool_share=0.2, second_tool_share=0.2)
    assert structural_name(spread) == "Calls various tools, most often get_user"
    no_pair = replace(calls, forbidden=frozenset({"cancel"}))
    assert structural_name(no_pair) == "Calls various tools, most often get_user"
    # A task's word names no tool.
    assert structural_name(replace(spread, forbidden=frozenset({"get_user"}))) == "Calls tools"


def test_a_key_phrase_few_members_say_is_named_as_what_some_of_them_do():
    said = ClusterSummary(
        agent="Orchestrator", agent_share=1.0, kind="message", kind_share=1.0,
        phrase="verify the results",
    )  # fmt: skip
    assert name_cluster(replace(said, phrase_share=0.8)) == "Orchestrator says “verify the results”"
    assert name_cluster(replace(said, phrase_share=0.3)) == (
        "Orchestrator often says “verify the results”"
    )
    assert name_cluster(replace(said, phrase_share=0.1)) == (
        "Orchestrator sometimes says “verify the results”"
    )
    called = ClusterSummary(
        signal_shares={REPEATED_ACTION: 1.0}, tool="search", tool_share=1.0,
        phrase="opening the next page", phrase_share=0.2,
    )  # fmt: skip
    assert (
        name_cluster(called) == "Repeats the same search call (sometimes “opening the next page”)"
    )
    # A dominant error template is what most members drew: no hedge.
    drew = replace(called, template="Error: page not found", template_share=0.9)
    assert name_cluster(drew) == "Repeats the same search call (page not found)"
    # The hedge words obey the name rule too.
    rare = replace(said, phrase_share=0.1, forbidden=frozenset({"sometimes"}))
    assert name_cluster(rare) == "Orchestrator at times says “verify the results”"


def test_a_cluster_named_by_a_minority_phrase_says_so():
    steps = []
    others = ["Hmm.", "Right.", "Okay.", "Fine.", "Noted.", "Sure.", "Agreed.", "Understood."]
    for i in range(10):
        text = "Let me verify the totals first." if i < 2 else others[i - 2]
        step = replace(claim_cluster()[i % 6], key=f"m{i}", rollout=f"m{i}", signals=())
        steps.append(replace(step, content=text, reason=""))
    profile = describe_clusters(steps, np.zeros(10, dtype=int), np.ones(10))[0]
    assert profile.name == "Orchestrator sometimes says “let me verify the totals”"


def test_exemplars_show_the_signal_the_name_leads_with_first():
    steps = [
        WrongStep(
            key=f"s{i}",
            rollout=f"r{i}",
            index=3,
            agent="assistant",
            role="assistant",
            kind="message",
            content="Let me look into that for you.",
            signals=(UNSUPPORTED_CLAIM,) if i >= 2 else (),
        )
        for i in range(6)
    ]
    # The two without the signal are the most firmly inside the cluster.
    probabilities = np.array([1.0, 0.99, 0.5, 0.6, 0.7, 0.8])
    profile = describe_clusters(steps, np.zeros(6, dtype=np.int64), probabilities)[0]
    assert profile.name.startswith("Gives a final answer that no observation supports")
    assert profile.exemplars[:4] == ["s5", "s4", "s3", "s2"]


def test_a_cluster_sharing_only_wording_is_loose_and_one_sharing_a_trait_is_not():
    from analysis.core.naming import is_loose, shared_traits

    # 34 messages by 31 experts, 5 of them saying the key phrase: nothing is shared.
    loose = ClusterSummary(
        agent="Computer_terminal",
        agent_share=2 / 34,
        agent_family="Expert",
        agent_family_share=0.9,
        kind="message",
        kind_share=1.0,
        phrase="let's execute",
        phrase_share=5 / 34,
    )
    assert shared_traits(loose) == [] and is_loose(loose)
    for trait, summary in {
        "agent": ClusterSummary(agent="WebSurfer", agent_share=0.9),
        "tool": ClusterSummary(tool="calculate", tool_share=0.6),
        "error": ClusterSummary(template="Error: <id> not found", template_share=0.7),
        "phrase": ClusterSummary(phrase="metadata was extracted", phrase_share=0.8),
        "signal": ClusterSummary(signal_shares={"repeated_action": 0.9}),
        "diagnosis": ClusterSummary(diagnosis="wrong unit"),
    }.items():
        assert shared_traits(summary) == [trait] and not is_loose(summary), trait


def test_a_long_key_phrase_is_cut_after_a_whole_word():
    # A trial's name ended "… at least one citation per numeric clai)".
    long = "the report must give at least one citation per numeric claim and every source"
    summary = ClusterSummary(phrase=long + " it names in the text", phrase_share=0.8)
    phrase = key_phrase(summary)
    assert phrase.endswith(" …”") and len(phrase) <= PHRASE_CHARS + 2
    assert phrase[1:-3].split()[-1] in long.split()
