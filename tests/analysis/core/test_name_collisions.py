from __future__ import annotations

import numpy as np

from analysis.core.name_collisions import NamedCluster, distinct_names
from analysis.core.profiles import describe_clusters
from analysis.core.selection import preceding
from analysis.core.steps import WrongStep
from ingest.core.records import StepRecord


def lookup(key: str, preceded_by: str, source: str, signals: tuple[str, ...] = ()) -> WrongStep:
    return WrongStep(
        key=key,
        rollout=f"r{key}",
        index=4,
        agent="assistant",
        role="assistant",
        kind="tool_call",
        tool_name="get_reservation_details",
        tool_args={"reservation_id": f"ID{key}"},
        arg_sources=(("reservation_id", source),),
        signals=signals,
        preceded_by=preceded_by,
        task=f"t{key}",
    )


def described(groups: list[list[WrongStep]]) -> dict[int, str]:
    steps = [step for group in groups for step in group]
    labels = np.array([label for label, group in enumerate(groups) for _ in group])
    profiles = describe_clusters(steps, labels, np.ones(len(steps)))
    return {label: profile.name for label, profile in profiles.items()}


def test_it_gives_colliding_base_names_distinct_meaningful_suffixes():
    names = described(
        [
            [lookup(f"a{i}", "user", "user") for i in range(6)],
            [lookup(f"b{i}", "result:get_user_details", "observation") for i in range(6)],
            [lookup(f"c{i}", "error", "observation") for i in range(6)],
        ]
    )
    assert len(set(names.values())) == 3
    assert names[0] == "Calls get_reservation_details right after the user's message"
    assert names[1] == "Calls get_reservation_details right after a get_user_details result"
    assert names[2] == "Calls get_reservation_details right after an error"


def test_it_keeps_a_name_unchanged_when_nothing_collides():
    alone = [lookup(f"a{i}", "user", "user") for i in range(6)]
    names = described([alone])
    assert names == {0: "Calls get_reservation_details"}


def test_it_numbers_only_the_clusters_no_trait_tells_apart():
    names = distinct_names(
        [
            NamedCluster(1, "Calls think", [{"after:error"}] * 4, size=4),
            NamedCluster(2, "Calls think", [{"after:self"}] * 9, size=9),
            NamedCluster(3, "Calls think", [{"after:self"}] * 3, size=3),
        ]
    )
    assert names == {
        1: "Calls think right after an error",
        2: "Calls think right after its own step",
        3: "Calls think right after its own step (2)",
    }


def test_it_never_words_a_suffix_with_a_forbidden_word():
    names = distinct_names(
        [
            NamedCluster(
                1,
                "Calls a tool",
                [{"after:result:calculate"}] * 3,
                forbidden=frozenset({"calculate"}),
            ),
            NamedCluster(2, "Calls a tool", [{"after:user"}] * 3),
        ]
    )
    assert names[1] == "Calls a tool right after a tool result"
    assert "calculate" not in names[1]


def test_a_signal_suffix_takes_its_other_wording_and_never_says_the_signal_twice():
    names = distinct_names(
        [
            NamedCluster(
                1,
                "Calls get_reservation_details",
                [{"signal:repeated_action"}] * 3,
                forbidden=frozenset({"earlier"}),
            ),
            NamedCluster(2, "Calls get_reservation_details", [{"after:user"}] * 3),
        ]
    )
    assert names[1] == "Calls get_reservation_details, doing the same thing again"
    said = distinct_names(
        [
            NamedCluster(
                1,
                "Calls x, repeating an earlier action",
                [{"signal:repeated_action", "after:error"}] * 3,
            ),
            NamedCluster(2, "Calls x, repeating an earlier action", [{"after:user"}] * 3),
        ]
    )
    assert said[1] == "Calls x, repeating an earlier action right after an error"


def test_it_records_what_came_just_before_a_step():
    steps = [
        StepRecord(index=0, role="system", kind="system", content="policy"),
        StepRecord(index=1, role="assistant", kind="tool_call", tool_name="book"),
        StepRecord(index=2, role="tool", kind="tool_result", tool_name="book", is_error=True),
        StepRecord(index=3, role="assistant", kind="tool_call", tool_name="book"),
    ]
    assert [preceding(steps, position) for position in (1, 3)] == ["start", "error"]


def test_names_that_differ_only_by_a_quote_are_told_apart_by_what_differs():
    # An unseen SQL agent: a made-up figure after an error and a misread result, both
    # "gives a final answer that no observation supports", one with a quote.
    stem = "reporter gives a final answer that no observation supports"
    names = distinct_names(
        [
            NamedCluster(
                1, f"{stem} (“know if you need a breakdown”)", [{"after:error"}] * 3, size=3
            ),  # fmt: skip
            NamedCluster(2, stem, [{"after:result:run_sql"}] * 2, size=2),
            NamedCluster(3, "planner gives up (“that data is unavailable”)", [set()], size=1),
        ]
    )
    assert names[1] == f"{stem} (“know if you need a breakdown”), right after an error"
    assert names[2] == f"{stem} right after a run_sql result"
    assert names[3] == "planner gives up (“that data is unavailable”)"
    # Told apart by nothing but the quote: the quote does it, no ordinal.
    plain = distinct_names(
        [NamedCluster(1, f"{stem} (“a”)", [set()], size=2), NamedCluster(2, stem, [set()])]
    )
    assert plain == {1: f"{stem} (“a”)", 2: stem}
