"""Scorers: distributions summing to 1, deterministic training, versioned blobs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from attribution.core.scorers import (
    ConstantPositionScorer,
    HeuristicScorer,
    LearnedScorer,
    PositionPriorScorer,
    UniformScorer,
    dump_scorer,
    load_scorer,
    scorer_version,
)
from attribution.core.scorers.base import MSG_STEP_OUTSIDE
from tests.attribution.core.conftest import make_trajectory


def _training_set(count: int = 30, seed: int = 3):
    rng = np.random.default_rng(seed)
    trajectories, steps = [], []
    for _ in range(count):
        n = int(rng.integers(3, 9))
        bad = int(rng.integers(0, n - 1))
        contents = [f"step {i} working on it" for i in range(n)]
        contents[bad + 1] = "Traceback: KeyError in parse"
        trajectories.append(make_trajectory(contents, task="parse the file"))
        steps.append(bad)
    return trajectories, steps


ALL_SCORERS = [
    UniformScorer,
    ConstantPositionScorer,
    PositionPriorScorer,
    HeuristicScorer,
    LearnedScorer,
]


@pytest.mark.parametrize("factory", ALL_SCORERS)
def test_it_gives_one_distribution_per_trajectory(factory):
    trajectories, steps = _training_set()
    scorer = factory().fit(trajectories, steps)
    for trajectory, probs in zip(trajectories, scorer.predict_proba(trajectories), strict=True):
        assert probs.shape == (len(trajectory.steps),)
        assert probs.sum() == pytest.approx(1.0)
        assert np.all(probs >= 0)


@pytest.mark.parametrize("factory", ALL_SCORERS)
def test_it_scores_a_one_step_trajectory(factory):
    trajectories, steps = _training_set()
    scorer = factory().fit(trajectories, steps)
    assert scorer.step_probabilities(make_trajectory(["only step"])).tolist() == [1.0]


def test_it_learns_that_the_step_before_an_error_is_decisive():
    trajectories, steps = _training_set(40)
    scorer = LearnedScorer(C=1.0).fit(trajectories, steps)
    held_out, truth = _training_set(20, seed=99)
    assert np.mean(scorer.predict(held_out) == np.array(truth)) > 0.8


def test_it_trains_deterministically_with_a_fixed_seed():
    trajectories, steps = _training_set()
    for objective in ("softmax", "pointwise"):
        first = LearnedScorer(objective=objective, random_state=5).fit(trajectories, steps)
        second = LearnedScorer(objective=objective, random_state=5).fit(trajectories, steps)
        assert np.array_equal(first.coef_, second.coef_)
        assert dump_scorer(first) == dump_scorer(second)


def test_it_keeps_init_parameters_untouched_and_learned_ones_with_underscores():
    trajectories, steps = _training_set()
    scorer = LearnedScorer(C=0.5, text_buckets=16)
    before = scorer.get_params()
    scorer.fit(trajectories, steps)
    assert scorer.get_params() == before
    assert scorer.coef_.shape == (scorer.n_features_in_,)


def test_it_refuses_a_decisive_step_outside_the_trajectory():
    with pytest.raises(ValueError) as error:
        LearnedScorer().fit([make_trajectory(["a", "b"])], [5])
    assert str(error.value) == MSG_STEP_OUTSIDE.format(step=5, position=0, n=2)


def test_it_round_trips_a_fitted_scorer_through_bytes():
    trajectories, steps = _training_set()
    scorer = LearnedScorer().fit(trajectories, steps)
    blob = dump_scorer(scorer)
    restored = load_scorer(blob)
    assert scorer_version(blob).startswith(f"learned-{scorer.feature_version}-")
    for a, b in zip(
        scorer.predict_proba(trajectories), restored.predict_proba(trajectories), strict=True
    ):
        assert np.array_equal(a, b)


def test_it_refuses_a_blob_it_did_not_write():
    import pickle

    with pytest.raises(ValueError):
        load_scorer(pickle.dumps({"format": "other"}))


def test_it_picks_the_most_frequent_index_for_the_constant_baseline():
    trajectories = [make_trajectory(["a"] * 5)] * 4
    scorer = ConstantPositionScorer().fit(trajectories, [1, 1, 3, 3])
    assert scorer.step_ == 1
    assert scorer.predict([make_trajectory(["a"])]).tolist() == [0]


def test_it_learns_a_relative_position_prior():
    trajectories = [make_trajectory(["a"] * 11)] * 5
    scorer = PositionPriorScorer(n_bins=10, smoothing=0.0).fit(trajectories, [10] * 5)
    probs = scorer.step_probabilities(make_trajectory(["a"] * 21))
    # Steps 18-20 share the last tenth of the trajectory and with it all the mass.
    assert probs[18:].sum() == pytest.approx(1.0)


def test_it_suspects_the_step_before_an_error_without_training():
    trajectory = make_trajectory(["plan", "call the api", "Error: 500 Internal", "give up"])
    assert HeuristicScorer().predict([trajectory]).tolist() == [1]


def test_it_suspects_a_repeated_action():
    trajectory = make_trajectory(["search flights", "look at results", "search flights", "done"])
    probs = HeuristicScorer(first_after_request=0.0).step_probabilities(trajectory)
    assert int(np.argmax(probs)) == 2


def rollout(task: str, *steps: tuple[str, str, str]) -> SimpleNamespace:
    """A rollout from (role, kind, content) steps."""
    return SimpleNamespace(
        task_text=task,
        steps=[SimpleNamespace(role=r, kind=k, content=c) for r, k, c in steps],
    )


def test_the_heuristic_suspects_the_call_not_the_observation_that_reports_its_error():
    # A tool-calling rollout: system prompt, user, a call, its error, the agent gives up.
    trajectory = rollout(
        "change my flight",
        ("system", "system", "You are an airline agent."),
        ("user", "message", "change my flight"),
        ("assistant", "tool_call", "update_reservation(id=ABC)"),
        ("tool", "tool_result", "Error: reservation not found"),
        ("assistant", "message", "Sorry, I cannot."),
    )
    probs = HeuristicScorer().step_probabilities(trajectory)
    assert int(np.argmax(probs)) == 2
    assert max(probs[0], probs[1], probs[3]) < probs[4]


def test_after_a_timeout_the_heuristic_suspects_what_the_agent_made_of_it_not_the_call():
    def steps(result):
        return SimpleNamespace(task_text="revenue per month", steps=[
            SimpleNamespace(role="user", kind="message", content="revenue per month"),
            SimpleNamespace(role="assistant", kind="tool_call", content="run_sql(sql=...)"),
            SimpleNamespace(role="tool", kind="tool_result", content=result, is_error=True),
            SimpleNamespace(role="assistant", kind="message",
                            content="Unfortunately that data is unavailable right now."),
        ])  # fmt: skip

    # The environment failed the call: the agent giving up after one timeout is the suspect.
    timed_out = HeuristicScorer().step_probabilities(steps("Error: query timed out after 30 s"))
    assert int(np.argmax(timed_out)) == 3
    # The call failed on its own arguments: the call is.
    wrong = HeuristicScorer().step_probabilities(steps("Error: no such column: region"))
    assert int(np.argmax(wrong)) == 1


def test_a_user_message_full_of_numbers_and_errors_never_outranks_an_agent_action():
    # SWE-agent shows the model a demonstration as a user message before the issue: a
    # whole earlier run, with its numbers, tracebacks and corrections.
    demonstration = (
        "Here is a demonstration. Error: line 12 fails. Traceback 3 4 5 6 7 8 9 10 11 12 13. "
        "Actually, wait, that was wrong; fix line 42, then 77, then 91."
    )
    trajectory = rollout(
        "fix the bug",
        ("system", "system", "You are a programmer."),
        ("user", "message", demonstration),
        ("user", "message", "fix the bug in a.py"),
        ("assistant", "tool_call", "open a.py"),
        ("tool", "tool_result", "1: def f("),
        ("assistant", "tool_call", "edit 1:1 def f():"),
    )
    probs = HeuristicScorer().step_probabilities(trajectory)
    agent_steps = [3, 5]
    assert int(np.argmax(probs)) in agent_steps
    # Every other step sits below the least suspicious agent action, by not_action.
    assert max(probs[i] for i in (0, 1, 2, 4)) < min(probs[i] for i in agent_steps)
    assert probs.min() > 0  # still a probability: a human may label any step


def test_the_heuristic_never_ranks_an_empty_model_call_first():
    # An OpenTelemetry trace: the model call only announced the tool call its tool span
    # ran, so its step is an empty message right after the request.
    trajectory = rollout(
        "Plan a 2-day trip to Quito under $1414.",
        ("user", "message", "Plan a 2-day trip to Quito under $1414."),
        ("assistant", "message", ""),
        ("assistant", "tool_call", "search_flights(to=Quito, max_price=707)"),
        ("tool", "tool_result", '{"flights": [{"price": 471}]}'),
        ("assistant", "message", "Booked hotel Casa Azul for $1764 total."),
    )
    probs = HeuristicScorer().step_probabilities(trajectory)
    assert probs[1] < min(probs[2], probs[4])
    assert int(np.argmax(probs)) in (2, 4)


def test_the_heuristic_keeps_its_signals_on_a_rollout_without_agent_actions():
    trajectory = rollout(
        "", ("user", "message", "book a flight"), ("tool", "tool_result", "Error: 500")
    )
    probs = HeuristicScorer().step_probabilities(trajectory)
    # No agent acted: nothing to push below, the signals decide (the step before the error).
    assert int(np.argmax(probs)) == 0 and probs.sum() == pytest.approx(1.0)


def test_the_heuristic_ranks_a_real_swe_agent_run_by_the_agents_steps():
    from tests.conftest import shared_file
    from tests.ingest.parsers.parser_cases import parse_path

    (record,) = parse_path(
        "swe_agent",
        shared_file(
            "swe_agent/tests/test_data/trajectories/gpt4__swe-agent__test-repo__default_from_url"
            "__t-0.00__p-0.95__c-3.00__install-1/swe-agent__test-repo-i1.traj"
        ),
    )
    assert record.steps[1].content.startswith("Here is a demonstration")
    top = record.steps[int(np.argmax(HeuristicScorer().step_probabilities(record)))]
    assert top.role == "assistant"


# A coding agent (bash, open_file, edit_file, run_tests, submit), as an unseen-system trial
# sent it: before these signals the label-free ranking put its decisive step first in none
# of 40 failed rollouts.
RED = "collected 12 items\n" + "tests/test_iso.py ..F.\n" * 30 + "== 1 failed, 11 passed =="
GREEN = "collected 12 items\n" + "tests/test_iso.py ....\n" * 30 + "== 12 passed =="


def _call(tool, args, call_id):
    return SimpleNamespace(
        role="assistant", kind="tool_call", tool_name=tool, tool_args=args,
        tool_call_id=call_id, content="",
    )  # fmt: skip


def _out(text, call_id):
    return SimpleNamespace(role="tool", kind="tool_result", content=text, tool_call_id=call_id)


def _coding(*steps):
    head = [
        SimpleNamespace(role="system", kind="system", content="You are a software engineer."),
        SimpleNamespace(role="user", kind="message", content="Fix parse_iso8601 (issue 88)."),
    ]
    return SimpleNamespace(task_text="Fix parse_iso8601", steps=[*head, *steps])


def test_the_heuristic_blames_the_edit_a_failing_test_run_caught_not_the_run():
    trajectory = _coding(
        _call("run_tests", '{"target": "tests/test_iso.py"}', "a"), _out(GREEN, "a"),
        _call("create_file", '{"path": "src/iso.py", "content": "def parse(): ..."}', "b"),
        _out("File created.", "b"),
        _call("run_tests", '{"target": "tests/test_iso.py"}', "c"), _out(RED, "c"),
    )  # fmt: skip
    assert int(np.argmax(HeuristicScorer().step_probabilities(trajectory))) == 4


def test_the_heuristic_suspects_a_hand_in_that_claims_success_over_a_red_run():
    said = SimpleNamespace(
        role="assistant", kind="message", content="The suite looks good; the parser is fixed."
    )
    trajectory = _coding(
        _call("run_tests", '{"target": "tests/test_iso.py"}', "b"), _out(RED, "b"),
        said, _call("submit", '{"summary": "Patched the parser."}', "c"), _out("Submitted.", "c"),
    )  # fmt: skip
    assert int(np.argmax(HeuristicScorer().step_probabilities(trajectory))) == 5


def test_the_heuristic_suspects_where_a_loop_starts_not_a_later_turn_of_it():
    run = '{"command": "pytest -x tests/test_iso.py"}'
    trajectory = _coding(
        _call("edit_file", '{"path": "src/iso.py", "new_str": "return d"}', "a"),
        _out("Edited.", "a"),
        _call("bash", run, "b"), _out(RED, "b"),
        _call("bash", run, "c"), _out(RED, "c"),
        _call("bash", run, "d"), _out(RED, "d"),
    )  # fmt: skip
    assert int(np.argmax(HeuristicScorer().step_probabilities(trajectory))) == 6


def _crew_step(agent, text="", tool="", args="", call_id="", error=False, kind=""):
    return SimpleNamespace(
        role="tool" if kind == "tool_result" else "assistant", agent=agent,
        kind=kind or ("tool_call" if tool else "message"), content=text, tool_name=tool,
        tool_args=args, tool_call_id=call_id, is_error=error,
    )  # fmt: skip


def _crew(*steps):
    head = [SimpleNamespace(role="user", kind="message", content="What was the median growth?")]
    return SimpleNamespace(task_text="What was the median growth?", steps=[*head, *steps])


def test_the_heuristic_suspects_a_report_made_over_a_traceback():
    # An unseen research crew: the analyst's code raised, and it reported a figure anyway;
    # the writer's save_report downstream is no cause.
    trajectory = _crew(
        _crew_step("analyst", tool="run_python", args='{"code": "median(x)"}', call_id="a"),
        _crew_step(
            "", "Traceback: NameError: name 'median'", call_id="a", error=True, kind="tool_result"
        ),  # fmt: skip
        _crew_step("analyst", "The calculation gives a median growth of -5.8% for 2019-2023."),
        _crew_step("writer", tool="save_report", args='{"body": "-5.8%"}', call_id="b"),
        _crew_step("", "Saved report rpt_1.", call_id="b", kind="tool_result"),
    )
    with_signals = HeuristicScorer().step_probabilities(trajectory)
    without = HeuristicScorer(behaviour=0).step_probabilities(trajectory)
    # The failed call stays first (what it drew weighs most); the report is a close second.
    assert list(np.argsort(-with_signals)[:2]) == [1, 3]
    assert with_signals[3] > 1.5 * without[3]


def test_the_heuristic_suspects_an_approval_that_checked_nothing():
    trajectory = _crew(
        _crew_step("researcher", tool="read_dataset", args='{"name": "exports"}', call_id="a"),
        _crew_step("", "year,value 2019,336.1 2020,337.8", call_id="a", kind="tool_result"),
        _crew_step("writer", 'Draft: "The median growth was 4.9%."'),
        _crew_step("reviewer", "Looks good, approved."),
        _crew_step("writer", tool="save_report", args='{"body": "4.9%"}', call_id="b"),
        _crew_step("", "Saved report rpt_2.", call_id="b", kind="tool_result"),
    )
    with_signals = HeuristicScorer().step_probabilities(trajectory)
    without = HeuristicScorer(behaviour=0).step_probabilities(trajectory)
    assert with_signals[4] > 2 * without[4]
    assert with_signals[4] >= np.sort(with_signals)[-3]  # among the first three


def test_a_project_s_own_labels_teach_the_learned_scorer_what_follows_a_timeout():
    # An agent system whose decisive step is how it answers a service timeout (it carries
    # on as if the call had answered), at a different place in every rollout, beside an
    # error of its own that it mends at once, before or after the timeout, in words of
    # the same length: neither position nor "the step after an error" finds it, the
    # shared transient-error signals do.
    rng = np.random.default_rng(3)

    def call(text: str) -> SimpleNamespace:
        return SimpleNamespace(role="assistant", kind="tool_call", content=text)

    def result(text: str, error: bool = False) -> SimpleNamespace:
        return SimpleNamespace(role="tool", kind="tool_result", content=text, is_error=error)

    def rollout_with_timeout() -> tuple[SimpleNamespace, int]:
        blocks = [[call(f"run_sql(q{k})"), result("done")] for k in range(rng.integers(0, 6))]
        mistake = [
            call("run_sql(region)"),
            result("Error: no such column: county", error=True),
            call("run_sql(area)"),
            result("done"),
        ]
        timeout = [
            call("run_sql(totals)"),
            result("Error: the database timed out", error=True),
            call("run_sql(sums)"),
            result("done"),
        ]
        blocks.insert(int(rng.integers(0, len(blocks) + 1)), mistake)
        where = int(rng.integers(0, len(blocks) + 1))
        blocks.insert(where, timeout)
        steps = [SimpleNamespace(role="user", kind="message", content="monthly revenue")]
        for block in blocks[:where]:
            steps += block
        decisive = len(steps) + 2
        for block in blocks[where:]:
            steps += block
        steps.append(SimpleNamespace(role="assistant", kind="message", content="Here it is."))
        return SimpleNamespace(task_text="monthly revenue", steps=steps), decisive

    def corpus(size: int) -> tuple[list[SimpleNamespace], list[int]]:
        pairs = [rollout_with_timeout() for _ in range(size)]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    train, train_steps = corpus(60)
    test, test_steps = corpus(30)
    scorer = LearnedScorer(text_buckets=0, C=1.0).fit(train, train_steps)
    assert [int(step) for step in scorer.predict(test)] == test_steps


def test_an_orchestrator_s_routing_said_again_is_no_loop():
    # Magentic-One routes with the same three words before every turn; the surfer then
    # states a price no page gave. Said again, the routing is the protocol, not a loop.
    def step(agent, kind, content, tool=""):
        return SimpleNamespace(
            role="assistant", agent=agent, kind=kind, content=content, tool_name=tool
        )

    def routed(*turns):
        steps = [SimpleNamespace(role="user", kind="message", content="find the ticket price")]
        for turn in turns:
            steps += [step("Orchestrator", "message", "Next speaker Surfer"), turn]
        return SimpleNamespace(task_text="find the ticket price", steps=steps)

    trajectory = routed(
        step("Surfer", "message", "I searched for ticket prices and opened the first link."),
        step("Surfer", "message", "I scrolled down; the page lists the concert dates."),
        step("Surfer", "message", "The ticket price is 45 dollars, I assume."),
        step("Surfer", "message", "I went back to the search results of the earlier query."),
    )
    probs = HeuristicScorer().step_probabilities(trajectory)
    # Said again, the routing weighs what a plain message of the surfer does, below the
    # price nobody gave (the first routing is still the first action after the request).
    for again in (3, 5, 7):
        assert probs[again] == pytest.approx(probs[2])
    assert probs[7] < probs[6]


def test_a_hand_in_call_that_says_the_tests_pass_after_they_failed_is_a_claim():
    # OpenHands keeps its closing message in the finish call's own text, not in a message
    # before it nor in its arguments.
    from attribution.core.signals import compute_signals
    from attribution.core.view import scoring_view

    def call(tool, i, content=""):
        return SimpleNamespace(role="assistant", kind="tool_call", tool_name=tool,
                               tool_args="{}", tool_call_id=i, content=content)  # fmt: skip

    def out(text, i):
        return SimpleNamespace(role="tool", kind="tool_result", content=text, tool_call_id=i)

    def closing(report):
        view = scoring_view(SimpleNamespace(task_text="fix the parser", steps=[
            call("run_tests", "a"), out("1 failed, 3 passed", "a"),
            call("finish", "b", content=report),
        ]))  # fmt: skip
        return compute_signals(view).claim_after_error.tolist()[2]

    assert closing("Fixed the parser; all tests pass.") == 1.0
    assert closing("One test still fails; I could not fix it.") == 0.0
