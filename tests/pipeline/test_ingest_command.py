"""``manage.py ingest`` on a native file with a bad field: the error names the file, the
line and the field, the command fails (exit status 1) and nothing is stored."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from ingest.core.validate import MSG_NOT_LIST
from ingest.models import Trajectory, Upload

pytestmark = pytest.mark.django_db

GOOD = {"id": "r1", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}


def test_it_fails_naming_the_line_and_field(project, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps({"id": "x", "steps": "nope"}) + "\n" + json.dumps(GOOD) + "\n")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "ingest", str(path), "--project", project.slug, "--sync", stdout=out, stderr=err
        )
    assert caught.value.returncode == 1  # what manage.py exits with
    assert f"FAILED runs.jsonl, line 1, field steps: {MSG_NOT_LIST}" in err.getvalue()
    assert Upload.objects.get().status == "failed"
    assert Trajectory.objects.count() == 0


def test_it_counts_what_it_stored_into_the_overview_cards(project, tmp_path):
    from ingest.selectors import project_counts
    from pipeline.overview_cards import overview_cards_state

    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(dict(GOOD, id="r2", outcome="success")))
    out = io.StringIO()
    call_command(
        "ingest", str(path), "--project", project.slug, "--sync", "--no-refresh", stdout=out
    )
    cards = overview_cards_state(project=project)
    assert cards.counts == project_counts(project=project) and cards.counts["rollouts"] == 2
    assert cards.lag_message == ""  # no refresh is coming: nothing may say "being analysed"


def test_files_of_a_folder_are_named_by_their_path_in_it(project, tmp_path):
    """Runs of one tool often share a file name: the output tells them apart. Files of no
    trace format in the folder are skipped and listed; a broken trace still fails."""
    for run in ("run-a", "run-b"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "rollouts.jsonl").write_text(json.dumps(dict(GOOD, id=run)) + "\n")
    (tmp_path / "run-b" / "broken.jsonl").write_text(json.dumps(dict(GOOD, steps="nope")) + "\n")
    (tmp_path / "README.md").write_text("# Runs of 3 December\n")
    (tmp_path / ".hidden").write_text("{}")
    top = tmp_path.name
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "ingest",
            str(tmp_path),
            "--project",
            project.slug,
            "--sync",
            "--no-refresh",
            stdout=out,
            stderr=err,
        )
    assert f"{top}/run-a/rollouts.jsonl: 1 trajectories" in out.getvalue()
    assert f"{top}/run-b/rollouts.jsonl: 1 trajectories" in out.getvalue()
    assert f"FAILED {top}/run-b/broken.jsonl: broken.jsonl, line 1, field steps" in err.getvalue()
    assert f"Skipped 1 file(s) of no known trace format: {top}/README.md." in out.getvalue()
    assert Trajectory.objects.count() == 2
    assert Upload.objects.count() == 3  # nothing stored for the README


def test_a_folders_archives_are_sent_and_a_damaged_one_fails_the_run(project, tmp_path):
    """An archive is sent whatever its bytes look like: a damaged .gz and a zip with a bad
    member were listed as "of no known trace format" and the run exited 0. A file that
    starts with a byte-order mark is a trace like the same file without it."""
    import gzip
    import zipfile

    line = (json.dumps(GOOD) + "\n").encode()
    (tmp_path / "trunc.jsonl.gz").write_bytes(gzip.compress(line * 50)[:40])
    with zipfile.ZipFile(tmp_path / "good.zip", "w") as archive:
        archive.writestr("good.jsonl", json.dumps(dict(GOOD, id="zipped")) + "\n")
        archive.writestr("README.md", "# notes\n")
    (tmp_path / "bom.jsonl").write_bytes(
        b"\xef\xbb\xbf" + json.dumps(dict(GOOD, id="bom")).encode()
    )
    top = tmp_path.name
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(
            "ingest",
            str(tmp_path),
            "--project",
            project.slug,
            "--sync",
            "--no-refresh",
            stdout=out,
            stderr=err,
        )
    assert caught.value.returncode == 1
    assert f"FAILED {top}/trunc.jsonl.gz:" in err.getvalue()
    assert "damaged or truncated" in err.getvalue()
    assert "Skipped" not in out.getvalue()
    assert sorted(Trajectory.objects.values_list("external_id", flat=True)) == ["bom", "zipped"]


def test_a_file_named_on_the_command_line_is_sent_whatever_it_is(project, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a trace")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "ingest",
            str(path),
            "--project",
            project.slug,
            "--sync",
            stdout=io.StringIO(),
            stderr=err,
        )
    assert "FAILED notes.txt: Unknown trace format" in err.getvalue()


def test_it_sums_up_the_analysis_and_says_where_to_look(project, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(dict(GOOD, id="r2", outcome="success")))
    out = io.StringIO()
    call_command("ingest", str(path), "--project", project.slug, "--sync", stdout=out)
    assert (
        f"Project '{project.slug}': 2 rollouts, 1 failed, 1 succeeded, 0 labelled "
        f"(0 by a rule only); 0 misbehaviours. See /p/{project.slug}/ in the dashboard."
    ) in out.getvalue()


def test_a_failed_analysis_fails_the_command_and_keeps_the_rollouts(project, tmp_path, monkeypatch):
    """With --sync the user waits for the analysis: a failure there is not a success."""
    import pipeline.refresh

    def broken(*, project_id):
        raise RuntimeError("disk full")

    monkeypatch.setattr(pipeline.refresh, "project_action_analysis_refresh", broken)
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    with pytest.raises(CommandError) as caught:
        call_command("ingest", str(path), "--project", project.slug, "--sync", stdout=io.StringIO())
    assert "The rollouts are stored, but their analysis failed" in str(caught.value)
    assert "disk full" in str(caught.value)
    assert Trajectory.objects.count() == 1


def test_a_second_run_over_the_same_files_says_it_stored_nothing_new(project, tmp_path):
    # It printed "Stored 2 trajectories ... from 2 of 2 file(s)" though nothing was new.
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(GOOD) + "\n")
    second.write_text(json.dumps(dict(GOOD, id="r2")) + "\n")
    args = (str(first), str(second), "--project", project.slug, "--sync", "--no-refresh")
    out = io.StringIO()
    call_command("ingest", *args, stdout=out)
    assert "Stored 2 trajectories, 2 steps, 0 labels" in out.getvalue()
    assert "from 2 of 2 file(s)." in out.getvalue()
    third = tmp_path / "c.jsonl"
    third.write_text(json.dumps(dict(GOOD, id="r3")) + "\n")
    again = io.StringIO()
    call_command("ingest", *args[:2], str(third), *args[2:], stdout=again)
    said = again.getvalue()
    assert "a.jsonl: already uploaded as upload" in said
    assert "Stored 1 trajectory, 1 step, 0 labels" in said
    assert "from 1 of 3 file(s); 2 already uploaded before, stored nothing new." in said
    assert Trajectory.objects.filter(project=project).count() == 3


def test_agent_system_names_the_system_of_every_rollout_of_the_files(project, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(dict(GOOD, agent_system="from-the-file")) + "\n")
    call_command(
        "ingest", str(path), "--project", project.slug, "--sync", "--no-refresh",
        "--agent-system", "checkout-coder", stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    assert list(Trajectory.objects.values_list("agent_system", flat=True)) == ["checkout-coder"]


def test_an_agent_system_too_long_fails_before_anything_is_stored(project, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    with pytest.raises(CommandError) as caught:
        call_command(
            "ingest", str(path), "--project", project.slug, "--sync",
            "--agent-system", "x" * 101, stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    assert "The agent system must be at most 100 characters" in str(caught.value)
    assert not Upload.objects.exists()
