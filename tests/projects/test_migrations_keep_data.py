"""Moving the models to the projects, exports and pipeline apps keeps existing databases:
a database at the schema before the move, with rows in it, migrates to the current one
and holds the same projects, members, tokens, rollouts, labels and export jobs."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# The newest migration of each app before the move (projects, exports and pipeline did
# not exist yet).
BEFORE_THE_MOVE = [
    ("dashboard", "0005_exportjob_attempt"),
    ("ingest", "0002_trigram_search"),
    ("attribution", "0001_initial"),
    ("analysis", "0002_mast_categories"),
    ("projects", None),
    ("exports", None),
    ("pipeline", None),
]
TOKEN_HASH = "ab" * 32


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def _old_rows(apps) -> dict[str, int]:
    """Rows written with the models as they were before the move."""
    user = apps.get_model("auth", "User").objects.create(username="ana")
    project = apps.get_model("dashboard", "Project").objects.create(
        name="Old", slug="old", api_token_hash=TOKEN_HASH, api_token_prefix="flt_abcdef"
    )
    apps.get_model("dashboard", "Membership").objects.create(
        project=project, user=user, role="owner"
    )
    upload = apps.get_model("ingest", "Upload").objects.create(
        project=project, original_name="a.jsonl", raw_file="uploads/a", sha256="0" * 64, size=3
    )
    rollout = apps.get_model("ingest", "Trajectory").objects.create(
        project=project, upload=upload, external_id="r1", outcome="failure", step_count=2
    )
    apps.get_model("ingest", "Step").objects.create(trajectory=rollout, index=0, content="hi")
    apps.get_model("ingest", "Label").objects.create(
        trajectory=rollout, step_index=1, source="human", author=user
    )
    job = apps.get_model("dashboard", "ExportJob").objects.create(
        project=project, created_by=user, kinds=["sft"], status="done"
    )
    apps.get_model("dashboard", "Correction").objects.create(
        trajectory=rollout, step_index=1, content="ask first", author=user
    )
    apps.get_model("dashboard", "ProjectOverview").objects.create(project=project, data={"n": 1})
    return {"project": project.pk, "user": user.pk, "rollout": rollout.pk, "job": job.pk}


@pytest.mark.django_db(transaction=True)
def test_it_keeps_every_row_through_the_move():
    latest = _latest()
    executor = _migrate(BEFORE_THE_MOVE)
    old_nodes = [node for node in BEFORE_THE_MOVE if node[1] is not None]
    ids = _old_rows(executor.loader.project_state(old_nodes).apps)
    try:
        _migrate(latest)
    finally:
        # Leave the test database at the current schema whatever happened.
        _migrate(_latest())

    from exports.models import Correction, ExportJob
    from ingest.models import Label, Step, Trajectory, Upload
    from pipeline.models import ProjectOverview
    from projects.models import ApiToken, Membership, Project

    project = Project.objects.get(pk=ids["project"])
    assert (project.name, project.slug) == ("Old", "old")
    assert project.miscoverage == pytest.approx(0.1)
    assert Membership.objects.get(project=project).user_id == ids["user"]
    assert list(project.members.values_list("username", flat=True)) == ["ana"]
    assert Upload.objects.get(project=project).original_name == "a.jsonl"
    rollout = Trajectory.objects.get(pk=ids["rollout"])
    assert rollout.project == project and rollout.step_count == 2
    assert Step.objects.get(trajectory=rollout).content == "hi"
    assert Label.objects.get(trajectory=rollout).step_index == 1
    job = ExportJob.objects.get(pk=ids["job"])
    assert job.project == project and job.kinds == ["sft"] and job.status == "done"
    assert Correction.objects.get(trajectory=rollout).content == "ask first"
    assert ProjectOverview.objects.get(project=project).data == {"n": 1}
    # Foreign keys across the moved models still resolve in both directions.
    assert project.trajectories.count() == 1 and project.export_jobs.count() == 1
    # The single token of old is the project's first named token, and it still works.
    token = ApiToken.objects.get(project=project)
    assert (token.token_hash, token.prefix, token.is_active) == (TOKEN_HASH, "flt_abcdef", True)


@pytest.mark.django_db(transaction=True)
def test_the_moved_models_keep_their_tables():
    from attribution.models import ActionAnalysis, RolloutDeviation
    from exports.models import Correction, ExportJob
    from pipeline.models import ProjectOverview
    from projects.models import Membership, Project

    tables = {model._meta.db_table for model in (
        Project, Membership, ExportJob, Correction, ProjectOverview, ActionAnalysis,
        RolloutDeviation,
    )}  # fmt: skip
    assert tables <= set(connection.introspection.table_names())
    assert all(table.startswith("dashboard_") for table in tables)
