"""The rollouts list: filters, search and sorting kept in the URL."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from ingest.core.records import LabelSource
from tests.conftest import ingest_bytes

pytestmark = pytest.mark.django_db

LIST_MAX_QUERIES = 14


def _line(**fields):
    base = {"id": "r", "outcome": "failure", "steps": [{"role": "user", "content": "hi"}]}
    base.update(fields)
    return (json.dumps(base) + "\n").encode()


@pytest.fixture
def rollouts(project):
    ingest_bytes(
        project,
        b"".join(
            [
                _line(
                    id="a",
                    environment="airline",
                    policy_model="m1",
                    task_text="book a flight",
                    steps=[{"role": "user", "content": "x"}] * 3,
                    labels=[{"step": 1}],
                ),
                _line(
                    id="b",
                    outcome="success",
                    environment="airline",
                    policy_model="m2",
                    task_text="cancel a trip",
                    reward=1.0,
                ),
                _line(
                    id="c",
                    environment="retail",
                    policy_model="m1",
                    task_text="return shoes",
                    steps=[{"role": "user", "content": "x"}] * 7,
                ),
            ]
        ),
        "three.jsonl",
    )
    return project


def _ids(client, project, **params):
    response = client.get(reverse("dashboard:rollout_list", args=[project.slug]), params)
    return [r.external_id for r in response.context["page"].object_list]


def test_it_filters_by_labelled_or_not(client, member, rollouts):
    client.force_login(member)
    assert _ids(client, rollouts, labelled="yes") == ["a"]
    assert _ids(client, rollouts, labelled="no") == ["b", "c"]


def test_it_filters_by_who_gave_the_label(client, member, rollouts):
    c = rollouts.trajectories.get(external_id="c")
    c.labels.create(step_index=2, source=LabelSource.GOLD_ACTIONS)
    client.force_login(member)
    assert _ids(client, rollouts, labelled="yes") == ["a", "c"]
    assert _ids(client, rollouts, labelled="given") == ["a"]
    assert _ids(client, rollouts, labelled="rule") == ["c"]
    # A person's label on top of the rule's: no longer a rule's alone.
    c.labels.create(step_index=1, source=LabelSource.HUMAN)
    assert _ids(client, rollouts, labelled="rule") == []
    assert _ids(client, rollouts, labelled="given") == ["a", "c"]
    # An unknown value is named (the API's 400), not dropped to list every rollout.
    assert _ids(client, rollouts, labelled="maybe") == []


def test_it_filters_by_agent_system_and_offers_every_system(client, member, rollouts):
    rollouts.trajectories.filter(external_id__in=["b", "c"]).update(agent_system="bot-2")
    rollouts.trajectories.filter(external_id="a").update(agent_system="bot-1")
    client.force_login(member)
    assert _ids(client, rollouts, system="bot-2") == ["b", "c"]
    assert _ids(client, rollouts, system="bot-2", outcome="failure") == ["c"]
    html = client.get(
        reverse("dashboard:rollout_list", args=[rollouts.slug]), {"system": "bot-1"}
    ).content.decode()
    assert '<option value="bot-1" selected>bot-1</option>' in html
    assert '<option value="bot-2" >bot-2</option>' in html


def test_it_sorts_by_steps_and_environment(client, member, rollouts):
    client.force_login(member)
    assert _ids(client, rollouts, sort="-steps") == ["c", "a", "b"]
    assert _ids(client, rollouts, sort="environment") == ["a", "b", "c"]


def test_it_searches_ids_and_task_text(client, member, rollouts):
    client.force_login(member)
    assert _ids(client, rollouts, q="TRIP") == ["b"]
    assert _ids(client, rollouts, q="c", outcome="failure") == ["c"]


def test_it_keeps_filters_in_pagination_links_and_the_form(client, member, rollouts):
    client.force_login(member)
    html = client.get(
        reverse("dashboard:rollout_list", args=[rollouts.slug]),
        {"outcome": "failure", "sort": "-steps"},
    ).content.decode()
    assert '<option value="failure" selected>' in html
    assert '<option value="-steps" selected>' in html
    assert "outcome=failure" in html  # the download link keeps the filters


def test_it_names_unknown_values_instead_of_ignoring_them(client, member, rollouts):
    # They were dropped and the list shown unfiltered (tests/dashboard/
    # test_rollout_list_bad_params.py: the page names the parameter, as the API does).
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[rollouts.slug])
    response = client.get(url, {"sort": "drop table", "set_size": "huge", "misbehaviour": "x"})
    assert response.status_code == 400
    assert response.context["filter_error"].startswith("misbehaviour: ")
    assert _ids(client, rollouts, sort="drop table") == []


def test_it_shows_no_rollout_for_set_sizes_not_computed(client, member, rollouts):
    client.force_login(member)
    assert _ids(client, rollouts, set_size="1") == []


def test_it_keeps_queries_bounded(client, member, rollouts, django_assert_max_num_queries):
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[rollouts.slug])
    with django_assert_max_num_queries(LIST_MAX_QUERIES):
        client.get(url, {"outcome": "failure", "q": "a", "labelled": "no", "sort": "-steps"})


def test_it_caps_the_count_of_a_text_search(client, member, rollouts, monkeypatch):
    from dashboard import views

    monkeypatch.setattr(views, "SEARCH_COUNT_CAP", 1)
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[rollouts.slug])
    html = client.get(url, {"q": "a"}).content.decode()
    assert "More than 1 rollouts match." in html
    assert "3 rollouts match." in client.get(url).content.decode()


def test_it_searches_inside_ids_task_ids_and_text_whatever_the_case(client, member, project):
    # The same rows on SQLite (LIKE) and PostgreSQL (the trigram indexes): make test runs both.
    ingest_bytes(
        project,
        b"".join(
            [
                _line(id="run-Alpha-1", task_id="t1", task_text="Book a FLIGHT"),
                _line(id="run-2", task_id="airline/ALPHA-9", task_text="cancel"),
                _line(id="run-3", task_id="t3", task_text="an alphabet soup"),
                _line(id="run-4", task_id="t4", task_text="nothing here"),
            ]
        ),
        "search.jsonl",
    )
    client.force_login(member)
    assert _ids(client, project, q="alpha") == ["run-Alpha-1", "run-2", "run-3"]
    assert _ids(client, project, q="FLIGHT") == _ids(client, project, q="flight") == ["run-Alpha-1"]
    assert _ids(client, project, q="un-") == ["run-Alpha-1", "run-2", "run-3", "run-4"]
    assert _ids(client, project, q="no such words") == []
