"""Span buffers spill to disk past their limit and give back the same traces."""

from __future__ import annotations

import os
import random

from ingest.core.spans import Span, group_by_trace
from ingest.core.spill import TraceBuffer


def _spans(count: int, traces: int, seed: int = 3) -> list[Span]:
    rng = random.Random(seed)
    return [
        Span(
            trace_id=f"t{rng.randrange(traces)}",
            span_id=f"s{i}",
            parent_id="",
            name="x",
            attributes={"n": i},
            position=i,
        )
        for i in range(count)
    ]


def test_it_gives_back_the_same_traces_after_spilling():
    spans = _spans(500, 40)
    buffer = TraceBuffer(max_in_memory=7)
    for span in spans:
        buffer.add(span)
    got = [(trace, [s.span_id for s in group]) for trace, group in buffer.traces()]
    buffer.close()
    expected = [
        (trace, [s.span_id for s in group]) for trace, group in group_by_trace(spans).items()
    ]
    assert got == expected


def test_it_removes_its_temporary_file():
    buffer = TraceBuffer(max_in_memory=2)
    for span in _spans(10, 3):
        buffer.add(span)
    path = buffer._path
    assert path and os.path.exists(path)
    list(buffer.traces())
    buffer.close()
    assert not os.path.exists(path)


def test_it_keeps_small_inputs_in_memory():
    buffer = TraceBuffer(max_in_memory=100)
    for span in _spans(10, 3):
        buffer.add(span)
    assert buffer._path == ""
    assert sum(len(group) for _, group in buffer.traces()) == 10
