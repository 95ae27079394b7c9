from __future__ import annotations

import json

from exports.core.builders import SKIP_NO_CORRECTION
from exports.core.filters import KINDS
from exports.core.inputs import (
    CorrectedTurn,
    Decisive,
    ExportRollout,
    Occurrence,
    ToolCall,
)
from exports.core.manifest import build_manifest
from exports.core.run import write_exports
from exports.core.schemas import schema_problems, write_schemas
from exports.core.writer import file_sha256
from tests.exports.core.factories import EXECUTOR_PROMPT, VERIFIER_PROMPT, airline, multi_agent


def items():
    fix = CorrectedTurn(step=5, tool_calls=(ToolCall("cancel", {"id": "GOOD"}),), author="ana")
    decisive = Decisive(lo=4, hi=5, point_step=5, rollback_step=4, alpha=0.1)
    with_fix = ExportRollout(1, airline("a"), decisive, [Occurrence(5, 3, "wrong trip")], [fix])
    without = ExportRollout(2, airline("b"), decisive, [Occurrence(5, 3, "wrong trip")])
    return [with_fix, without]


def test_it_writes_every_kind_and_counts_skips(tmp_path):
    seen = []
    result = write_exports(items(), kinds=KINDS, folder=tmp_path, on_rollout=seen.append)
    assert result.counts == {"sft": 1, "preference": 1, "diagnosis": 2, "start_states": 2}
    assert result.skipped["sft"] == {SKIP_NO_CORRECTION: 1}
    assert seen == [1, 2] and result.rollouts == 2


def test_it_writes_lines_that_match_the_schemas(tmp_path):
    write_exports(items(), kinds=KINDS, folder=tmp_path)
    for kind in KINDS:
        for line in (tmp_path / f"{kind}.jsonl").read_text().splitlines():
            assert schema_problems(kind, json.loads(line)) == []


def test_it_builds_a_manifest_that_matches_its_schema_and_files(tmp_path):
    result = write_exports(items(), kinds=KINDS, folder=tmp_path)
    manifest = build_manifest(
        job_id=1,
        project={"id": 1, "slug": "acme"},
        kinds=KINDS,
        filters={
            "environment": "",
            "policy_model": "",
            "misbehaviours": [],
            "alpha": None,
            "human_only": False,
            "date_from": None,
            "date_to": None,
            "diagnosis_window": 0,
            "observation_chars": 0,
        },
        alpha=0.1,
        provenance={},
        counts=result.counts,
        skipped=result.skipped,
        files=result.files,
        rollouts=result.rollouts,
        schemas=write_schemas(KINDS, tmp_path),
        created_at="2026-01-01T00:00:00+00:00",
    )
    assert schema_problems("manifest", manifest) == []
    for entry in manifest["files"] + manifest["schemas"]:
        assert entry["sha256"] == file_sha256(tmp_path / entry["name"])
    for entry in manifest["files"]:
        lines = (tmp_path / entry["name"]).read_bytes().splitlines(keepends=True)
        assert entry["largest_line_bytes"] == max(map(len, lines))


def test_it_writes_valid_lines_for_a_multi_agent_rollout(tmp_path):
    fix = CorrectedTurn(step=7, tool_calls=(ToolCall("book_flight", {"flight": "DL7"}),))
    item = ExportRollout(
        1,
        multi_agent(),
        Decisive(label_step=7, label_agent="executor"),
        [Occurrence(10, 4, "waves it through")],
        [fix],
    )
    result = write_exports([item], kinds=KINDS, folder=tmp_path)
    assert result.counts == {"sft": 1, "preference": 1, "diagnosis": 1, "start_states": 1}
    lines = {kind: json.loads((tmp_path / f"{kind}.jsonl").read_text()) for kind in KINDS}
    for kind, line in lines.items():
        assert schema_problems(kind, line) == []
    assert lines["sft"]["messages"][0]["content"] == EXECUTOR_PROMPT
    assert lines["preference"]["prompt"][0]["content"] == EXECUTOR_PROMPT
    assert lines["start_states"]["messages"][0]["content"] == VERIFIER_PROMPT


def test_every_label_source_is_one_the_schemas_allow(tmp_path):
    # The sources have one home (LabelSource.ALL); the schemas are JSON files beside the
    # docs, so this holds them to it: gold-action labels made every line fail its schema.
    from exports.core.schemas import load_schema
    from ingest.core.records import LabelSource

    def label_sources(node):
        if isinstance(node, dict):
            if "label_source" in node.get("properties", {}):
                yield node["properties"]["label_source"]["enum"]
            for value in node.values():
                yield from label_sources(value)
        elif isinstance(node, list):
            for value in node:
                yield from label_sources(value)

    for kind in KINDS:
        [allowed] = label_sources(load_schema(kind))
        assert set(allowed) == {*LabelSource.ALL, None}, kind
    for source in LabelSource.ALL:
        decisive = Decisive(label_step=5, label_agent="assistant", label_source=source)
        fix = CorrectedTurn(step=5, tool_calls=(ToolCall("cancel", {"id": "GOOD"}),))
        item = ExportRollout(1, airline("a"), decisive, [Occurrence(5, 3, "x")], [fix])
        result = write_exports([item], kinds=KINDS, folder=tmp_path / source)
        assert all(not skipped for skipped in result.skipped.values()), (source, result.skipped)


def test_a_line_its_schema_refuses_is_skipped_with_the_reason(tmp_path):
    decisive = Decisive(label_step=5, label_agent="assistant", label_source="an_oracle")
    fix = CorrectedTurn(step=5, tool_calls=(ToolCall("cancel", {"id": "GOOD"}),))
    item = ExportRollout(1, airline("a"), decisive, [Occurrence(5, 3, "x")], [fix])
    result = write_exports([item], kinds=("sft",), folder=tmp_path)
    assert result.counts == {"sft": 0}
    [(reason, count)] = result.skipped["sft"].items()
    assert count == 1
    assert reason.startswith("the example does not match its schema: metadata/label_source")
    assert (tmp_path / "sft.jsonl").read_text() == ""


def test_it_cuts_long_observations_when_asked_and_never_what_an_agent_wrote(tmp_path):
    # A web agent's pasted pages made one SFT line 651 KB long.
    page = "<li>item</li>" * 2000
    rollouts = items()
    for item in rollouts:
        item.record.steps[3].content = page
        item.record.steps[7].content = "Reservation WRONG is cancelled. " * 100
    whole = write_exports(rollouts, kinds=KINDS, folder=tmp_path / "whole")
    cut = write_exports(rollouts, kinds=KINDS, folder=tmp_path / "cut", observation_chars=500)
    assert cut.counts == whole.counts
    sft = json.loads((tmp_path / "cut" / "sft.jsonl").read_text())
    result = next(m for m in sft["messages"] if m["role"] == "tool" and "<li>" in m["content"])
    assert result["content"].startswith(page[:500])
    assert result["content"].endswith(
        f"[... {len(page) - 500:,} more characters cut by the export]"
    )
    diagnosis = json.loads((tmp_path / "cut" / "diagnosis.jsonl").read_text().splitlines()[0])
    steps = diagnosis["input"]["steps"]
    assert len(next(s for s in steps if s["index"] == 3)["content"]) < 600
    assert next(s for s in steps if s["index"] == 7)["content"].count("cancelled") == 100
    for digest_cut, digest_whole in zip(cut.files, whole.files, strict=True):
        assert digest_cut.largest_line_bytes < digest_whole.largest_line_bytes
    assert rollouts[0].record.steps[3].content == page  # the records are left whole
