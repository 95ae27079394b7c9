"""The rollout page's step bodies (dashboard.step_html): escaped content, and what a step
without content says."""

from __future__ import annotations

import doctest
from types import SimpleNamespace

from dashboard.step_html import _body


def _step(**fields):
    base = {"tool_name": "", "tool_call_id": "", "tool_args": None, "content": "", "kind": "message",
            "metadata": {}}  # fmt: skip
    return SimpleNamespace(**{**base, **fields})


def test_it_says_which_tools_a_model_call_asked_for_when_that_was_all_its_output():
    calls = [{"id": "c1", "type": "function", "function": {"name": "<b>get_weather</b>"}}]
    html = _body(_step(metadata={"tool_calls": calls}))
    assert "asks for <code>&lt;b&gt;get_weather&lt;/b&gt;</code>" in html
    assert "no content recorded" not in html


def test_it_says_so_when_a_step_recorded_nothing():
    assert "(no content recorded)" in _body(_step())
    assert "(no content recorded)" in _body(_step(metadata={"tool_calls": "not a list"}))


def test_it_escapes_content():
    assert "&lt;script&gt;" in _body(_step(content="<script>x</script>"))


def test_it_folds_a_long_argument_and_escapes_it():
    code = "<script>alert(1)</script>\n" + "x = 1\n" * 400
    html = _body(
        _step(kind="tool_call", tool_name="write_file", tool_args={"path": "a.py", "text": code})
    )
    assert html.startswith('<div class="step-tool">') and '<details class="tool-args-fold">' in html
    assert "arguments, " in html and "characters, show all" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    short = _body(_step(kind="tool_call", tool_name="read", tool_args={"path": "a.py"}))
    assert "tool-args-fold" not in short and '<pre class="tool-args">' in short


def test_an_error_step_says_the_error_its_trace_recorded_beside_the_content():
    # inspect_ai keeps a tool error's type and message beside a truncated output; the page
    # showed only the "error" badge.
    from dashboard import error_detail
    from dashboard.step_html import _flags

    def flags(**fields):
        base = {"is_error": True, "is_mutating": False}
        return _flags(_step(**{**base, **fields}), labelled=False, rollback=False, deviation=False)

    error = {"type": "output_limit", "message": "The tool output limit of <10 MiB> was hit."}
    html = flags(content="...", metadata={"extra": {"error": error}})
    assert '<span class="badge failure">error</span>' in html
    assert "output_limit: The tool output limit of &lt;10 MiB&gt; was hit." in html
    spans = flags(content="", metadata={"status_message": "ReadTimeout: no answer in 30 s"})
    assert "ReadTimeout: no answer in 30 s" in spans
    # Said once: a message the content already holds is not repeated.
    said = flags(content="Error: ReadTimeout", metadata={"status_message": "ReadTimeout"})
    assert "step-error" not in said
    assert "step-error" not in flags(is_error=False, metadata={"extra": {"error": error}})
    assert doctest.testmod(error_detail).failed == 0


def test_it_shows_the_head_of_a_huge_result_and_links_the_download_for_the_rest():
    # A 5 MB fetched page made a 5.1 MB rollout page.
    from dashboard.templatetags.faultline import INLINE_CHARS

    page = "<p>" + "word " * 1_000_000
    html = _body(_step(kind="tool_result", content=page), download_url="/p/a/rollouts/1/download")
    assert len(html) < INLINE_CHARS * 2
    assert f"Showing the first {INLINE_CHARS:,} of {len(page):,} characters." in html
    assert 'href="/p/a/rollouts/1/download" download' in html and "&lt;p&gt;" in html
    short = _body(_step(kind="tool_result", content="word " * 1000), download_url="/x")
    assert "Showing the first" not in short
