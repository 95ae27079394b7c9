"""Searching what the steps say: the rollouts list's "a step says" filter (page, API,
export command), the quote of each row's first such step, the rollout page's marks, and
the paging that serves a capped search's count and pages from one read. `make test` runs
these on SQLite and on PostgreSQL, whose JSON text and case rules differ."""

from __future__ import annotations

import doctest
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from dashboard import snippets
from dashboard.api.rollouts import ORDERS
from dashboard.rollout_paging import rollout_page
from dashboard.snippets import step_snippet
from ingest.models import Trajectory
from ingest.selectors import first_steps_saying, steps_saying
from projects.tokens import project_token_issue
from tests.conftest import ingest_bytes
from tests.dashboard.api.conftest import auth

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('x')</script>"
LONG_TAIL = "filler words " * 200  # a long result: its match sits past the folded preview


def _rollout(rollout_id, *steps, outcome="failure", task=""):
    rollout = {"id": rollout_id, "outcome": outcome, "environment": "shop", "steps": list(steps)}
    return {**rollout, "task_text": task} if task else rollout


def _user(text):
    return {"role": "user", "content": text}


def _call(name, args):
    return {"role": "assistant", "kind": "tool_call", "tool_name": name, "tool_args": args}


def _result(name, text, error=False):
    return {
        "role": "tool",
        "kind": "tool_result",
        "tool_name": name,
        "content": text,
        "is_error": error,
    }


ROLLOUTS = [
    _rollout(
        "a",
        _user("pay for my order"),
        _call("pay", {"method": "gift_card_7", "amount": 120}),
        _result("pay", "Error: Gift card balance is NOT ENOUGH", error=True),
    ),
    _rollout(
        "b",
        _user("book a room at the Café Zürich"),
        _call("book", {"hotel": "Café Zürich", "note": 'say "hi" at 100%'}),
        _result("book", LONG_TAIL + "booked, the balance is not enough for a deposit"),
        outcome="success",
        task="A room at the Café Zürich, Friday",
    ),
    _rollout("c", _user(HOSTILE), {"role": "assistant", "content": "I read " + HOSTILE}),
    _rollout(
        "e",
        _user("send the report"),
        _call("send", {"body": LONG_TAIL + "Quarterly <b>figures</b> attached", "to": "ops"}),
    ),
    _rollout("d", _user("nothing to see"), {"role": "assistant", "content": "done_deal"}),
]


@pytest.fixture
def said_project(project):
    lines = "".join(json.dumps(r) + "\n" for r in ROLLOUTS).encode()
    upload = ingest_bytes(project, lines, "said.jsonl")
    assert upload.status == "done", upload.error_message
    return project


def _ids(steps):
    return sorted(
        (external_id, index)
        for external_id, index in steps.values_list("trajectory__external_id", "index")
    )


def _page(client, project, **params):
    response = client.get(reverse("dashboard:rollout_list", args=[project.slug]), params)
    assert response.status_code == 200
    return response


def _page_ids(client, project, **params):
    return [r.external_id for r in _page(client, project, **params).context["page"].object_list]


def test_steps_are_found_by_content_and_arguments_in_any_case(said_project):
    assert _ids(steps_saying("not enough")) == [("a", 2), ("b", 2)]
    assert _ids(steps_saying("GIFT_CARD_7")) == [("a", 1)]
    assert _ids(steps_saying("amount")) == [("a", 1)]  # an argument's name is text too
    assert _ids(steps_saying("zzz not said")) == []


def test_arguments_with_quotes_and_accents_are_found_on_both_databases(said_project):
    # SQLite keeps arguments as ASCII JSON (\u00e9), PostgreSQL's jsonb prints the
    # characters; a quote is escaped in both.
    assert _ids(steps_saying("Café Zürich")) == [("b", 0), ("b", 1)]
    assert _ids(steps_saying('say "hi"')) == [("b", 1)]


def test_like_wildcards_in_the_text_are_plain_characters(said_project):
    assert _ids(steps_saying("100%")) == [("b", 1)]
    assert _ids(steps_saying("done_deal")) == [("d", 1)]
    assert _ids(steps_saying("done%deal")) == []
    assert _ids(steps_saying("done deal")) == []


def test_the_first_step_saying_it_per_rollout(said_project):
    ids = list(Trajectory.objects.filter(project=said_project).values_list("pk", flat=True))
    firsts = first_steps_saying("balance", ids)
    by_rollout = {
        Trajectory.objects.get(pk=pk).external_id: step.index for pk, step in firsts.items()
    }
    assert by_rollout == {"a": 2, "b": 2}
    assert first_steps_saying("zzz not said", ids) == {}


def test_the_rollouts_page_filters_by_what_a_step_says(client, member, said_project):
    client.force_login(member)
    assert _page_ids(client, said_project, says="not enough") == ["a", "b"]
    assert _page_ids(client, said_project, says="not enough", outcome="success") == ["b"]
    assert _page_ids(client, said_project, says="gift_card_7") == ["a"]
    # The task is searched by q, not by says: "pay for my order" is also the first step.
    assert _page_ids(client, said_project, says="pay for my") == ["a"]
    assert _page_ids(client, said_project, says="zzz not said") == []
    assert sorted(_page_ids(client, said_project, says="   ")) == ["a", "b", "c", "d", "e"]


def test_each_row_quotes_its_first_step_saying_it_escaped_and_marked(client, member, said_project):
    client.force_login(member)
    html = _page(client, said_project, says="not enough").content.decode()
    assert "<mark>NOT ENOUGH</mark>" in html  # the step's own case
    assert "First step that says it" in html
    rollout_b = Trajectory.objects.get(project=said_project, external_id="b")
    link = reverse("dashboard:rollout_detail", args=[said_project.slug, rollout_b.pk])
    assert f'{link}?from=0&amp;says=not%20enough#step-2">step 2</a>' in html
    hostile = _page(client, said_project, says="<script>").content.decode()
    assert "<script>alert" not in hostile
    assert "<mark>&lt;script&gt;</mark>alert(&#x27;x&#x27;)&lt;/script&gt;" in hostile
    plain = _page(client, said_project).content.decode()
    assert "First step that says it" not in plain


def test_the_rollout_page_marks_and_lists_the_steps_that_say_it(client, member, said_project):
    client.force_login(member)
    rollout = Trajectory.objects.get(project=said_project, external_id="b")
    url = reverse("dashboard:rollout_detail", args=[said_project.slug, rollout.pk])
    response = client.get(url, {"says": "café zürich"})
    assert response.context["said_steps"] == [0, 1]
    html = response.content.decode()
    assert html.count("says the searched text") == 2
    assert 'class="step said"' in html
    assert 'data-jump="1">#1</a>' in html
    # The long result that holds the text opens its folded content; others stay folded.
    long_response = client.get(url, {"says": "DEPOSIT"})
    assert "<details open>" in long_response.content.decode()
    assert "for a <mark>deposit</mark></pre>" in long_response.content.decode()
    assert "<details open>" not in client.get(url).content.decode()
    none = client.get(url, {"says": "zzz not said"}).content.decode()
    assert "No step of this rollout says “zzz not said”." in none
    hostile = Trajectory.objects.get(project=said_project, external_id="c")
    hostile_url = reverse("dashboard:rollout_detail", args=[said_project.slug, hostile.pk])
    escaped = client.get(hostile_url, {"says": "<script>"}).content.decode()
    assert "<script>alert" not in escaped
    assert "I read <mark>&lt;script&gt;</mark>alert(&#x27;x&#x27;)&lt;/script&gt;" in escaped


def test_the_rollout_page_marks_the_text_inside_a_calls_arguments(client, member, said_project):
    client.force_login(member)
    booked = Trajectory.objects.get(project=said_project, external_id="b")
    url = reverse("dashboard:rollout_detail", args=[said_project.slug, booked.pk])
    # Found in the arguments' JSON, where its quotes are written escaped.
    html = client.get(url, {"says": 'SAY "HI"'}).content.decode()
    assert '<pre class="tool-args">' in html
    assert "<mark>say \\&quot;hi\\&quot;</mark>" in html
    # Long arguments are folded; the step holding the text shows them open, escaped.
    sent = Trajectory.objects.get(project=said_project, external_id="e")
    url = reverse("dashboard:rollout_detail", args=[said_project.slug, sent.pk])
    html = client.get(url, {"says": "quarterly <b>"}).content.decode()
    assert '<details class="tool-args-fold" open>' in html
    assert "<mark>Quarterly &lt;b&gt;</mark>figures&lt;/b&gt; attached" in html
    assert '<details class="tool-args-fold" open>' not in client.get(url).content.decode()


def test_the_api_filters_by_what_a_step_says_and_refuses_bad_text(client, said_project):
    token = project_token_issue(project=said_project, name="ci")
    url = f"/api/v1/projects/{said_project.slug}/rollouts"

    def ids(**params):
        response = client.get(url, params, **auth(token))
        assert response.status_code == 200, response.content
        return sorted(row["external_id"] for row in response.json()["results"])

    assert ids(says="NOT enough") == ["a", "b"]
    assert ids(says="not enough", outcome="failure") == ["a"]
    for bad in ("x" * 201, "a\x00b"):
        response = client.get(url, {"says": bad}, **auth(token))
        assert response.status_code == 400
        assert "says" in response.json()["error"]


def test_the_export_command_takes_what_a_step_says(said_project):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "export_rollouts",
        "--project",
        said_project.slug,
        "--says",
        "gift card",
        stdout=out,
        stderr=err,
    )
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [record["id"] for record in records] == ["a"]


def test_a_capped_count_serves_its_pages_from_the_ids_it_read(said_project):
    rollouts = Trajectory.objects.filter(project=said_project).exclude(external_id="e")
    order = ORDERS["oldest"]
    under_cap = rollout_page(rollouts, order=order, params={}, count_cap=10, per_page=2)
    assert (under_cap.count, under_cap.is_capped, under_cap.num_pages) == (4, False, 2)
    assert [r.external_id for r in under_cap.object_list] == ["a", "b"]
    assert under_cap.has_next and not under_cap.has_previous
    second = rollout_page(rollouts, order=order, params={"page": "2"}, count_cap=10, per_page=2)
    assert [r.external_id for r in second.object_list] == ["c", "d"]
    assert second.has_previous and not second.has_next
    capped = rollout_page(rollouts, order=order, params={"page": "2"}, count_cap=2, per_page=1)
    assert (capped.count, capped.is_capped) == (3, True)
    assert [r.external_id for r in capped.object_list] == ["b"]
    assert capped.has_next
    # Past the ids the count read, the page is read by offset as before.
    beyond = rollout_page(rollouts, order=order, params={"page": "3"}, count_cap=2, per_page=1)
    assert [r.external_id for r in beyond.object_list] == ["c"]
    newest = rollout_page(rollouts, order=ORDERS["newest"], params={}, count_cap=10, per_page=3)
    assert [r.external_id for r in newest.object_list] == ["d", "c", "b"]


def test_the_snippet_examples_hold():
    assert doctest.testmod(snippets).failed == 0


def test_the_snippet_keeps_the_words_around_the_match():
    text = "word " * 40 + "the balance is not enough" + " more" * 40
    snippet = step_snippet(text, None, "Not Enough", width=30)
    assert snippet.match == "not enough"
    assert snippet.before.startswith("…") and snippet.after.endswith("…")
    assert len(snippet.before) <= 32 and len(snippet.after) <= 32
    assert not snippet.in_arguments
    lines = step_snippet("first line\n\n  second   line", None, "line second")
    assert lines.match == "line second"  # whitespace runs read as one space
    quoted = step_snippet("", {"note": 'say "hi"'}, 'say "hi"')
    assert (quoted.match, quoted.in_arguments) == ('say \\"hi\\"', True)
    missing = step_snippet("x" * 500, None, "absent", width=10)
    assert missing.match == "" and missing.before == "x" * 20 + "…"


@pytest.fixture
def wordy_project(project):
    """One rollout of 4,000 steps of 4 KB each (16 MB of text): a scan that takes
    milliseconds on either database, and text that no step holds."""
    steps = [
        {"role": "assistant", "content": f"step {i} " + "lorem ipsum " * 340} for i in range(4000)
    ]
    line = json.dumps({"id": "wordy", "outcome": "failure", "steps": steps}) + "\n"
    upload = ingest_bytes(project, line.encode(), "wordy.jsonl")
    assert upload.status == "done", upload.error_message
    return project


def test_a_search_past_its_deadline_is_stopped_and_the_page_says_to_narrow_it(
    client, member, wordy_project, monkeypatch
):
    from ingest import deadline

    client.force_login(member)
    monkeypatch.setattr(deadline, "STEP_SEARCH_SECONDS", 0.0)  # PostgreSQL: 1 ms
    response = _page(client, wordy_project, says="no step says this")
    html = response.content.decode()
    assert response.context["search_stopped_after"] == 0.0
    assert 'id="search-too-slow"' in html
    assert "“no step says this” read for 0 seconds without finishing" in html
    assert response.context["page"].object_list == []
    # Without a step search there is no deadline; the same page lists the rollout.
    assert _page_ids(client, wordy_project, q="wordy") == ["wordy"]
    monkeypatch.setattr(deadline, "STEP_SEARCH_SECONDS", 20.0)
    assert _page_ids(client, wordy_project, says="step 3999 lorem") == ["wordy"]


def test_the_deadline_ends_with_its_block(wordy_project):
    from django.db import connection

    from ingest.deadline import ReadTooSlow, read_deadline
    from ingest.models import Step

    with pytest.raises(ReadTooSlow), read_deadline(0.0):
        steps_saying("no step says this").exists()
    with read_deadline(30.0):
        assert not steps_saying("no step says this").exists()
    # After the block nothing limits a read: the handler is gone, the timeout reset.
    assert not steps_saying("no step says this either").exists()
    assert Step.objects.count() == 4000
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"


def test_the_api_answers_422_for_a_search_past_its_deadline(client, wordy_project, monkeypatch):
    from ingest import deadline

    token = project_token_issue(project=wordy_project, name="ci")
    url = f"/api/v1/projects/{wordy_project.slug}/rollouts"
    monkeypatch.setattr(deadline, "STEP_SEARCH_SECONDS", 0.0)
    response = client.get(url, {"says": "no step says this"}, **auth(token))
    assert response.status_code == 422
    assert response.json()["field"] == "says"
    assert "without finishing and was stopped; narrow it" in response.json()["error"]
    assert client.get(url, {"q": "wordy"}, **auth(token)).status_code == 200


def test_text_beyond_ascii_is_found_in_any_case_on_both_databases(said_project):
    # SQLite's LIKE folds ASCII letters only: "CAFÉ" did not find "Café" there.
    assert _ids(steps_saying("CAFÉ ZÜRICH")) == [("b", 0), ("b", 1)]
    assert _ids(steps_saying("café zürich")) == [("b", 0), ("b", 1)]
    assert _ids(steps_saying("ZÜRICH-NORD")) == []


def test_the_rollouts_page_finds_a_task_beyond_ascii_in_any_case(client, member, said_project):
    client.force_login(member)
    assert _page_ids(client, said_project, q="CAFÉ ZÜRICH") == ["b"]
    assert _page_ids(client, said_project, q="café") == ["b"]
    html = _page(client, said_project, says="CAFÉ").content.decode()
    assert "<mark>Café</mark>" in html  # the step's own case


def test_the_folded_match_examples_hold():
    from ingest import lookups

    assert doctest.testmod(lookups).failed == 0


def test_the_export_command_refuses_a_search_longer_than_the_pages_take(said_project):
    # It cut the text at 200 characters and searched for what was left, as the page did.
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--says: at most 200 characters"):
        call_command("export_rollouts", "--project", said_project.slug, "--says", "x" * 201)
    with pytest.raises(CommandError):
        call_command("export_rollouts", "--project", said_project.slug, "--outcome", "bogus")
