"""Which failed rollouts an export covers, and what it reads about each."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from django.utils import timezone

from exports.core.filters import parse_filters
from exports.selectors import ItemOptions, export_items, export_rollouts

pytestmark = pytest.mark.django_db


def _ids(project, **params):
    rollouts = export_rollouts(project=project, filters=parse_filters(params))
    return sorted(rollouts.values_list("external_id", flat=True))


def test_it_covers_only_failed_rollouts(small_project):
    assert _ids(small_project) == ["a1", "a2", "r1", "r2"]


def test_it_filters_by_environment_and_model(small_project):
    assert _ids(small_project, environment="retail") == ["r1", "r2"]
    assert _ids(small_project, policy_model="gpt-4o-mini") == ["a2"]


def test_it_keeps_only_human_verified_labels_when_asked(small_project):
    assert _ids(small_project, human_only="1") == ["a2"]


def test_it_filters_by_ingestion_date(small_project):
    today = timezone.localdate()
    assert _ids(small_project, date_from=today.isoformat(), date_to=today.isoformat()) == [
        "a1",
        "a2",
        "r1",
        "r2",
    ]
    assert _ids(small_project, date_from=(today + timedelta(days=1)).isoformat()) == []
    assert _ids(small_project, date_to=date(2000, 1, 1).isoformat()) == []


def test_it_reads_labels_and_the_successful_rollouts_correction(small_project):
    rollouts = export_rollouts(project=small_project, filters=parse_filters({}))
    items = {
        i.record.external_id: i
        for i in export_items(project=small_project, rollouts=rollouts, options=ItemOptions())
    }
    a1 = items["a1"]
    assert (a1.decisive.label_step, a1.decisive.label_source) == (3, "dataset")
    assert [c.source for c in a1.corrections] == ["successful_rollout"]
    assert a1.corrections[0].tool_calls[0].arguments == {"id": "GOOD"}
    assert items["r1"].corrections == []  # no successful rollout of task t2
    assert items["r2"].decisive.label_step is None


def test_it_reads_in_batches_without_losing_rollouts(small_project, monkeypatch):
    from exports import selectors

    monkeypatch.setattr(selectors, "BATCH", 1)
    rollouts = export_rollouts(project=small_project, filters=parse_filters({}))
    items = list(export_items(project=small_project, rollouts=rollouts, options=ItemOptions()))
    assert [i.record.external_id for i in items] == ["a1", "a2", "r1", "r2"]


def test_a_shared_call_that_failed_in_both_trials_still_gives_a_correction(project):
    """The successful trials were read without their results, so a lookup that timed out
    in both looked failed in one only, and the failed trial got no correction."""
    from tests.exports.conftest import ingest_rollouts

    def trial(rollout_id, outcome, action):
        def tool(name, content="", error=False, **call):
            return {
                "role": "tool",
                "kind": "tool_result",
                "tool_name": name,
                "content": content,
                "is_error": error,
                "tool_call_id": call.get("id", ""),
            }

        steps = [
            {"role": "user", "content": "Sort out my order 7, please."},
            {
                "role": "assistant",
                "kind": "tool_call",
                "tool_name": "get_order",
                "tool_args": {"id": 7},
                "tool_call_id": "c1",
            },
            tool("get_order", "Error: service timeout", error=True, id="c1"),
            {
                "role": "assistant",
                "kind": "tool_call",
                "tool_name": action,
                "tool_args": {"id": 7},
                "tool_call_id": "c2",
            },
            tool(action, "done", id="c2"),
        ]
        return {
            "format": "faultline.trajectory.v1",
            "id": rollout_id,
            "task_id": "t9",
            "outcome": outcome,
            "steps": steps,
        }

    ingest_rollouts(
        project, [trial("err-1", "failure", "cancel_order"), trial("err-2", "success", "refund")]
    )
    rollouts = export_rollouts(project=project, filters=parse_filters({}))
    [item] = export_items(project=project, rollouts=rollouts, options=ItemOptions())
    [correction] = item.corrections
    assert (correction.step, correction.source_rollout) == (3, "err-2")
    assert correction.tool_calls[0].name == "refund"
