"""The rollout page's step bodies (dashboard.step_html): escaped content, and what a step
without content says."""

from __future__ import annotations

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
