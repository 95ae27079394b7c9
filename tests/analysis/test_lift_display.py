"""How the misbehaviour pages show a lift: a small-sample mark by the tools table's rule,
copy on rollout lengths that says what is true of the project, and the true reason a
length-adjusted lift is missing."""

from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.core.lift import FEW_ROLLOUTS
from analysis.models import Misbehaviour
from analysis.selectors import (
    MSG_ADJUSTED_GAPS,
    MSG_FAILED_LONGER,
    MSG_FAILED_SHORTER,
    adjusted_lift_gap,
    rollout_length_contrast,
)
from tests.attribution.conftest import make_rollout, make_upload

pytestmark = pytest.mark.django_db


def _misbehaviour(project, key="k", *, successes=(), failures=(), adjusted=16.2):
    return Misbehaviour.objects.create(
        project=project,
        key=key,
        name=f"Misbehaviour {key}",
        is_active=True,
        share=0.1,
        size=4,
        lift_unadjusted=3.0,
        lift_adjusted=adjusted,
        success_rollouts=[str(pk) for pk in successes],
        failure_rollouts=[str(pk) for pk in failures],
    )


def _get(client, member, name, *args) -> str:
    client.force_login(member)
    return client.get(reverse(name, args=args)).content.decode()


def test_a_lift_from_few_rollouts_is_marked_on_the_list_and_its_page(client, member, project):
    few = _misbehaviour(project, "few", successes=[1], failures=[2, 3])
    _misbehaviour(project, "many", successes=range(10, 14), failures=range(20, 30))
    listed = _get(client, member, "analysis:misbehaviour_list", project.slug)
    rows = listed.split('id="misbehaviour-table"', 1)[1].split("<tr>")
    [few_row] = [row for row in rows if "Misbehaviour few" in row]
    [many_row] = [row for row in rows if "Misbehaviour many" in row]
    assert few_row.count("data-few-rollouts") == 2  # crude and adjusted
    assert f"from fewer than {FEW_ROLLOUTS} rollouts with an outcome containing it (3)" in few_row
    assert "data-few-rollouts" not in many_row
    detail = _get(client, member, "analysis:misbehaviour_detail", project.slug, few.pk)
    assert 'id="few-rollouts"' in detail and "data-few-rollouts" in detail


def _rollouts(project, outcome, lengths):
    upload = make_upload(project)
    return [make_rollout(project, upload=upload, outcome=outcome, length=n) for n in lengths]


def test_the_length_copy_says_failures_are_shorter_when_they_are(client, member, project):
    # The trial: failures of 13-30 steps, successes of 27-36.
    _rollouts(project, "failure", [13, 18, 22, 30])
    _rollouts(project, "success", [27, 31, 36])
    contrast = rollout_length_contrast(project)
    assert contrast["relation"] == "shorter"
    expected = MSG_FAILED_SHORTER.format(failed="20", succeeded="31")
    assert contrast["sentence"] == expected
    _misbehaviour(project)
    listed = _get(client, member, "analysis:misbehaviour_list", project.slug)
    assert expected in listed and "Failed rollouts are longer" not in listed
    assert "merely comes with short rollouts" in listed


def test_the_length_copy_says_failures_are_longer_when_they_are(project):
    _rollouts(project, "failure", [20, 30])
    _rollouts(project, "success", [5])
    contrast = rollout_length_contrast(project)
    assert contrast["sentence"] == MSG_FAILED_LONGER.format(failed="25", succeeded="5")


def test_the_length_copy_makes_no_claim_without_both_outcomes(client, member, project):
    _rollouts(project, "failure", [20, 30])
    assert rollout_length_contrast(project)["sentence"] == ""
    _misbehaviour(project)
    listed = _get(client, member, "analysis:misbehaviour_list", project.slug)
    assert "rollouts are longer" not in listed and "rollouts are shorter" not in listed


def _two_lengths(project, *, long_outcomes):
    """Four rollouts of 5 steps (two failed, two succeeded) and four of 20 steps."""
    short = _rollouts(project, "failure", [5, 5]) + _rollouts(project, "success", [5, 5])
    long = [_rollouts(project, outcome, [20])[0] for outcome in long_outcomes]
    return short, long


def _gap_of(project, long, **fields) -> str:
    failed = [t.pk for t in long if t.outcome == "failure"]
    succeeded = [t.pk for t in long if t.outcome == "success"]
    misbehaviour = _misbehaviour(
        project, successes=fields.get("successes", succeeded), failures=failed, adjusted=None
    )
    return adjusted_lift_gap(project, misbehaviour)


def test_a_missing_adjusted_lift_says_every_rollout_of_its_lengths_contains_it(
    client, member, project
):
    # Successes of its length exist, but every rollout of that length contains it.
    _, long = _two_lengths(project, long_outcomes=["failure", "failure", "success", "success"])
    assert _gap_of(project, long) == MSG_ADJUSTED_GAPS["all_show"]
    misbehaviour = Misbehaviour.objects.get(project=project)
    detail = _get(client, member, "analysis:misbehaviour_detail", project.slug, misbehaviour.pk)
    assert MSG_ADJUSTED_GAPS["all_show"] in detail
    assert "no success among rollouts of the lengths it occurs at" not in detail


def test_a_missing_adjusted_lift_says_no_rollout_of_its_lengths_succeeded(project):
    _, long = _two_lengths(project, long_outcomes=["failure"] * 4)
    # Two of the four long failures contain it, none of the short rollouts.
    assert _gap_of(project, long[:2]) == MSG_ADJUSTED_GAPS["no_success"]


def test_an_adjusted_lift_that_is_there_needs_no_reason(project):
    _, long = _two_lengths(project, long_outcomes=["failure", "success"])
    misbehaviour = _misbehaviour(project, failures=[long[0].pk])
    assert adjusted_lift_gap(project, misbehaviour) == ""


def test_an_adjusted_lift_resting_on_few_rollouts_is_marked_though_the_crude_is_not(
    client, member, project
):
    from analysis.core.lift import RolloutOutcome, failure_lift

    # An unseen SQL agent's trial: every failure showing it is longer than any success,
    # so the adjusted lift compares only the three short successes that contain it.
    rollouts = [RolloutOutcome(f"f{i}", failed=True, length=30 + i) for i in range(12)]
    rollouts += [RolloutOutcome(f"s{i}", failed=False, length=10 + i % 3) for i in range(12)]
    rollouts += [RolloutOutcome(f"g{i}", failed=True, length=10 + i % 3) for i in range(3)]
    shown = {f"f{i}" for i in range(12)} | {"s0", "s1", "s2"}
    estimate = failure_lift(rollouts, shown)
    assert estimate.unadjusted > 1.5 and estimate.adjusted == 0.0
    assert (estimate.rollouts, estimate.adjusted_rollouts) == (15, 3)
    misbehaviour = _misbehaviour(
        project, successes=range(1, 4), failures=range(10, 22), adjusted=0.0
    )
    misbehaviour.lift_adjusted_rollouts = estimate.adjusted_rollouts
    misbehaviour.save()
    listed = _get(client, member, "analysis:misbehaviour_list", project.slug)
    row = listed.split('id="misbehaviour-table"', 1)[1].split("Misbehaviour k", 1)[1]
    row = row.split("</tr>", 1)[0]
    assert row.count("data-few-rollouts") == 1  # the adjusted lift only
    assert "the length-adjusted lift compares only 3 rollouts containing it" in row
    detail = _get(client, member, "analysis:misbehaviour_detail", project.slug, misbehaviour.pk)
    assert "† The length-adjusted lift compares only 3 rollouts containing it" in detail


def test_the_stored_reasons_of_missing_lifts_are_said_without_reading_rollouts(
    client, member, project, django_assert_max_num_queries
):
    from analysis.selectors import MSG_CRUDE_GAPS

    everywhere = _misbehaviour(project, "all", successes=range(1, 9), failures=range(10, 20))
    everywhere.lift_unadjusted = everywhere.lift_adjusted = None
    everywhere.lift_gap = "all_show"
    everywhere.save()
    _rollouts(project, "success", [5])
    detail = _get(client, member, "analysis:misbehaviour_detail", project.slug, everywhere.pk)
    assert MSG_CRUDE_GAPS["all_show"] in detail
    assert "none of the rollouts the lift samples contains it" not in detail
    adjusted_only = _misbehaviour(project, "adj", adjusted=None)
    adjusted_only.lift_gap = "no_success"
    adjusted_only.save()
    with django_assert_max_num_queries(0):
        assert adjusted_lift_gap(project, adjusted_only) == MSG_ADJUSTED_GAPS["no_success"]
