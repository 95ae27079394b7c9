"""The calibration page's list of agent systems costs one row per system, not per rollout."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from attribution.system_selectors import project_systems
from ingest.models import Trajectory
from tests.attribution.conftest import make_rollout

pytestmark = pytest.mark.django_db


def test_it_reads_one_row_per_agent_system(project):
    for _ in range(4):
        make_rollout(project, label=False)
    Trajectory.objects.filter(project=project).update(agent_system="planner")
    with CaptureQueriesContext(connection) as queries:
        assert project_systems(project) == ["planner"]
    (query,) = queries.captured_queries
    assert '"id"' not in query["sql"].split("FROM")[0]
