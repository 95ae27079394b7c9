"""The product's own documentation, served at /docs/: the pages name docs/send-traces.md and
docs/clustering.md, which a user of a deployed Faultline could not open.

Each page is the repository's Markdown file rendered by markdown-it-py with raw HTML off
(the files are ours, but a page must never carry markup it did not escape), headings given
ids so that "#what-the-receiver-answers" lands, and links to another served file turned
into its page. Rendered once per file version (its modification time).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET
from markdown_it import MarkdownIt


@dataclass(frozen=True)
class Doc:
    name: str  # the page's address: /docs/<name>/
    path: str  # the file, from the repository's root
    title: str


DOCS = (
    Doc("readme", "README.md", "Overview and quickstart"),
    Doc("send-traces", "docs/send-traces.md", "Sending traces (OpenTelemetry)"),
    Doc("formats", "docs/formats.md", "Trace formats"),
    Doc("trace-format", "docs/trace-format.md", "The native trace format"),
    Doc("api", "docs/api.md", "REST API"),
    Doc("exports", "docs/exports/README.md", "Repair-dataset exports"),
    Doc("clustering", "docs/clustering.md", "Misbehaviour clustering"),
    Doc("attribution", "docs/attribution.md", "Attribution and calibration"),
    Doc("deploy", "docs/deploy.md", "Deploying"),
    Doc("benchmarks", "docs/benchmarks.md", "Benchmarks"),
)
BY_NAME = {doc.name: doc for doc in DOCS}
BY_PATH = {doc.path: doc for doc in DOCS}
_MD_LINK = re.compile(r"^(?P<path>[\w./-]+\.md)(?P<anchor>#[\w-]*)?$")
_NOT_IN_ID = re.compile(r"[^\w\- ]")


def heading_id(text: str) -> str:
    """The id a heading gets, as GitHub makes it (links in the docs rely on it).

    >>> heading_id("What the receiver answers"), heading_id("Back-pressure: 429 and 503")
    ('what-the-receiver-answers', 'back-pressure-429-and-503')
    """
    return _NOT_IN_ID.sub("", text.strip().lower()).replace(" ", "-")


def _served_link(href: str, source: str) -> str | None:
    """The page of a link to another served Markdown file, relative to ``source``.

    >>> _served_link("send-traces.md#settings", "docs/api.md")
    '/docs/send-traces/#settings'
    >>> _served_link("docs/deploy.md", "README.md"), _served_link("notes.md", "README.md")
    ('/docs/deploy/', None)
    """
    match = _MD_LINK.match(href)
    if not match:
        return None
    target = posixpath.normpath(posixpath.join(posixpath.dirname(source), match["path"]))
    doc = BY_PATH.get(target)
    if doc is None:
        return None
    return reverse("doc_page", args=[doc.name]) + (match.group("anchor") or "")


def render_markdown(text: str, *, source: str) -> str:
    """The file's HTML: raw HTML in it escaped, headings with ids, served links rewritten."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = parser.parse(text)
    for position, token in enumerate(tokens):
        if token.type == "heading_open" and position + 1 < len(tokens):
            token.attrSet("id", heading_id(tokens[position + 1].content))
        for child in token.children or ():
            if child.type == "link_open":
                href = str(child.attrGet("href") or "")
                served = _served_link(href, source)
                if served is not None:
                    child.attrSet("href", served)
        if token.type == "table_open":
            token.attrSet("class", "table")
    return str(parser.renderer.render(tokens, parser.options, {}))


@lru_cache(maxsize=len(DOCS) * 2)
def _rendered(path: str, modified: float) -> str:
    text = (Path(settings.BASE_DIR) / path).read_text(encoding="utf-8")
    return render_markdown(text, source=path)


def doc_html(doc: Doc) -> SafeString:
    file = Path(settings.BASE_DIR) / doc.path
    try:
        modified = file.stat().st_mtime
    except OSError:
        raise Http404("This page is not in this installation.") from None
    # Escaped by the renderer (html off): safe to place as it is.
    return mark_safe(_rendered(doc.path, modified))  # noqa: S308


@login_required
@require_GET
def doc_page(request: HttpRequest, name: str = "readme") -> HttpResponse:
    doc = BY_NAME.get(name)
    if doc is None:
        raise Http404("No such page of the documentation.")
    context: dict[str, Any] = {
        "doc": doc,
        "docs": [(d, reverse("doc_page", args=[d.name])) for d in DOCS],
        "html": doc_html(doc),
    }
    return render(request, "dashboard/doc_page.html", context)
