"""A file that starts with a UTF-8 byte-order mark is read as the same file without it.

Notepad, PowerShell 5's ``Out-File -Encoding utf8`` and Excel write one. A good trace with
it read as "Unknown trace format" when detected, and as "Malformed JSON: Unexpected UTF-8
BOM" with its format named.
"""

from __future__ import annotations

import gzip
import io
import zipfile

import pytest

from ingest.parsers.sources import BOM
from tests.conftest import WHO_AND_WHEN, ingest_bytes, shared_file

pytestmark = pytest.mark.django_db

SAMPLES = {
    "who_and_when": (str(WHO_AND_WHEN / "Hand-Crafted" / "3.json"), "3.json"),
    "openai_chat": ("mast_taxonomy/adamast/examples/traces.jsonl", "traces.jsonl"),
    "otlp_json": ("otlp_json/examples/trace.json", "trace.json"),
}


def _sample(fmt: str) -> tuple[bytes, str]:
    relative, name = SAMPLES[fmt]
    return shared_file(relative).read_bytes(), name


def _stored(project) -> list[tuple[str, int]]:
    return sorted(
        (rollout.external_id, rollout.steps.count()) for rollout in project.trajectories.all()
    )


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
@pytest.mark.parametrize("named", [False, True], ids=["detected", "format named"])
def test_it_reads_a_file_with_a_bom_as_the_file_without_it(project, fmt, named):
    data, name = _sample(fmt)
    requested = fmt if named else ""
    with_bom = ingest_bytes(
        project, BOM + data.replace(b"\n", b"\r\n"), name, requested_format=requested
    )
    assert with_bom.status == "done", with_bom.error_message
    assert with_bom.detected_format == fmt
    stored = _stored(project)
    project.trajectories.all().delete()
    plain = ingest_bytes(project, data, name, requested_format=requested)
    assert plain.status == "done"
    assert stored == _stored(project) and stored


def test_it_reads_archive_members_with_a_bom(project):
    data, name = _sample("who_and_when")
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr(name, BOM + data)
    upload = ingest_bytes(project, packed.getvalue(), "runs.zip")
    assert upload.status == "done", upload.error_message
    upload = ingest_bytes(project, gzip.compress(BOM + data), "3.json.gz")
    assert upload.status == "done", upload.error_message
