"""The tools a project's agents call: the overview's table (kept by the counters between
refreshes), the rollouts filters by tool and by error step (page, API, export command),
and the API's tools list."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from pipeline.models import ProjectOverview
from pipeline.overview import overview_aggregates
from pipeline.overview_counts import overview_counts_rebuild, overview_counts_update
from projects.tokens import project_token_issue
from tests.conftest import ingest_bytes
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script>"


def _call(name, result="ok", error=False, mutating=None):
    return [
        {
            "role": "assistant",
            "kind": "tool_call",
            "tool_name": name,
            "tool_args": {"q": 1},
            "is_mutating": mutating,
        },
        {
            "role": "tool",
            "kind": "tool_result",
            "tool_name": name,
            "content": result,
            "is_error": error,
        },
    ]


def _lines(*rollouts):
    return "".join(json.dumps(rollout) + "\n" for rollout in rollouts).encode()


ROLLOUTS = [
    {
        "id": "a",
        "outcome": "failure",
        "environment": "shop",
        "steps": [{"role": "user", "content": "find shoes"}]
        + _call("search", "timeout", error=True)
        + _call("search"),
    },
    {
        "id": "b",
        "outcome": "success",
        "environment": "shop",
        "steps": [{"role": "user", "content": "cancel it"}] + _call("cancel_order", mutating=True),
    },
    {
        "id": "c",
        "outcome": "failure",
        "environment": "shop",
        "steps": [{"role": "user", "content": "hi"}] + _call(HOSTILE),
    },
]


@pytest.fixture
def tools_project(project):
    upload = ingest_bytes(project, _lines(*ROLLOUTS), "tools.jsonl")
    assert upload.status == "done", upload.error_message
    overview_counts_rebuild(project_id=project.pk)
    return project


def _page_ids(client, project, **params):
    response = client.get(reverse("dashboard:rollout_list", args=[project.slug]), params)
    assert response.status_code == 200
    return [r.external_id for r in response.context["page"].object_list]


def _tools(project):
    return {row["tool"]: row for row in ProjectOverview.objects.get(project=project).data["tools"]}


def test_it_counts_each_tools_calls_errors_and_rollouts(tools_project):
    tools = _tools(tools_project)
    assert set(tools) == {"search", "cancel_order", HOSTILE}
    search = tools["search"]
    assert (search["calls"], search["errors"], search["rollouts"]) == (2, 1, 1)
    assert (search["failed"], search["judged"]) == (1, 1)
    assert tools["cancel_order"]["mutating"] == 1
    assert tools == {
        row["tool"]: row for row in overview_aggregates(project=tools_project)["tools"]
    }


def test_the_counters_move_with_a_new_upload_and_a_deleted_rollout(tools_project):
    more = {**ROLLOUTS[1], "id": "d", "outcome": "failure"}
    upload = ingest_bytes(tools_project, _lines(more), "more.jsonl")
    ids = list(upload.trajectories.values_list("pk", flat=True))
    overview_counts_update(project_id=tools_project.pk, rollout_ids=ids)
    assert _tools(tools_project)["cancel_order"]["rollouts"] == 2
    tools_project.trajectories.filter(external_id="a").delete()
    overview_counts_update(project_id=tools_project.pk, rollout_ids=[], with_deleted=True)
    stored = ProjectOverview.objects.get(project=tools_project).data["tools"]
    assert "search" not in {row["tool"] for row in stored}
    assert stored == overview_aggregates(project=tools_project)["tools"]


def test_the_overview_shows_the_table_escaped_and_linked_to_the_rollouts(
    client, member, tools_project
):
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[tools_project.slug])).content
    html = html.decode()
    assert 'id="tools-table"' in html
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "?tool=search&amp;errors=yes" in html  # its error count opens those rollouts
    assert "?tool=%3Cscript%3Ealert%281%29%3C/script%3E" in html
    # The cells carry plain values for the client-side sort (faultline.js).
    assert '<td class="num" data-value="2">2</td>' in html  # search's calls
    assert 'data-value="&lt;script&gt;alert(1)&lt;/script&gt;"' in html


def test_the_overview_says_when_the_table_is_not_counted_yet(client, member, tools_project):
    overview = ProjectOverview.objects.get(project=tools_project)
    overview.data.pop("tools")
    overview.save()
    client.force_login(member)
    html = client.get(reverse("dashboard:project_detail", args=[tools_project.slug])).content
    assert b"The tools table has not been counted yet" in html


def test_the_rollouts_page_filters_by_tool_and_by_error_step(client, member, tools_project):
    client.force_login(member)
    assert _page_ids(client, tools_project, tool="search") == ["a"]
    assert _page_ids(client, tools_project, tool=HOSTILE) == ["c"]
    assert _page_ids(client, tools_project, tool="nobody calls this") == []
    assert _page_ids(client, tools_project, errors="yes") == ["a"]
    assert _page_ids(client, tools_project, errors="no") == ["b", "c"]
    # A value the API refuses is named on the page too, not dropped to list every rollout.
    url = reverse("dashboard:rollout_list", args=[tools_project.slug])
    refused = client.get(url, {"errors": "maybe"})
    assert refused.status_code == 400 and refused.context["filter_error"].startswith("errors: ")
    assert _page_ids(client, tools_project, tool="cancel_order", outcome="failure") == []


def test_with_a_tool_chosen_the_error_filter_asks_whether_that_tool_failed(
    client, member, tools_project
):
    other = {
        "id": "e",
        "outcome": "failure",
        "environment": "shop",
        "steps": [{"role": "user", "content": "x"}]
        + _call("search")
        + _call("cancel_order", "refused", error=True),
    }
    ingest_bytes(tools_project, _lines(other), "other.jsonl")
    client.force_login(member)
    assert _page_ids(client, tools_project, errors="yes") == ["a", "e"]
    assert _page_ids(client, tools_project, tool="search", errors="yes") == ["a"]
    assert _page_ids(client, tools_project, tool="search", errors="no") == ["e"]
    assert _page_ids(client, tools_project, tool="cancel_order", errors="yes") == ["e"]


def test_the_rollouts_page_offers_the_counted_tools_and_keeps_one_asked_for(
    client, member, tools_project
):
    client.force_login(member)
    url = reverse("dashboard:rollout_list", args=[tools_project.slug])
    response = client.get(url, {"tool": "not counted"})
    assert response.context["tools"] == sorted(["search", "cancel_order", HOSTILE, "not counted"])
    html = response.content.decode()
    assert '<option value="not counted" selected>' in html
    assert HOSTILE not in html


def test_the_api_filters_by_tool_and_error_step_and_refuses_a_bad_value(client, tools_project):
    token = project_token_issue(project=tools_project, name="ci")
    url = f"/api/v1/projects/{tools_project.slug}/rollouts"

    def ids(**params):
        response = client.get(url, params, **auth(token))
        assert response.status_code == 200, response.content
        return sorted(row["external_id"] for row in response.json()["results"])

    assert ids(tool="search") == ["a"]
    assert ids(errors="no") == ["b", "c"]
    bad = client.get(url, {"errors": "maybe"}, **auth(token))
    assert bad.status_code == 400
    assert "errors" in bad.json()["error"]


def test_the_api_lists_the_tools_as_the_overview_counts_them(client, tools_project):
    token = project_token_issue(project=tools_project, name="ci")
    response = client.get(f"/api/v1/projects/{tools_project.slug}/tools", **auth(token))
    assert response.status_code == 200
    body = response.json()
    assert body["counted_at"] is not None
    assert body["tools"] == ProjectOverview.objects.get(project=tools_project).data["tools"]
    ProjectOverview.objects.filter(project=tools_project).delete()
    empty = client.get(f"/api/v1/projects/{tools_project.slug}/tools", **auth(token)).json()
    assert empty == {"counted_at": None, "tools": []}


def test_the_export_command_takes_the_tool_and_error_filters(tools_project):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "export_rollouts",
        "--project",
        tools_project.slug,
        "--tool",
        "search",
        stdout=out,
        stderr=err,
    )
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == ["a"]
    out = io.StringIO()
    call_command(
        "export_rollouts",
        "--project",
        tools_project.slug,
        "--errors",
        "no",
        stdout=out,
        stderr=err,
    )
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == ["b", "c"]


def test_the_sweep_rebuilds_counters_stored_in_an_older_shape(tools_project):
    from pipeline.overview_counts import COUNTS_VERSION, overview_counts_upgrade
    from pipeline.tasks import jobs_sweep

    assert overview_counts_upgrade() is None  # current: nothing to do
    overview = ProjectOverview.objects.get(project=tools_project)
    overview.data["counts"]["version"] = COUNTS_VERSION - 1
    overview.data.pop("tools")
    overview.save()
    jobs_sweep()
    rebuilt = ProjectOverview.objects.get(project=tools_project).data
    assert rebuilt["counts"]["version"] == COUNTS_VERSION
    assert {row["tool"] for row in rebuilt["tools"]} == {"search", "cancel_order", HOSTILE}


def test_a_project_the_sweep_cannot_rebuild_does_not_stop_the_sweep(
    tools_project, monkeypatch, caplog
):
    from pipeline import overview_counts
    from pipeline.tasks import jobs_sweep

    def broken(**_):
        raise RuntimeError("disk full")

    monkeypatch.setattr(overview_counts, "overview_counts_rebuild", broken)
    overview = ProjectOverview.objects.get(project=tools_project)
    overview.data["counts"]["version"] = 0
    overview.save()
    report = jobs_sweep()
    assert set(report) == {"dispatched", "requeued", "failed", "lost"}
    assert "could not be rebuilt in their new shape" in caplog.text
