"""Where a searched text sits in a step: the few words around it that the rollouts list
quotes. Pure Python; the page escapes each part and marks the middle one.

The database found the step (``ingest.selectors.steps_saying``: its content or its call's
arguments hold the text, ignoring case); this finds the same place again to show it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html import escape
from typing import Any

ELLIPSIS = "…"
WIDTH = 70  # characters kept on each side of the match


@dataclass(frozen=True)
class Snippet:
    before: str
    match: str
    after: str
    in_arguments: bool = False


def _around(text: str, start: int, end: int, width: int) -> tuple[str, str, str]:
    """The match with up to ``width`` characters each side, cut at a space where one is
    near, on one line."""
    lo, hi = max(0, start - width), min(len(text), end + width)
    if lo > 0:
        space = text.find(" ", lo, start)
        lo = space + 1 if space != -1 and space - lo < width // 3 else lo
    if hi < len(text):
        space = text.rfind(" ", end, hi)
        hi = space if space != -1 and hi - space < width // 3 else hi
    before = (ELLIPSIS if lo > 0 else "") + text[lo:start]
    after = text[end:hi] + (ELLIPSIS if hi < len(text) else "")
    return before, text[start:end], after


def said_pattern(text: str) -> re.Pattern[str]:
    """``text`` as Python finds it in a step again: literally, case ignored."""
    return re.compile(re.escape(text), re.IGNORECASE)


def marked_html(text: str, says: str, *, in_json: bool = False) -> str:
    r"""``text`` escaped for HTML, each place that holds ``says`` (case ignored) in
    ``<mark>``. With ``in_json`` the text is JSON (a call's arguments), where a quote or a
    backslash of ``says`` is written escaped, so that form is found too.

    Example:
        >>> marked_html("a <b> says Hi", "hi")
        'a &lt;b&gt; says <mark>Hi</mark>'
        >>> print(marked_html('{"note": "say \\"ok\\""}', 'say "ok"', in_json=True))
        {&quot;note&quot;: &quot;<mark>say \&quot;ok\&quot;</mark>&quot;}
    """
    if not says:
        return escape(text)
    needles = [says]
    if in_json:
        written = json.dumps(says, ensure_ascii=False)[1:-1]
        if written != says:
            needles.insert(0, written)  # the longer form first, where both would match
    pattern = re.compile("|".join(said_pattern(n).pattern for n in needles), re.IGNORECASE)
    parts, end = [], 0
    for found in pattern.finditer(text):
        parts.append(f"{escape(text[end : found.start()])}<mark>{escape(found.group())}</mark>")
        end = found.end()
    return "".join(parts) + escape(text[end:])


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def step_snippet(content: str, tool_args: Any, text: str, *, width: int = WIDTH) -> Snippet:
    """The part of the step around the first place that holds ``text`` (case ignored):
    its content first, else its arguments as JSON (where a quote in ``text`` is written
    escaped). Where neither holds it as Python compares (a case rule of the database
    that Python's differs from), the start of the step, with no match.

    Example:
        >>> step_snippet("The balance is not enough to pay", None, "NOT ENOUGH")
        Snippet(before='The balance is ', match='not enough', after=' to pay', in_arguments=False)
        >>> step_snippet("", {"id": "JG7FMM"}, "jg7fmm").match
        'JG7FMM'
        >>> step_snippet("no such words", None, "absent").before
        'no such words'
    """
    flat = _one_line(content)
    found = said_pattern(_one_line(text)).search(flat) if text.strip() else None
    if found:
        return Snippet(*_around(flat, found.start(), found.end(), width))
    if tool_args is not None:
        arguments = json.dumps(tool_args, ensure_ascii=False)
        escaped = json.dumps(text, ensure_ascii=False)[1:-1]
        for needle in (text, escaped):
            found = said_pattern(needle).search(arguments) if needle else None
            if found:
                return Snippet(
                    *_around(arguments, found.start(), found.end(), width), in_arguments=True
                )
    shown = flat or (json.dumps(tool_args, ensure_ascii=False) if tool_args is not None else "")
    cut = shown[: 2 * width]
    return Snippet(cut + (ELLIPSIS if len(shown) > len(cut) else ""), "", "")
