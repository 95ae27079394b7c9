"""The published JSON Schema of the native format agrees with the parser and the writer."""

from __future__ import annotations

import io
import json
import re

import jsonschema
import pytest

from ingest.core.native_writer import trajectory_to_native
from ingest.parsers import get_parser
from tests.conftest import REPO_ROOT, shared_file

SCHEMA = json.loads((REPO_ROOT / "docs" / "trace-format.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def test_it_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize(
    ("fmt", "relative"),
    [
        ("tau_bench", "tau_bench/historical_trajectories/gpt-4o-airline.json"),
        ("who_and_when", "who_and_when/Who&When/Hand-Crafted/1.json"),
    ],
)
def test_it_validates_every_exported_line(fmt, relative):
    path = shared_file(relative)
    with path.open("rb") as stream:
        for record in get_parser(fmt).parse(stream, filename=path.name):
            VALIDATOR.validate(json.loads(json.dumps(trajectory_to_native(record))))


def test_it_accepts_the_documented_example():
    doc = (REPO_ROOT / "docs" / "trace-format.md").read_text()
    example = re.search(r"```json\n(.*?)```", doc, re.S).group(1)
    line = json.loads(example)
    VALIDATOR.validate(line)
    records = list(
        get_parser("native").parse(io.BytesIO(json.dumps(line).encode()), filename="x.jsonl")
    )
    assert records[0].labels[0].step == 2 and records[0].steps[3].is_error


def test_its_label_sources_are_the_parser_s():
    """A download holds the rule labels too (gold_actions, sibling_divergence): a trial's
    rollouts.jsonl failed the schema on 114 of 384 lines."""
    from ingest.core.records import LabelSource

    enum = SCHEMA["$defs"]["label"]["properties"]["source"]["enum"]
    assert sorted(enum) == sorted(LabelSource.ALL)
