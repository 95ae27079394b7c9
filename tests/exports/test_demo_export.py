"""An export of the demo data: every line validates, nothing leaks, the manifest holds."""

from __future__ import annotations

import pytest

from exports.core.filters import KINDS
from exports.core.run import example_problems
from exports.core.schemas import schema_problems
from exports.core.validate import chat_problems, leakage_problems
from exports.core.writer import file_sha256
from ingest.models import Step, Trajectory
from ingest.selectors import step_record

pytestmark = pytest.mark.django_db


def _steps(rollout_id):
    return [step_record(s) for s in Step.objects.filter(trajectory_id=rollout_id).order_by("index")]


def test_it_finishes_with_examples_of_every_recovery_kind(demo_export):
    job = demo_export["job"]
    assert job.status == "done", job.error_message
    assert job.counts["sft"] > 0 and job.counts["preference"] > 0 and job.counts["diagnosis"] > 0
    assert (
        job.progress_done
        == job.progress_total
        == Trajectory.objects.filter(project=demo_export["project"], outcome="failure").count()
    )


def test_every_line_matches_its_schema(demo_export):
    for kind in KINDS:
        for number, line in enumerate(demo_export["lines"][kind], 1):
            assert schema_problems(kind, line) == [], f"{kind}.jsonl line {number}"


def test_every_line_follows_the_chat_rules(demo_export):
    lines = demo_export["lines"]
    for line in lines["sft"] + lines["diagnosis"]:
        assert chat_problems(line["messages"], target_last=True) == []
    for line in lines["preference"]:
        assert chat_problems(line["prompt"] + line["chosen"], target_last=True) == []
        assert chat_problems(line["prompt"] + line["rejected"], target_last=True) == []
    for line in lines["start_states"]:
        assert chat_problems(line["messages"], target_last=False) == []


def test_no_prefix_holds_the_decisive_step_or_anything_after_it(demo_export):
    lines = demo_export["lines"]
    checked = 0
    for kind, prefix_of in (
        ("sft", lambda line: line["messages"][:-1]),
        ("preference", lambda line: line["prompt"]),
        ("start_states", lambda line: line["messages"]),
    ):
        for line in lines[kind]:
            meta = line["metadata"]
            rollout = Trajectory.objects.get(pk=meta["rollout_id"])
            steps = _steps(rollout.pk)
            cut = meta["step"]
            assert leakage_problems(prefix_of(line), steps, cut, task_text=rollout.task_text) == []
            if kind != "start_states":
                label = meta["decisive_step"] if meta["decisive_step_source"] == "label" else None
                assert label is None or cut <= label
            # The trained turn is never a copy of a message the prefix already holds.
            assert all(
                m.get("content") != steps[cut].content or not steps[cut].content
                for m in prefix_of(line)[-1:]
            )
            checked += 1
    assert checked > 0


def test_the_diagnosis_input_carries_no_label(demo_export):
    for line in demo_export["lines"]["diagnosis"]:
        assert set(line["input"]) == {"task", "environment", "window", "steps"}
        assert all("label" not in key for step in line["input"]["steps"] for key in step)


def test_the_manifest_names_every_file_with_its_sha256(demo_export):
    job, folder = demo_export["job"], demo_export["folder"]
    manifest = job.manifest
    assert schema_problems("manifest", manifest) == []
    assert [entry["name"] for entry in manifest["files"]] == [f"{kind}.jsonl" for kind in KINDS]
    for entry in manifest["files"]:
        assert entry["sha256"] == file_sha256(folder / entry["name"])
        assert entry["lines"] == len(demo_export["lines"][entry["kind"]])
    assert (folder / "manifest.json").exists()


def test_it_takes_corrections_from_successful_tau_bench_rollouts(demo_export):
    sources = {line["metadata"]["correction"]["source"] for line in demo_export["lines"]["sft"]}
    assert sources == {"human", "successful_rollout"}
    machine = [
        line
        for line in demo_export["lines"]["sft"]
        if line["metadata"]["correction"]["source"] == "successful_rollout"
    ]
    assert all(line["metadata"]["environment"] == "airline" for line in machine)
    assert all(line["messages"][-1].get("tool_calls") for line in machine)


def test_human_corrections_name_their_author(demo_export):
    human = [
        line
        for line in demo_export["lines"]["sft"]
        if line["metadata"]["correction"]["source"] == "human"
    ]
    assert len(human) == demo_export["corrected"]
    assert {line["metadata"]["correction"]["author"] for line in human} == {"demo-exporter"}


def test_example_problems_agree_with_what_was_written(demo_export):
    # The checks the exporter ran before writing hold for what a reader loads back.
    from exports.core.filters import parse_filters
    from exports.selectors import ItemOptions, export_items, export_rollouts

    project = demo_export["project"]
    items = export_items(
        project=project,
        rollouts=export_rollouts(project=project, filters=parse_filters({})),
        options=ItemOptions(),
    )
    by_id = {item.rollout_id: item for item in items}
    for line in demo_export["lines"]["sft"]:
        assert example_problems("sft", line, by_id[line["metadata"]["rollout_id"]]) == []


def test_running_the_job_again_changes_nothing(demo_export):
    from exports.services import export_run

    job, folder = demo_export["job"], demo_export["folder"]
    before = {p.name: file_sha256(p) for p in folder.iterdir()}
    again = export_run(job_id=job.pk)
    assert again.finished_at == job.finished_at and again.manifest == job.manifest
    assert {p.name: file_sha256(p) for p in folder.iterdir()} == before


def _analysis_ran(demo_export) -> bool:
    return demo_export["job"].manifest["clustering_run"] is not None


def test_it_exports_start_states_before_each_misbehaviour(demo_export):
    if not _analysis_ran(demo_export):
        pytest.skip("the analysis app has not clustered anything")
    states = demo_export["lines"]["start_states"]
    assert states
    firsts = {(s["metadata"]["rollout_id"], s["avoid"]["misbehaviour"]["id"]) for s in states}
    assert len(firsts) == len(states)  # one per misbehaviour and rollout: where it first shows
    assert all(s["metadata"]["step"] <= s["avoid"]["step"] for s in states)
    checks = {s["success_check"]["kind"] for s in states if s["success_check"]}
    assert checks == {"tau_bench_actions", "expected_answer"}


def test_the_manifest_names_what_it_read(demo_export):
    manifest = demo_export["job"].manifest
    if manifest["calibration"] is not None:
        assert manifest["alpha"] == manifest["calibration"]["alpha"]
        assert manifest["scorer"]["version"]
    if _analysis_ran(demo_export):
        assert manifest["clustering_run"]["id"]


def test_it_recalibrates_the_sets_at_another_alpha(demo_export):
    from exports.sources import ProjectSources

    project = demo_export["project"]
    stored = ProjectSources(project, None)
    if stored.calibration is None:
        pytest.skip("the attribution app has not calibrated anything")
    ids = list(
        Trajectory.objects.filter(project=project, outcome="failure").values_list("id", flat=True)
    )
    looser = ProjectSources(project, 0.4)
    assert looser.alpha == 0.4 and looser.recalibrated is not None
    # The same calibrating labels as the stored calibration, now counted per agent system.
    assert sum(looser.recalibrated.labels_by_system.values()) == stored.calibration.m

    def mean_size(sources):
        sets = [d for d in sources.attributions(ids).values() if d.lo is not None]
        return sum(d.hi - d.lo + 1 for d in sets) / max(len(sets), 1)

    assert mean_size(looser) <= mean_size(stored)
    assert all(d.rollback_step == d.lo for d in looser.attributions(ids).values())


def test_it_keeps_only_the_chosen_misbehaviours(demo_export):
    import json

    from exports.core.filters import parse_filters
    from exports.selectors import export_rollouts
    from exports.services import export_create, export_folder, export_run

    if not _analysis_ran(demo_export):
        pytest.skip("the analysis app has not clustered anything")
    project, states = demo_export["project"], demo_export["lines"]["start_states"]
    chosen = states[0]["avoid"]["misbehaviour"]["id"]
    filters = parse_filters({"misbehaviours": str(chosen)})
    selected = set(export_rollouts(project=project, filters=filters).values_list("id", flat=True))
    with_it = {
        s["metadata"]["rollout_id"] for s in states if s["avoid"]["misbehaviour"]["id"] == chosen
    }
    assert with_it and with_it <= selected
    job = export_run(
        job_id=export_create(
            project=project, kinds=("start_states",), filters=filters, dispatch=False
        ).pk
    )
    lines = (export_folder(job) / "start_states.jsonl").read_text().splitlines()
    assert {json.loads(line)["avoid"]["misbehaviour"]["id"] for line in lines} == {chosen}
    assert job.manifest["filters"]["misbehaviours"] == [chosen]
