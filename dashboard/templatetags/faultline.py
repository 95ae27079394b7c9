"""Template filters for showing untrusted trace content safely.

Every filter returns plain strings; Django's autoescaping still applies to them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from dashboard.plotly_text import escape_figure_text
from dashboard.snippets import marked_html
from ingest.core.token_usage import TokenUsage, stored_rollout_usage
from ingest.parsers import format_label as _format_label
from pipeline.uploads import upload_retryable as _upload_retryable

register = template.Library()

AGENT_COLOURS = 10
PREVIEW_CHARS = 280
FOLD_CHARS = 1200
# Characters of one step's content a page holds: a 5 MB tool result (a page fetched
# whole) made a 5.1 MB page that took 1.6 s; the rest is in the rollout's download.
INLINE_CHARS = 100_000
FOLD_LINES = 24
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


@register.filter
def format_label(name: str) -> str:
    """A stored format id (``swe_agent``) as the upload page names the format."""
    return _format_label(name) if name else name


def agent_colour(name: str) -> int:
    """A stable colour slot (0-9) for an agent name, so one agent looks the same everywhere."""
    if not name:
        return 0
    return (
        int(hashlib.md5(name.encode("utf-8"), usedforsecurity=False).hexdigest(), 16)
        % AGENT_COLOURS
    )


def agent_colours(names: Iterable[str]) -> dict[str, int]:
    """Colour slots for the agents of one rollout, distinct while there are no more agents
    than slots: each keeps its own slot (:func:`agent_colour`) unless an agent before it
    in name order has it, then takes the next free one. Hashing alone gave two of three
    agents the same colour about a quarter of the time.

    Example:
        >>> slots = agent_colours(["user", "planner", "tool"])
        >>> len(set(slots.values()))
        3
    """
    slots: dict[str, int] = {}
    taken: set[int] = set()
    for name in sorted(set(names)):
        slot = agent_colour(name)
        while slot in taken and len(taken) < AGENT_COLOURS:
            slot = (slot + 1) % AGENT_COLOURS
        taken.add(slot)
        slots[name] = slot
    return slots


@register.filter
def pretty_json(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter
def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text or "")


@register.filter
def inline_part(text: str) -> str:
    """The part of a step's content a page holds (:data:`INLINE_CHARS`):
    the compare page set two 200,000-character results side by side in a 408 kB page."""
    return (text or "")[:INLINE_CHARS]


def shown_part_text(length: int) -> str:
    """How much of a cut content a page shows: the one wording of the rollout and compare
    pages ("" when it is whole)."""
    if length <= INLINE_CHARS:
        return ""
    return f"Showing the first {INLINE_CHARS:,} of {length:,} characters."


@register.filter
def inline_note(text: str) -> str:
    """What a page says under content it cut by :func:`inline_part` ("" when whole)."""
    shown = shown_part_text(len(text or ""))
    return f"{shown} The rollout's page downloads it whole." if shown else ""


@register.filter
def is_long(text: str) -> bool:
    text = text or ""
    return len(text) > FOLD_CHARS or text.count("\n") > FOLD_LINES


@register.filter
def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    text = _ANSI.sub("", text or "").strip()
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@register.filter
def tool_args_block(value: Any, says: str = "") -> SafeString:
    """A call's arguments as pretty JSON, folded behind their preview when long (the
    rollout page's steps and the misbehaviour page's exemplars). With ``says``, the
    searched text (the rollout page's "a step says"), each place that holds it is marked
    and a long block is shown open, as a step's long content is."""
    args = pretty_json(value)
    shown = mark_safe(marked_html(args, says, in_json=True))  # noqa: S308 - escaped there
    if not is_long(args):
        return format_html('<pre class="tool-args">{}</pre>', shown)
    return format_html(
        '<details class="tool-args-fold"{}><summary><code>{}</code> '
        "<em>(arguments, {} characters, show all)</em></summary>"
        '<pre class="tool-args">{}</pre></details>',
        mark_safe(" open") if says and "<mark>" in shown else "",  # noqa: S308 - a constant
        preview(args),
        f"{len(args):,}",
        shown,
    )


@register.simple_tag(takes_context=True)
def query_with(context: dict[str, Any], **changes: Any) -> str:
    """The current query string with some parameters changed (filters kept in the URL)."""
    request = context["request"]
    params = request.GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
    encoded = params.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.simple_tag
def project_nav(slug: str) -> list[tuple[str, str, str]]:
    """(key, label, url) of the project's pages, for the top bar."""
    return [
        ("overview", "Overview", reverse("dashboard:project_detail", kwargs={"slug": slug})),
        ("rollouts", "Rollouts", reverse("dashboard:rollout_list", kwargs={"slug": slug})),
        (
            "misbehaviours",
            "Misbehaviours",
            reverse("analysis:misbehaviour_list", kwargs={"slug": slug}),
        ),
        ("calibration", "Calibration", reverse("attribution:calibration", kwargs={"slug": slug})),
        (
            "labelling",
            "Labelling queue",
            reverse("attribution:labelling_queue", kwargs={"slug": slug}),
        ),
        ("exports", "Repair exports", reverse("exports:index", kwargs={"slug": slug})),
        ("uploads", "Uploads", reverse("dashboard:uploads", kwargs={"slug": slug})),
        ("settings", "Settings", reverse("dashboard:project_settings", kwargs={"slug": slug})),
    ]


@register.filter
def split(text: str) -> list[str]:
    return text.split()


@register.filter
def pair(left: Any, right: Any) -> tuple[Any, Any]:
    """Two values to loop over side by side (the comparison page's columns)."""
    return (left, right)


@register.filter
def rollout_tokens(metadata: Any) -> TokenUsage | None:
    """The tokens a stored rollout's model calls used (kept when it was stored), or None."""
    return stored_rollout_usage(metadata)


@register.filter
def share_percent(share: float | None) -> str:
    """A share as a whole percentage, with "<1%" for a share too small to round to one:
    a misbehaviour of 0.4% read "0% of wrong steps" beside its 7 steps.

    >>> share_percent(0.1234), share_percent(0.004), share_percent(0), share_percent(None)
    ('12%', '<1%', '0%', '—')
    """
    if share is None:
        return "—"
    if 0 < share < 0.005:
        return "<1%"
    return f"{round(share * 100)}%"


@register.filter
def spaced(text: str) -> str:
    """``tool_call`` as ``tool call``."""
    return (text or "").replace("_", " ")


@register.filter
def figure_json(value: Any, element_id: str) -> str:
    """A plotly figure with its text escaped for plotly (:mod:`dashboard.plotly_text`),
    written as Django's ``json_script`` writes it, byte for byte, but faster for the large
    figures (a 5,000-step rollout's strip is about 200 KB): its ``str.translate`` over the
    whole text cost more than the JSON encoding; three ``replace`` calls give the same
    escapes (``<``, ``>``, ``&`` as unicode escapes, so nothing can close the script
    element).
    """
    from django.core.serializers.json import DjangoJSONEncoder
    from django.utils.html import format_html
    from django.utils.safestring import mark_safe

    text = json.dumps(escape_figure_text(value), cls=DjangoJSONEncoder)
    text = text.replace("<", "\\u003C").replace(">", "\\u003E").replace("&", "\\u0026")
    return format_html(
        '<script id="{}" type="application/json">{}</script>', element_id, mark_safe(text)
    )


@register.filter
def upload_retryable(upload: Any) -> bool:
    """Whether the uploads page offers Retry on this upload (pipeline.uploads decides)."""
    return _upload_retryable(upload)
