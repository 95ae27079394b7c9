"""The rollout page's step list as HTML, built in Python.

A window holds 400 steps; through the template engine each step cost about thirty
variable lookups and filters, over half a second per window on a 5,000-step rollout. Here
every piece of trace content still goes through ``escape`` (agent outputs carry HTML,
scripts and ANSI codes), and the markup is the one the stylesheet and faultline.js expect.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape as html_escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from dashboard.error_detail import error_detail
from dashboard.snippets import marked_html
from dashboard.templatetags.faultline import (
    agent_colour,
    inline_part,
    is_long,
    preview,
    shown_part_text,
    strip_ansi,
    tool_args_block,
)
from ingest.core.genai_messages import tool_call_name
from ingest.core.token_usage import step_usage


# What django.utils.html.escape does (html.escape of str), without its lazy-string wrapper
# and a SafeString per call: 20,000 calls on a 400-step window. The whole list is marked
# safe once, at the end.
def escape(value: Any) -> str:
    return html_escape(str(value), quote=True)


# The mark of a labelled step; the rollout page's script (static/js/labelling.js) reads it
# from the step list's data-labelled-badge to mark a step labelled from the keyboard.
LABELLED_BADGE = "labelled decisive step"


def _flags(
    step: Any, *, labelled: bool, rollback: bool, deviation: bool, said: bool = False
) -> str:
    flags = []
    if said:
        flags.append('<span class="badge said">says the searched text</span>')
    if labelled:
        flags.append(f'<span class="badge label">{LABELLED_BADGE}</span>')
    if rollback:
        flags.append('<span class="badge rollback">rollback point: restart before this step</span>')
    if deviation:
        flags.append('<span class="badge deviation">earliest mutating deviation</span>')
    if step.is_error:
        flags.append('<span class="badge failure">error</span>')
        detail = error_detail(step.metadata, step.content)
        if detail:  # recorded beside the content (a status message, an error's type)
            flags.append(f'<span class="step-error small">{escape(detail)}</span>')
    if step.is_mutating:
        flags.append('<span class="badge warn">mutating</span>')
    return f'<div class="step-flags">{"".join(flags)}</div>' if flags else ""


def _clipped(content: str, download_url: str) -> tuple[str, str]:
    """The content the page shows and the note saying where the rest is ("" when whole)."""
    shown = shown_part_text(len(content))
    if not shown:
        return content, ""
    link = (
        f' <a href="{escape(download_url)}" download>Download JSON</a> holds it whole.'
        if download_url
        else ""
    )
    note = f'<p class="muted small step-clipped">{shown}{link}</p>'
    return inline_part(content), note


def _body(step: Any, *, says: str = "", download_url: str = "") -> str:
    """The step's tool line, arguments and content; with ``says`` (a step holding the
    searched text), its long content and arguments shown open and the text marked in
    them. Content past ``templatetags.faultline.INLINE_CHARS`` is left to the rollout's download
    (``download_url``)."""
    parts = []
    if step.tool_name:
        direction = "⇠ result of " if step.kind == "tool_result" else "⇢ call "
        call_id = (
            f' <span class="muted">({escape(step.tool_call_id)})</span>'
            if step.tool_call_id
            else ""
        )
        parts.append(
            f'<div class="step-tool">{direction}<strong>{escape(step.tool_name)}</strong>{call_id}</div>'
        )
    if step.tool_args is not None:
        parts.append(tool_args_block(step.tool_args, says))
    content = step.content
    if content:
        shown, clipped_note = _clipped(content, download_url)
        if is_long(content):
            parts.append(
                f"<details{' open' if says else ''}><summary>{escape(preview(content))} <em>({len(content):,} characters, "
                f"show all)</em></summary><pre>{marked_html(strip_ansi(shown), says)}</pre>"
                f"{clipped_note}</details>"
            )
        else:
            parts.append(f"<pre>{marked_html(strip_ansi(content), says)}</pre>")
    elif step.tool_args is None:
        names = _announced_tools(step)
        if names:
            # A model call whose whole output was tool calls: the tool spans below run them.
            listed = ", ".join(f"<code>{escape(name)}</code>" for name in names)
            parts.append(f'<p class="muted small">asks for {listed}, run in the steps below</p>')
        else:
            parts.append('<p class="muted small">(no content recorded)</p>')
    return "".join(parts)


def _tokens(step: Any) -> str:
    """The tokens of the model call the step records, as a muted line under its kind."""
    usage = step_usage(step.metadata)
    if usage is None:
        return ""
    return f'<span class="muted small step-tokens">{usage.input:,} in · {usage.output:,} out tokens</span>'


def _announced_tools(step: Any) -> list[str]:
    """The tools a model call asked for, kept in its metadata when tool spans ran them."""
    calls = step.metadata.get("tool_calls") if isinstance(step.metadata, dict) else None
    names = [tool_call_name(call) for call in calls] if isinstance(calls, list) else []
    return [name for name in names if name]


def steps_html(
    steps: Iterable[Any],
    *,
    labelled_steps: set[int],
    set_lo: int | None = None,
    set_hi: int | None = None,
    rollback_step: int | None = None,
    deviation_step: int | None = None,
    colours: dict[str, int] | None = None,
    said_steps: frozenset[int] = frozenset(),
    says: str = "",
    download_url: str = "",
) -> SafeString:
    """``<li>`` elements of the steps, with the classes of the set, labels and marks;
    ``colours`` are the rollout's agents' colour slots (``agent_colours``), an agent not
    among them gets its own. ``said_steps`` hold ``says``, the text searched for (the
    rollouts list's "a step says"): marked, their long content shown open and the text
    marked in it. ``download_url`` (the rollout's download) is linked from a step whose
    content is too long to show whole."""
    kinds = {"tool_call": "tool call", "tool_result": "tool result"}
    items = []
    colours = dict(colours or {})  # one hash per agent, not one per step
    for step in steps:
        index = step.index
        labelled = index in labelled_steps
        rollback = index == rollback_step
        deviation = index == deviation_step
        classes = ["step"]
        if labelled:
            classes.append("labelled")
        if set_lo is not None and set_hi is not None and set_lo <= index <= set_hi:
            classes.append("in-set")
        if rollback:
            classes.append("rollback")
        if deviation:
            classes.append("deviation")
        said = index in said_steps
        if said:
            classes.append("said")
        if step.agent not in colours:
            colours[step.agent] = agent_colour(step.agent)
        who = escape(step.agent or step.role)
        kind = kinds.get(step.kind, step.kind.replace("_", " "))
        items.append(
            f'<li class="{" ".join(classes)}" id="step-{index}" data-agent-colour="{colours[step.agent]}" '
            f'data-step="{index}" tabindex="-1">'
            f'<div class="step-index"><a href="#step-{index}">#{index}</a></div>'
            f'<div class="step-who"><span class="agent" title="{escape(step.agent)}">{who}</span>'
            f'<span class="muted">{escape(step.role)} · {escape(kind)}</span>{_tokens(step)}</div>'
            f'<div class="step-body">{_flags(step, labelled=labelled, rollback=rollback, deviation=deviation, said=said)}'
            f"{_body(step, says=says if said else '', download_url=download_url)}</div></li>"
        )
    return mark_safe("\n".join(items))  # noqa: S308 - every value above is escaped
