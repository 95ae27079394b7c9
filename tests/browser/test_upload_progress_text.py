"""The uploads page's progress line counts in the singular for one ("1 rollout, 1 step"):
static/js/upload.js driven in headless Chromium against answers routed in the test."""

from __future__ import annotations

import json

import pytest

from tests.services import REPO_ROOT

pytestmark = pytest.mark.browser

ORIGIN = "http://faultline.test"
PAGE = """<!doctype html><form id="upload-form" method="post" action="/upload">
<input type="hidden" name="csrfmiddlewaretoken" value="t"><div id="dropzone">
<input type="file" name="files" id="files" multiple></div><select id="format">
<option value="">detect</option></select><button type="submit">Upload</button>
<ul id="upload-progress"></ul></form><script src="/upload.js"></script>"""


def _progress_text(chromium, *, created: bool, trajectories: int, steps: int) -> str:
    """The session's browser (tests/browser/conftest.py): a second Playwright in the same
    process fails inside the first one's event loop."""
    upload = {"id": 1, "status": "done", "created": created, "trajectories": trajectories,
              "steps": steps, "status_url": "/status", "error": "",
              "progress": {"done": 1, "total": 1, "percent": 100}}  # fmt: skip
    answers = {
        "/page": ("text/html; charset=utf-8", PAGE),
        "/upload.js": (
            "text/javascript; charset=utf-8",
            (REPO_ROOT / "static/js/upload.js").read_text(),
        ),
        "/upload": ("application/json", json.dumps({"uploads": [upload]})),
        "/status": ("application/json", json.dumps(upload)),
    }

    def answer(route):
        path = route.request.url.removeprefix(ORIGIN).split("?")[0]
        content_type, body = answers.get(path, ("text/html", "<div id='all-uploads'></div>"))
        route.fulfill(status=200, content_type=content_type, body=body)

    page = chromium.new_page()
    try:
        page.route(f"{ORIGIN}/**", answer)
        page.goto(f"{ORIGIN}/page")
        page.set_input_files(
            "#files", files=[{"name": "one.jsonl", "mimeType": "text/plain", "buffer": b"{}"}]
        )
        page.click("button[type=submit]")
        page.wait_for_selector(".upload-item[data-state=done]", timeout=15_000)
        return page.locator(".upload-item [data-role=status]").inner_text()
    finally:
        page.close()


def test_it_says_1_rollout_and_1_step(chromium):
    # created=False with status done would say "already uploaded": this one is new.
    assert (
        _progress_text(chromium, created=True, trajectories=1, steps=1)
        == "done · 1 rollout, 1 step"
    )


def test_it_says_rollouts_and_steps_for_more_than_one(chromium):
    text = _progress_text(chromium, created=True, trajectories=7, steps=40)
    assert text == "done · 7 rollouts, 40 steps"


def test_it_says_1_rollout_for_a_file_already_uploaded(chromium):
    text = _progress_text(chromium, created=False, trajectories=1, steps=3)
    assert text == "already uploaded · 1 rollout"


def test_it_sends_the_agent_system_typed_with_each_file(chromium):
    sent: list[str] = []
    page_html = PAGE.replace(
        "<button", '<input type="text" id="agent-system" name="agent_system"><button'
    )
    upload = {"id": 1, "status": "done", "created": True, "trajectories": 1, "steps": 1,
              "status_url": "/status", "error": "",
              "progress": {"done": 1, "total": 1, "percent": 100}}  # fmt: skip

    def answer(route):
        path = route.request.url.removeprefix(ORIGIN).split("?")[0]
        if path == "/upload":
            sent.append(route.request.post_data or "")
        body = {
            "/page": ("text/html; charset=utf-8", page_html),
            "/upload.js": ("text/javascript", (REPO_ROOT / "static/js/upload.js").read_text()),
            "/upload": ("application/json", json.dumps({"uploads": [upload]})),
            "/status": ("application/json", json.dumps(upload)),
        }.get(path, ("text/html", "<div id='all-uploads'></div>"))
        route.fulfill(status=200, content_type=body[0], body=body[1])

    page = chromium.new_page()
    try:
        page.route(f"{ORIGIN}/**", answer)
        page.goto(f"{ORIGIN}/page")
        page.fill("#agent-system", "checkout-coder")
        page.set_input_files(
            "#files", files=[{"name": "one.traj", "mimeType": "text/plain", "buffer": b"{}"}]
        )
        page.click("button[type=submit]")
        page.wait_for_selector(".upload-item[data-state=done]", timeout=15_000)
    finally:
        page.close()
    assert len(sent) == 1
    assert 'name="agent_system"\r\n\r\ncheckout-coder\r\n' in sent[0]
