"""Trace text as plotly shows it: escaped, so it cannot turn into markup in a chart.

plotly.js reads a small HTML subset in every text it draws (labels, tick labels, legend
names, hover text): ``<a href>`` becomes a clickable link, ``<b>`` and ``<span style>``
restyle the text. Misbehaviour names, agent names and upload names come from trace
content or from users, so a rollout could put a link to any site into a chart. Every
figure passes :func:`escape_figure_text` on its way into a page (the ``figure_json``
filter), the one place that knows them all.

Escaped are ``&``, ``<`` and ``>`` in every string, except in the hover and text
templates, which Faultline writes itself and whose ``%{...}`` values plotly escapes no
further (the values are escaped where they sit, in the data). ``<br>`` is kept wherever it
is: a line break can restyle nothing. ``customdata`` also carries the URLs a click opens,
so there ``&`` stays as it is (``?a=1&b=2``); plotly decodes entities only after it has
read the tags, so an ``&lt;a&gt;`` there shows as text too.

Example:
    >>> escape_figure_text({"data": [{"labels": ["<a href='https://x.example'>win</a>"],
    ...     "hovertemplate": "%{label}<br>%{value}", "customdata": ["/p/x/?a=1&b=<2>"]}]})
    {'data': [{'labels': ["&lt;a href='https://x.example'&gt;win&lt;/a&gt;"], \
'hovertemplate': '%{label}<br>%{value}', 'customdata': ['/p/x/?a=1&b=&lt;2&gt;']}]}
"""

from __future__ import annotations

import re
from typing import Any

#: Faultline's own formats, drawn as plotly markup on purpose.
TEMPLATE_KEYS = frozenset({"hovertemplate", "texttemplate"})
#: Node identities of a treemap: matched with each other, never drawn.
IDENTITY_KEYS = frozenset({"ids", "parents"})
#: Values that may be URLs for the click handler as well as hover text.
URL_KEYS = frozenset({"customdata"})
_LINE_BREAK = "<br>"
_NUMBERS = frozenset({int, float, bool, type(None)})
_MARKUP = re.compile("[<>&]")


def _escape(text: str, *, keep_ampersand: bool = False) -> str:
    if not keep_ampersand:
        text = text.replace("&", "&amp;")
    text = text.replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("&lt;br&gt;", _LINE_BREAK)


def escape_figure_text(value: Any, *, key: str = "") -> Any:
    """A copy of a plotly figure (or any part of one) with its text escaped."""
    if isinstance(value, str):
        if key in TEMPLATE_KEYS or key in IDENTITY_KEYS:
            return value
        return _escape(value, keep_ampersand=key in URL_KEYS)
    if isinstance(value, dict):
        return {k: escape_figure_text(v, key=_inherited(key, k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        # Most of a large figure is long lists of numbers or of plain strings (a 5,000-step
        # strip's positions and step anchors): passed as they are, checked in one go.
        if all(type(item) in _NUMBERS for item in value):
            return value
        if all(type(item) is str for item in value) and not _MARKUP.search("".join(value)):
            return value
        return [escape_figure_text(item, key=key) for item in value]
    return value


def _inherited(parent: str, key: str) -> str:
    # Everything under customdata is customdata, whatever its inner keys are called.
    return parent if parent in URL_KEYS else str(key)
