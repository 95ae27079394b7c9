"""Context of the overview, rollout and comparison pages: selectors and charts put together.

Views stay thin (access, this, render); each function here costs a bounded number of
queries, asserted in tests/dashboard/test_overview.py and test_rollout_viewer.py.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.cache import cache
from django.db.models import Case, Q, Value, When
from django.urls import reverse

from analysis.selectors import misbehaviour_summary, rollout_length_contrast, rollout_wrong_steps
from attribution.models import RolloutDeviation
from attribution.selectors import attribution_panel
from dashboard import charts, rollout_charts
from dashboard.compare import AlignStep, align, where
from dashboard.selectors import action_analysis, coverage
from dashboard.step_html import LABELLED_BADGE, steps_html
from dashboard.templatetags.faultline import agent_colours
from exports.selectors import correction_context, rollout_corrections
from ingest.core.records import LabelSource
from ingest.models import LiveTraceState, Step, Trajectory
from ingest.selectors import (
    rollout_labels,
    rollout_live_trace,
    rollout_parentless_steps,
    rollout_steps,
    steps_saying,
)
from pipeline.models import ProjectRefresh
from pipeline.overview import stored_overview

LANE_STEPS_MAX = 20_000
LANES_CACHE_PREFIX = "faultline:lanes:v1"
LANES_CACHE_SECONDS = 600
COMPARE_STEPS_MAX = 600
COMPARE_CANDIDATES = 20
CORRECTION_FULL_MAX_STEPS = 1_000
# Rows of the overview's tools table shown before "Show all" (faultline.js).
TOOLS_SHOWN_FIRST = 12
PARENTLESS_LISTED = 10  # steps whose parent span never came, linked on the rollout page
# Steps holding the searched text that the rollout page lists to jump to (and marks).
SAID_STEPS_LISTED = 200


def overview_context(*, project: Any) -> dict[str, Any]:
    slug = project.slug
    list_url = reverse("dashboard:rollout_list", args=[slug])
    aggregates, computed_at = stored_overview(project=project)
    uploads = aggregates["uploads"]
    figures = [
        charts.failure_heatmap(aggregates["failures"]),
        charts.failure_rate_over_uploads(
            uploads, urls=[f"{list_url}?upload={row['id']}" for row in uploads]
        ),
    ]
    if aggregates["positions"]:
        figures.insert(1, charts.decisive_position_histogram(aggregates["positions"]))
    tools = aggregates.get("tools")
    misbehaviours = misbehaviour_summary(project)
    lengths = rollout_length_contrast(project) if tools else None
    taxonomy = charts.taxonomy_treemap(misbehaviours) if misbehaviours else None
    analysis = action_analysis(project=project)
    actions = analysis.summary if analysis is not None else None
    return {
        "computed_at": computed_at,
        "last_refresh": ProjectRefresh.objects.filter(project=project).first(),
        "taxonomy": taxonomy,
        "misbehaviours_url": reverse("analysis:misbehaviour_list", kwargs={"slug": slug}),
        "figures": figures,
        "coverage": coverage(project=project),
        # None: counters stored before the tools table existed (the next refresh adds it).
        "tools": tools,
        "lengths": lengths,
        "tools_shown": TOOLS_SHOWN_FIRST,
        "actions": actions,
        "actions_chart": charts.action_odds_chart(actions)
        if actions and actions.get("odds")
        else None,
    }


def _lanes(
    rollout: Trajectory,
    *,
    prediction_set: tuple[int, int] | None,
    rollback_step: int | None,
    decisive_step: int | None,
    shown: tuple[int, int] | None,
) -> tuple[list[str], dict[str, Any] | None, int]:
    """The rollout's agents, its lane chart and how many steps it marks, from the cache
    when the same chart was drawn before: reading 5,000 steps' marks and drawing them was
    a third of the longest rollout page. The key holds everything the chart shows, and a
    rollout's steps change only with its step count (a live trace growing)."""
    shape = (
        rollout.created_at.timestamp() if rollout.created_at else None,
        rollout.step_count,
        prediction_set,
        rollback_step,
        decisive_step,
        shown,
    )
    digest = hashlib.sha1(repr(shape).encode(), usedforsecurity=False).hexdigest()
    key = f"{LANES_CACHE_PREFIX}:{rollout.pk}:{digest}"
    cached = cache.get(key)
    if cached is not None:
        agents, lanes, count = cached
        return list(agents), lanes, int(count)
    marks = list(
        Step.objects.filter(trajectory=rollout, index__lt=LANE_STEPS_MAX)
        .order_by("index")
        .values_list("index", "agent", "role", "kind", "is_error")
    )
    agents = sorted({agent for _, agent, _, _, _ in marks if agent})
    by_agent = len(agents) > 1
    lanes = None
    if marks:
        lane_marks = [
            (i, (agent if by_agent else role) or role or "step", kind, err)
            for i, agent, role, kind, err in marks
        ]
        lanes = rollout_charts.agent_lanes(
            lane_marks,
            # The same colour as the agent's chip and step border (see agent_colours).
            colours={
                lane: charts.AGENT_COLOURS[slot]
                for lane, slot in agent_colours({m[1] for m in lane_marks}).items()
            },
            prediction_set=prediction_set,
            rollback_step=rollback_step,
            decisive_step=decisive_step,
            shown=shown,
        )
    cache.set(key, (agents, lanes, len(marks)), LANES_CACHE_SECONDS)
    return agents, lanes, len(marks)


#: Rows of the rollout page's "Why" table shown before the rest fold away.
WHY_ROWS = 12


def why_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The "Why" table's rows: all of them, those shown and those folded away."""
    return {"wrong_steps": rows, "why_shown": rows[:WHY_ROWS], "why_folded": rows[WHY_ROWS:]}


def rollout_context(
    *, rollout: Trajectory, start: int, window: int, user: Any = None, says: str = ""
) -> dict[str, Any]:
    """What the rollout page shows of ``rollout``: the steps of the window from ``start``,
    its prediction set, labels and marks; with ``says``, the steps holding that text (as
    the rollouts list's "a step says" finds them) marked, and listed to jump to."""
    labels = rollout_labels(rollout=rollout)
    said = (
        list(
            steps_saying(says)
            .filter(trajectory=rollout)
            .order_by("index")
            .values_list("index", flat=True)[: SAID_STEPS_LISTED + 1]
        )
        if says
        else []
    )
    steps = list(rollout_steps(rollout=rollout, start=start, stop=start + window))
    panel = attribution_panel(rollout, user=user)
    lo, hi = (panel["lo"], panel["hi"]) if panel else (None, None)
    rollback = panel["rollback_step"] if panel else None
    deviation = RolloutDeviation.objects.filter(trajectory=rollout).first()
    shown = (
        (start, min(start + window, rollout.step_count) - 1)
        if rollout.step_count > window
        else None
    )
    agents, lanes, mark_count = _lanes(
        rollout,
        prediction_set=(lo, hi) if lo is not None and hi is not None else None,
        rollback_step=rollback,
        decisive_step=deviation.decisive_step if deviation else None,
        shown=shown,
    )
    by_agent = len(agents) > 1
    windows = [
        (first, min(first + window, rollout.step_count) - 1)
        for first in range(0, rollout.step_count, window)
    ]
    # The outcome of the trial the comparison opens with (successful ones first), so the
    # button does not promise a successful trial the task does not have.
    best = compare_candidates(rollout=rollout)[:1]
    comparable = best[0].outcome if best else None
    palette = agent_colours(agents)
    labelled_steps = {label.step_index for label in labels}
    # The gold-action label refines the plain diff (failed calls, prose arguments and
    # outcome-neutral tools skipped), so the two may name different steps.
    gold_label = next((label for label in labels if label.source == LabelSource.GOLD_ACTIONS), None)
    live = rollout_live_trace(rollout=rollout)
    # An open trace's children come before their parents (a span is sent when it ends):
    # a parent missing only means spans were lost once the trace is closed.
    parentless = (
        rollout_parentless_steps(rollout=rollout, limit=PARENTLESS_LISTED)
        if live is None or live.state == LiveTraceState.CLOSED
        else []
    )
    return {
        **_correction_context(rollout, labels, rollback),
        "live": live,
        "parentless_steps": parentless[:PARENTLESS_LISTED],
        "parentless_more": len(parentless) > PARENTLESS_LISTED,
        "steps": steps,
        "steps_html": steps_html(
            steps,
            labelled_steps=labelled_steps,
            set_lo=lo,
            set_hi=hi,
            rollback_step=rollback,
            deviation_step=deviation.decisive_step if deviation else None,
            colours=palette,
            said_steps=frozenset(said),
            says=says,
            download_url=reverse(
                "dashboard:rollout_download", args=[rollout.project.slug, rollout.pk]
            ),
        ),
        "says": says,
        "said_steps": said[:SAID_STEPS_LISTED],
        "said_more": len(said) > SAID_STEPS_LISTED,
        "labels": labels,
        "labelled_steps": labelled_steps,
        "labelled_badge": LABELLED_BADGE,
        "window_start": start,
        "window_size": window,
        "windows": windows if len(windows) > 1 else [],
        "agents": [(agent, palette[agent]) for agent in agents],
        "lanes": lanes if by_agent or mark_count > 1 else None,
        "lanes_by_agent": by_agent,
        "panel": panel,
        "set_lo": lo,
        "set_hi": hi,
        "rollback_step": rollback,
        "deviation": deviation,
        "gold_label_elsewhere": (
            gold_label
            if gold_label is not None
            and deviation is not None
            and gold_label.step_index != deviation.decisive_step
            else None
        ),
        "comparable": comparable,
        **why_rows(rollout_wrong_steps(rollout.pk)),
    }


def _correction_context(rollout: Trajectory, labels: list[Any], rollback: Any) -> dict[str, Any]:
    """What the exports app's correction form needs on the rollout page."""
    default_step = labels[0].step_index if labels else rollback
    if rollout.step_count > CORRECTION_FULL_MAX_STEPS:
        # The suggestion from a successful rollout reads every step of this one; on a
        # long rollout the page offers the form and the saved corrections only.
        return {
            "correction_form": True,
            "corrections": rollout_corrections(rollout=rollout),
            "correction_step": default_step,
            "correction_from_success": None,
        }
    return {
        "correction_form": True,
        **correction_context(rollout=rollout, default_step=default_step),
    }


def _align_steps(rollout: Trajectory) -> list[AlignStep]:
    rows = (
        Step.objects.filter(trajectory=rollout, index__lt=COMPARE_STEPS_MAX)
        .order_by("index")
        .values_list("index", "role", "kind", "content", "tool_name", "tool_args", "agent")
    )
    return [AlignStep(*row) for row in rows]


COMPARE_FIELDS = ("id", "external_id", "outcome", "reward", "step_count", "task_id")


def compare_candidates(*, rollout: Trajectory) -> list[Trajectory]:
    """Other rollouts of the same task, successful ones first: the same task id, or, for
    rollouts that carry none (a live trace, a plain chat log), the same task text."""
    if rollout.task_id:
        same_task = Q(task_id=rollout.task_id)
    elif rollout.task_text.strip():
        same_task = Q(task_id="", task_text=rollout.task_text)
    else:
        return []
    successful_first = Case(When(outcome="success", then=Value(0)), default=Value(1))
    return list(
        Trajectory.objects.filter(same_task, project_id=rollout.project_id)
        .exclude(pk=rollout.pk)
        .order_by(successful_first, "id")
        .only(*COMPARE_FIELDS)[:COMPARE_CANDIDATES]
    )


def compare_context(*, rollout: Trajectory, other_id: int | None) -> dict[str, Any]:
    """The comparison with ``other_id`` (any rollout of the project: one of another task
    is compared too, and the page says so), else with the first candidate."""
    candidates = compare_candidates(rollout=rollout)
    other = next((c for c in candidates if c.pk == other_id), None) if other_id else None
    if other is None and other_id:
        other = (
            Trajectory.objects.filter(project_id=rollout.project_id, pk=other_id)
            .exclude(pk=rollout.pk)
            .only(*COMPARE_FIELDS)
            .first()
        )
    asked_missing = bool(other_id) and other is None
    if other is None and candidates:
        other = candidates[0]
    alignment = None
    # Where they part, in words: "step 6 of B (A stops after step 5)".
    difference_at = action_difference_at = ""
    difference_is_action = False
    if other is not None:
        alignment = align(_align_steps(rollout), _align_steps(other))
        names = (rollout.external_id, other.external_id)
        counts = (rollout.step_count, other.step_count)
        first, first_action = alignment.first_difference_row, alignment.first_action_row
        if first is not None:
            difference_at = where(alignment, first, names=names, step_counts=counts)
            difference_is_action = first == first_action
        if first_action is not None:
            action_difference_at = where(alignment, first_action, names=names, step_counts=counts)
    deviations = {
        d.trajectory_id: d
        for d in RolloutDeviation.objects.filter(
            trajectory_id__in=[rollout.pk] + ([other.pk] if other else [])
        )
    }
    return {
        "other": other,
        "other_task_differs": other is not None and other not in candidates,
        "asked_missing": asked_missing,
        "candidates": candidates,
        "alignment": alignment,
        "difference_at": difference_at,
        "action_difference_at": action_difference_at,
        "difference_is_action": difference_is_action,
        "left_deviation": deviations.get(rollout.pk),
        "right_deviation": deviations.get(other.pk) if other else None,
        "truncated": max(rollout.step_count, other.step_count if other else 0) > COMPARE_STEPS_MAX,
        "compare_max": COMPARE_STEPS_MAX,
    }
