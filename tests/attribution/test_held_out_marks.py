"""The calibration page marks a per-system or per-environment held-out coverage that is
below the promise beyond binomial noise, by the coverage monitor's rule, and never a row
with too few labels to judge (a row read 0.811 against 0.90 with no mark)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from attribution.models import Calibration
from attribution.services import project_attribution_refresh
from attribution.system_selectors import (
    BELOW_PROMISE,
    TOO_FEW_TO_JUDGE,
    held_out_verdict,
    system_calibration_rows,
)
from tests.attribution.conftest import make_rollout, make_upload, with_system

pytestmark = pytest.mark.django_db


def test_it_marks_coverage_below_the_promise_beyond_noise():
    assert held_out_verdict(0.75, 40, 0.9)["verdict"] == BELOW_PROMISE


def test_it_does_not_mark_a_shortfall_within_noise():
    assert held_out_verdict(0.85, 20, 0.9)["verdict"] == ""
    assert held_out_verdict(0.95, 40, 0.9)["verdict"] == ""


def test_it_never_marks_a_row_with_too_few_labels_to_judge():
    # One label: even a miss is within noise of a 90% promise (p = 0.1).
    assert held_out_verdict(0.0, 1, 0.9)["verdict"] == TOO_FEW_TO_JUDGE


def _calibrated(project):
    upload = make_upload(project)
    for i in range(30):
        rollout = make_rollout(project, upload=upload, length=5 + i % 8, bad_step=1 + i % 3)
        with_system(rollout, "crew")
    project_attribution_refresh(project_id=project.pk)
    calibration = Calibration.objects.get(project=project)
    system = calibration.diagnostics["systems"]["crew"]
    # Three environments: one short of the promise beyond noise, one of a single label,
    # one that keeps it.
    system["environments"] = {"airline": 40, "retail": 1, "shop": 20}
    for row in system["curve"]:
        row["by_group"] = {
            "airline": {"coverage": 0.75, "tested": 1000},
            "retail": {"coverage": 0.0, "tested": 25},
            "shop": {"coverage": 0.95, "tested": 500},
        }
    calibration.save(update_fields=["diagnostics"])
    return calibration


def test_the_rows_carry_the_verdict(project):
    [row] = system_calibration_rows(_calibrated(project))
    verdicts = {env["environment"]: env["verdict"] for env in row["environments"]}
    assert verdicts == {"airline": BELOW_PROMISE, "retail": TOO_FEW_TO_JUDGE, "shop": ""}


def test_the_page_marks_the_rows_and_explains_the_mark(client, project, member):
    _calibrated(project)
    client.force_login(member)
    body = client.get(reverse("attribution:calibration", args=[project.slug])).content.decode()
    table = body.split('id="system-calibration"', 1)[1].split("</section>", 1)[0]
    rows = {
        name: next(tr for tr in table.split("<tr") if f"&nbsp;&nbsp;{name}<" in tr)
        for name in ("airline", "retail", "shop")
    }
    assert "data-below-promise" in rows["airline"]
    assert "data-too-few-to-judge" in rows["retail"] and "data-below-promise" not in rows["retail"]
    assert "data-below-promise" not in rows["shop"] and "data-too-few" not in rows["shop"]
    assert 'id="held-out-marks"' in table
