"""manifest.json names every file of an export, the schemas shipped with them included."""

from __future__ import annotations

import pytest

from exports.core.filters import KINDS, SCHEMA_FILES
from exports.core.manifest import MSG_SCHEMA_NOT_SHIPPED, archive_names, build_manifest
from exports.core.schemas import SCHEMA_DIR, schema_names, write_schemas
from exports.core.writer import FileDigest, file_sha256


def _manifest(kinds, schemas):
    return build_manifest(
        job_id=1,
        project={"id": 1, "slug": "acme"},
        kinds=kinds,
        filters={},
        alpha=None,
        provenance={},
        counts={},
        skipped={},
        files=[FileDigest(f"{kind}.jsonl", 0, 0, "0" * 64) for kind in kinds],
        rollouts=0,
        schemas=schemas,
        created_at="2026-01-01T00:00:00+00:00",
    )


def test_it_copies_the_schemas_of_the_kinds_and_of_the_manifest(tmp_path):
    digests = write_schemas(("sft", "diagnosis"), tmp_path)
    assert [d.name for d in digests] == [
        "sft.schema.json",
        "diagnosis.schema.json",
        "manifest.schema.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(d.name for d in digests)
    for digest in digests:
        assert (tmp_path / digest.name).read_bytes() == (SCHEMA_DIR / digest.name).read_bytes()
        assert digest.sha256 == file_sha256(tmp_path / digest.name)


def test_it_lists_the_shipped_schemas(tmp_path):
    manifest = _manifest(KINDS, write_schemas(KINDS, tmp_path))
    assert [s["name"] for s in manifest["schemas"]] == schema_names(KINDS)
    assert {f["schema"] for f in manifest["files"]} == set(SCHEMA_FILES.values())


def test_it_refuses_to_name_a_schema_it_does_not_ship(tmp_path):
    only_sft = write_schemas(("sft",), tmp_path)
    with pytest.raises(
        ValueError, match=MSG_SCHEMA_NOT_SHIPPED.format(name="diagnosis.schema.json")
    ):
        _manifest(("sft", "diagnosis"), only_sft)


def test_it_names_every_file_of_the_archive(tmp_path):
    manifest = _manifest(("sft",), write_schemas(("sft",), tmp_path))
    assert archive_names(manifest) == [
        "sft.jsonl",
        "sft.schema.json",
        "manifest.schema.json",
        "manifest.json",
    ]


def test_a_manifest_from_before_schemas_shipped_names_only_its_files():
    assert archive_names({"files": [{"name": "sft.jsonl"}]}) == ["sft.jsonl", "manifest.json"]
