"""The rollouts list's paging: Next and Previous seek by cursor, a page number jumps."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.urls import reverse

from analysis.rollout_filters import RolloutFilters, rollouts_filtered
from dashboard.api.rollouts import ORDERS
from dashboard.rollout_paging import rollout_page
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

PER_PAGE = 3
# Ties in steps and rewards, and rollouts without a reward: the hard cases of a seek.
ROLLOUTS = [
    ("r0", 4, 0.5),
    ("r1", 2, None),
    ("r2", 4, 0.0),
    ("r3", 7, 0.5),
    ("r4", 2, 1.0),
    ("r5", 4, None),
    ("r6", 9, 0.0),
    ("r7", 2, 0.5),
]


@pytest.fixture
def paged(project):
    lines = []
    for external_id, steps, reward in ROLLOUTS:
        record = {
            "id": external_id,
            "outcome": "failure",
            "reward": reward,
            "steps": [{"role": "user", "content": "x"}] * steps,
        }
        if external_id == "r4":
            record["labels"] = [{"step": 1}]
        lines.append(json.dumps(record))
    ingest_bytes(project, ("\n".join(lines) + "\n").encode(), "eight.jsonl")
    return project


def _expected(project, sort: str) -> list[str]:
    """Every rollout in the sort's order, in Python: empty values last, ties by id."""
    order = ORDERS[sort]

    def key(rollout):
        value = getattr(rollout, order.field)
        if value is None:
            return (1, 0, rollout.pk)
        return (0, -value if order.descending else value, rollout.pk)

    return [r.external_id for r in sorted(project.trajectories.all(), key=key)]


def _page(project, sort: str, **params: str):
    rollouts = rollouts_filtered(project=project, filters=RolloutFilters(sort=sort))
    return rollout_page(rollouts, order=ORDERS[sort], params=params, per_page=PER_PAGE)


def _ids(page) -> list[str]:
    return [r.external_id for r in page.object_list]


@pytest.mark.parametrize("sort", ["oldest", "newest", "-steps", "steps", "reward", "-reward"])
def test_it_visits_every_rollout_once_in_order_by_next(paged, sort):
    page = _page(paged, sort)
    seen, numbers = _ids(page), [page.number]
    while page.has_next:
        page = _page(paged, sort, after=page.next_cursor, page=str(page.next_number))
        seen += _ids(page)
        numbers.append(page.number)
    assert seen == _expected(paged, sort)
    assert numbers == [1, 2, 3]


@pytest.mark.parametrize("sort", ["oldest", "-steps", "reward", "-reward"])
def test_it_walks_back_the_same_pages_by_previous(paged, sort):
    forward = [_page(paged, sort)]
    while forward[-1].has_next:
        last = forward[-1]
        forward.append(_page(paged, sort, after=last.next_cursor, page=str(last.next_number)))
    page, backward = forward[-1], []
    while page.has_previous:
        page = _page(paged, sort, before=page.previous_cursor, page=str(page.previous_number))
        backward.append(_ids(page))
    assert backward == [_ids(p) for p in reversed(forward[:-1])]
    assert page.number == 1 and not page.has_previous and page.has_next


@pytest.mark.parametrize("sort", ["oldest", "-steps", "reward"])
def test_it_jumps_to_a_page_number_with_the_rows_next_would_reach(paged, sort):
    expected = _expected(paged, sort)
    second = _page(paged, sort, page="2")
    assert _ids(second) == expected[PER_PAGE : 2 * PER_PAGE]
    assert second.has_previous and second.has_next and second.number == 2


def test_it_shows_the_last_page_for_a_number_past_the_end(paged):
    page = _page(paged, "oldest", page="99")
    assert _ids(page) == ["r6", "r7"]
    assert page.number == 3 and page.num_pages == 3 and not page.has_next


@pytest.mark.parametrize("raw", ["0", "-1", "x", ""])
def test_it_shows_the_first_page_for_a_number_that_is_not_one(paged, raw):
    page = _page(paged, "oldest", page=raw)
    assert _ids(page) == ["r0", "r1", "r2"] and page.number == 1


def test_it_ignores_a_cursor_made_for_another_sort_or_not_a_cursor(paged):
    other = _page(paged, "reward").next_cursor
    assert _ids(_page(paged, "oldest", after=other)) == ["r0", "r1", "r2"]
    assert _ids(_page(paged, "oldest", before="not-a-cursor")) == ["r0", "r1", "r2"]


def test_it_ends_at_the_last_row_without_a_next_page(paged):
    page = _page(paged, "oldest", page="3")
    after_last = _page(paged, "oldest", after=page.next_cursor, page="4")
    assert _ids(page) == ["r6", "r7"] and not page.has_next
    assert _ids(after_last) == ["r6", "r7"]  # past the end: the last page, not an empty one


def _links(html: str) -> dict[str, str]:
    return {
        rel: unescape(href) for rel, href in re.findall(r'rel="(prev|next)" href="([^"]+)"', html)
    }


def test_the_page_links_next_and_previous_by_cursor_and_keeps_the_filters(
    client, member, paged, monkeypatch
):
    from dashboard import views

    monkeypatch.setattr(views, "ROLLOUTS_PER_PAGE", PER_PAGE)
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[paged.slug])
    first = client.get(url, {"sort": "-steps", "outcome": "failure"})
    assert "Page 1 of 3" in first.content.decode()
    next_url = _links(first.content.decode())["next"]
    assert "after=" in next_url and "sort=-steps" in next_url and "outcome=failure" in next_url
    second = client.get(url + next_url)
    assert [r.external_id for r in second.context["page"].object_list] == ["r2", "r5", "r1"]
    assert 'name="page" min="1" max="3" value="2"' in second.content.decode()
    back = client.get(url + _links(second.content.decode())["prev"])
    assert [r.external_id for r in back.context["page"].object_list] == ["r6", "r3", "r0"]


def test_the_page_marks_only_the_labelled_rollouts(client, member, paged):
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_list", args=[paged.slug]), {"page": "2"})
    assert response.context["labelled"] == {paged.trajectories.get(external_id="r4").pk}
    assert response.content.decode().count('<span class="badge label"') == 1
