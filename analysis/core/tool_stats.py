"""Which tools a project's agents call, how often the calls fail, and how the rollouts that
call them end: counters that a rollout's share moves up and down (the overview keeps them
between refreshes), and the table rows read from them.

A rollout's use of a tool is its calls, the calls whose step is an error and the calls
marked mutating. Formats differ in what they record of a call: a call step and a result
step (OpenAI chat, tau-bench), or one step per tool span. So a rollout's calls of a tool
are the larger of its call steps and its result steps of that name, and an error is any
step of that name marked as one (a failed span, an error result).

The failure lift compares rollouts that call the tool with those that do not, crude and
stratified by environment and length (analysis.core.lift). Failed rollouts are longer and
call more of everything, so a tool merely common in long rollouts has a crude lift above
1 and an adjusted one near 1. The strata are fixed length buckets
(attribution.core.conformal.length_bucket), not the quantiles the misbehaviours' lift
uses: counters kept between refreshes cannot follow quantiles that move with every
rollout. Environments where no rollout succeeded say nothing about failure and are left
out of both lifts, as for misbehaviours.

    >>> counts = empty_tool_counts()
    >>> use = rollout_tool_use([("search", "tool_call", False, False),
    ...                         ("search", "tool_result", True, None)])
    >>> use
    {'search': [1, 1, 0]}
    >>> add_rollout(counts, tools=use, stratum=stratum_of("shop", 5), failed=True,
    ...             succeeded=False, sign=1)
    >>> add_rollout(counts, tools={}, stratum=stratum_of("shop", 6), failed=False,
    ...             succeeded=True, sign=1)
    >>> row = tool_rows(counts)[0]
    >>> row["tool"], row["calls"], row["errors"], row["rollouts"], row["failed"], row["judged"]
    ('search', 1, 1, 1, 1, 1)
    >>> row["lift_unadjusted"], row["lift_adjusted"]
    (3.0, 3.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from analysis.core.lift import few_rollouts, lift_of_cells
from attribution.core.conformal import length_bucket

SEPARATOR = "\x1f"
#: Tools in the table, most called first: past this a project's tool names are generated
#: (one per sub-agent or per MCP server) and a longer table helps nobody.
TOOLS_SHOWN = 200
# A rollout's use of one tool: [calls, error steps, mutating calls].
USE_FIELDS = 3
# A row's lifts from few rollouts with an outcome are marked (``few``) by the rule the
# misbehaviours' lifts follow too: analysis.core.lift.few_rollouts.


def stratum_of(environment: str, length: int) -> str:
    """The stratum a rollout is compared in: its environment and its length bucket.

    >>> stratum_of("airline", 12).split(SEPARATOR)
    ['airline', '9-16']
    """
    return f"{environment}{SEPARATOR}{length_bucket(max(int(length), 1))}"


def rollout_tool_use(
    steps: Iterable[tuple[str, str, bool, bool | None]],
) -> dict[str, list[int]]:
    """One rollout's (tool name, step kind, is error, is mutating) steps -> per tool
    ``[calls, errors, mutating calls]`` (module doc for what a call is)."""
    calls: dict[str, int] = {}
    results: dict[str, int] = {}
    errors: dict[str, int] = {}
    mutating: dict[str, int] = {}
    for name, kind, is_error, is_mutating in steps:
        if not name:
            continue
        counted = results if kind == "tool_result" else calls
        counted[name] = counted.get(name, 0) + 1
        errors[name] = errors.get(name, 0) + bool(is_error)
        if kind != "tool_result" and is_mutating:
            mutating[name] = mutating.get(name, 0) + 1
    return {
        name: [max(calls.get(name, 0), results.get(name, 0)), errors[name], mutating.get(name, 0)]
        for name in sorted(errors)
    }


def empty_tool_counts() -> dict[str, Any]:
    """``strata``: every rollout's [failed, with an outcome] per stratum; ``tools``: per
    tool its [calls, errors, mutating calls, rollouts] and the same per-stratum pair for
    the rollouts that call it."""
    return {"strata": {}, "tools": {}}


def add_rollout(
    counts: dict[str, Any],
    *,
    tools: Mapping[str, list[int]],
    stratum: str,
    failed: bool,
    succeeded: bool,
    sign: int,
) -> None:
    """Move the counters by one rollout's share (``sign`` -1 takes it back)."""
    judged = failed or succeeded
    pair = counts["strata"].setdefault(stratum, [0, 0])
    pair[0] += sign * failed
    pair[1] += sign * judged
    if pair[1] <= 0 and pair[0] <= 0:
        del counts["strata"][stratum]
    for name, use in tools.items():
        entry = counts["tools"].setdefault(name, {"use": [0] * (USE_FIELDS + 1), "strata": {}})
        for field, value in enumerate(use[:USE_FIELDS]):
            entry["use"][field] += sign * int(value)
        entry["use"][USE_FIELDS] += sign
        tool_pair = entry["strata"].setdefault(stratum, [0, 0])
        tool_pair[0] += sign * failed
        tool_pair[1] += sign * judged
        if tool_pair[1] <= 0 and tool_pair[0] <= 0:
            del entry["strata"][stratum]
        if entry["use"][USE_FIELDS] <= 0:
            del counts["tools"][name]


def _comparable(project: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """The project's strata of environments where some rollout succeeded (module doc)."""
    with_success = {
        key.split(SEPARATOR, 1)[0] for key, (failed, judged) in project.items() if failed < judged
    }
    return {
        key: pair for key, pair in project.items() if key.split(SEPARATOR, 1)[0] in with_success
    }


def _lift_cells(
    comparable: Mapping[str, list[int]], tool: Mapping[str, list[int]]
) -> list[list[float]]:
    """Per comparable stratum ``[failed calling, calling, failed not calling, not calling]``."""
    cells: list[list[float]] = []
    for key, (failed, judged) in comparable.items():
        tool_failed, tool_judged = tool.get(key, (0, 0))
        cells.append([tool_failed, tool_judged, failed - tool_failed, judged - tool_judged])
    return cells


def tool_rows(counts: Mapping[str, Any], shown: int = TOOLS_SHOWN) -> list[dict[str, Any]]:
    """The tools table, most called first: calls, errors, mutating calls, rollouts that
    call it, how many of those failed of those with an outcome, and the crude and
    length-adjusted failure lift (None where nothing can be compared)."""
    tools = counts.get("tools", {})
    order = sorted(tools, key=lambda name: (-tools[name]["use"][0], -tools[name]["use"][3], name))
    # Which strata compare is the project's, not a tool's: found once for every row.
    comparable = _comparable(counts.get("strata", {}))
    rows = []
    for name in order[:shown]:
        entry = tools[name]
        calls, errors, mutating, rollouts = entry["use"]
        failed = sum(pair[0] for pair in entry["strata"].values())
        judged = sum(pair[1] for pair in entry["strata"].values())
        lift = lift_of_cells(_lift_cells(comparable, entry["strata"]))
        rows.append(
            {
                "tool": name,
                "calls": calls,
                "errors": errors,
                "mutating": mutating,
                "rollouts": rollouts,
                "failed": failed,
                "judged": judged,
                "lift_unadjusted": lift.unadjusted,
                "lift_adjusted": lift.adjusted,
                "few": few_rollouts(judged),
            }
        )
    return rows
