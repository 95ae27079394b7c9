"""The upload's error for a JSONL file with a broken line names the file's line once."""

from __future__ import annotations

import pytest

from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db


def test_it_names_the_files_line_once(project):
    data = b'{"id": "r1", "steps": [{"role": "user"}]}\n{"id": "r2", "steps": [\n'
    upload = ingest_bytes(project, data, "bad_json_line2.jsonl", requested_format="native")
    assert upload.error_message == (
        "bad_json_line2.jsonl, line 2: Malformed JSON: Expecting value at the end of the "
        "line: the record stops short."
    )
