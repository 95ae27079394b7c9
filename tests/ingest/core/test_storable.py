"""Text the databases refuse (NUL, lone surrogates) is replaced before it is written."""

from __future__ import annotations

import json

from ingest.core.storable import REPLACEMENT, storable_json, storable_text, storable_value


def test_it_replaces_nul_and_lone_surrogates_in_text():
    assert storable_text("a\x00b\ud800c\udfffd") == f"a{REPLACEMENT}b{REPLACEMENT}c{REPLACEMENT}d"


def test_it_keeps_text_outside_the_basic_plane_and_text_that_spells_an_escape():
    assert storable_text("ok 😀 \\u0000") == "ok 😀 \\u0000"
    value = {"emoji": "😀", "typed": "\\u0000 and \\ud800"}
    assert json.loads(storable_json(value)) == value


def test_it_replaces_them_in_json_values_and_keys_at_any_depth():
    value = {"k\x00": ["x", {"deep": "a\ud800"}], "n": 1, "none": None}
    assert json.loads(storable_json(value)) == {
        f"k{REPLACEMENT}": ["x", {"deep": f"a{REPLACEMENT}"}],
        "n": 1,
        "none": None,
    }
    assert storable_value(value) == json.loads(storable_json(value))


def test_it_returns_a_clean_value_itself():
    value = {"k": ["a", 1]}
    assert storable_value(value) is value
