"""The agents of one rollout get distinct colours (chips, step borders, lanes agree), while
an agent keeps its own colour wherever no other agent of the rollout claims it first."""

from __future__ import annotations

import re
from itertools import combinations

import pytest
from django.urls import reverse

from dashboard.templatetags.faultline import AGENT_COLOURS, agent_colour, agent_colours
from tests.conftest import ingest_file, shared_file


def test_agents_whose_hashes_collide_get_distinct_slots():
    names = [f"agent-{n}" for n in range(200)]
    colliding = next(
        (a, b) for a, b in combinations(names, 2) if agent_colour(a) == agent_colour(b)
    )
    slots = agent_colours(colliding)
    assert len(set(slots.values())) == 2
    assert slots[min(colliding)] == agent_colour(min(colliding))  # the first keeps its own


@pytest.mark.parametrize("count", [1, 3, AGENT_COLOURS])
def test_up_to_ten_agents_are_all_distinct(count):
    slots = agent_colours(f"a{n}" for n in range(count))
    assert len(set(slots.values())) == count and set(slots.values()) <= set(range(AGENT_COLOURS))


def test_more_agents_than_colours_still_get_a_slot_each():
    slots = agent_colours(f"a{n}" for n in range(AGENT_COLOURS + 5))
    assert len(slots) == AGENT_COLOURS + 5 and set(slots.values()) == set(range(AGENT_COLOURS))


def test_it_is_stable_whatever_the_order():
    assert agent_colours(["b", "a", "c"]) == agent_colours(["c", "b", "a", "a"])


@pytest.mark.django_db
def test_the_rollout_page_uses_one_slot_per_agent_everywhere(client, member, project):
    ingest_file(project, shared_file("who_and_when/Who&When/Hand-Crafted/1.json"))
    rollout = project.trajectories.get()
    client.force_login(member)
    response = client.get(reverse("dashboard:rollout_detail", args=[project.slug, rollout.pk]))
    html = response.content.decode()
    found = re.findall(r'agent-chip" data-agent-colour="(\d)">([^<]+)<', html)
    chips = {agent: int(slot) for slot, agent in found}
    assert len(chips) == len(found)
    assert len(chips) > 2 and len(set(chips.values())) == len(chips)
    # Each step's border is its agent's chip colour.
    borders = re.findall(r'data-agent-colour="(\d)" data-step="\d+"[^>]*>.*?title="([^"]*)"', html)
    assert borders and all(chips[agent] == int(slot) for slot, agent in borders if agent in chips)
