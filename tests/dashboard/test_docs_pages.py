"""The documentation the pages name is served at /docs/, rendered from the repository's
Markdown with raw HTML escaped, headings that links land on, and links between pages."""

from __future__ import annotations

import doctest
import re

import pytest
from django.urls import reverse

from dashboard import docs_pages
from dashboard.docs_pages import DOCS, render_markdown

pytestmark = pytest.mark.django_db


def test_the_examples_in_the_module_hold():
    assert doctest.testmod(docs_pages).failed == 0


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_page_renders_for_a_member(client, member, doc):
    client.force_login(member)
    response = client.get(reverse("doc_page", args=[doc.name]))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="doc"' in html and doc.title in html


def test_the_index_is_the_overview_and_visitors_log_in_first(client, member):
    assert client.get("/docs/").status_code == 302
    client.force_login(member)
    html = client.get("/docs/").content.decode()
    assert "Overview and quickstart" in html and "make run" in html
    assert client.get("/docs/nothing-here/").status_code == 404


def test_raw_html_in_a_file_is_escaped():
    html = render_markdown("Hi <script>alert(1)</script> <b>x</b>", source="docs/api.md")
    assert "<script>" not in html and "&lt;script&gt;" in html and "<b>" not in html


def test_links_between_served_files_become_pages_and_headings_get_ids():
    text = (
        "# Back-pressure: 429 and 503\n\nSee [deploy](deploy.md) and [the API](api.md#resources)."
    )
    html = render_markdown(text, source="docs/send-traces.md")
    assert '<h1 id="back-pressure-429-and-503">' in html
    assert 'href="/docs/deploy/"' in html and 'href="/docs/api/#resources"' in html


def test_the_pages_that_named_a_file_link_to_its_page(client, member, project):
    client.force_login(member)
    html = client.get(reverse("dashboard:project_settings", args=[project.slug])).content.decode()
    assert 'href="/docs/send-traces/"' in html
    send_traces = client.get("/docs/send-traces/").content.decode()
    assert 'id="what-the-receiver-answers"' in send_traces
    # Every served file's own links to another served file reach a page that exists.
    for target in set(re.findall(r'href="/docs/([\w-]+)/', send_traces)):
        assert client.get(f"/docs/{target}/").status_code == 200, target
