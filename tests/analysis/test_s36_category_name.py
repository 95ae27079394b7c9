"""The misbehaviour pages call a misbehaviour's category one thing, "category", and show a
category one way: its code, then its name (analysis/_category.html). The API's and the
exports' field names are a public contract and are not touched here."""

from __future__ import annotations

import pytest
from django.urls import reverse

from analysis.models import Misbehaviour, TaxonomyCategory
from tests.conftest import suggested_misbehaviour

pytestmark = pytest.mark.django_db

SHOWN = '<span class="muted small">MAST-3</span> Step repetition'
# Other words the pages once used for the same column.
OTHER_NAMES = ("MAST mode", "failure mode:", "mode</th>", "taxonomy</th>")


@pytest.fixture
def pages(client, member, project):
    mast3 = TaxonomyCategory.objects.get(project=None, code="MAST-3")
    categorised = Misbehaviour.objects.create(
        project=project, key="a", name="Searches again", share=0.4, category=mast3
    )
    suggested = suggested_misbehaviour(
        project, mast3, support=0.9, basis="signal", key="b", name="Calls the tool again", share=0.3
    )
    client.force_login(member)
    slug = project.slug
    return {
        name: client.get(url).content.decode()
        for name, url in {
            "list": reverse("analysis:misbehaviour_list", args=[slug]),
            "taxonomy": reverse("analysis:taxonomy", args=[slug]),
            "categorised": categorised.get_absolute_url(),
            "suggested": suggested.get_absolute_url(),
        }.items()
    }


def test_every_page_shows_a_category_as_code_then_name(pages):
    for name, html in pages.items():
        assert SHOWN in html, name


def test_every_page_names_the_column_category(pages):
    assert "<th>category</th>" in pages["list"]
    assert "<th>category</th>" in pages["taxonomy"]
    assert "<th>suggested category</th>" in pages["taxonomy"]
    assert "Category: <span" in pages["categorised"]
    assert "Suggested category:" in pages["suggested"]
    assert '<label for="id_category">Category:</label>' in pages["suggested"]
    for name, html in pages.items():
        assert not [word for word in OTHER_NAMES if word in html], name
