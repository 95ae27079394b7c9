"""The worked examples in the docstrings of the ingest core and archive modules run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ingest.core.spans",
    "ingest.core.vocabulary",
    "ingest.core.genai_messages",
    "ingest.core.chat",
    "ingest.core.chat_dialects",
    "ingest.core.validate",
    "ingest.core.reader_version",
    "ingest.core.langsmith",
    "ingest.core.langchain_messages",
    "ingest.core.jsonstream",
    "ingest.core.native_writer",
    "ingest.core.otlp_wire",
    "ingest.core.otlp_receive",
    "ingest.core.otlp_protobuf",
    "ingest.core.otlp_stored",
    "ingest.core.otlp_protobuf_spans",
    "ingest.core.otlp_trace",
    "ingest.core.genai_events",
    "ingest.core.openinference",
    "ingest.core.storable",
    "ingest.core.step_identity",
    "ingest.parsers.sources",
    "ingest.parsers.record_keys",
    "ingest.parsers.native",
    "ingest.parsers",
]


@pytest.mark.parametrize("name", MODULES)
def test_it_runs_the_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
