"""The OpenAPI schema and the browsable docs: the page and every file it references come
from this server (offline, no CDN) and it holds no inline script or style (the CSP)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

pytestmark = pytest.mark.django_db
DOCS = "/api/v1/docs"


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_scripts = 0
        self.styles = 0
        self.data_blocks: list[str] = []
        self._in_data = False

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        self.urls += [values[key] for key in ("src", "href") if values.get(key)]
        self.styles += tag == "style" or "style" in values
        if tag == "script" and not values.get("src"):
            if values.get("type") == "application/json":
                self._in_data = True
            else:
                self.inline_scripts += 1

    def handle_endtag(self, tag):
        self._in_data = False

    def handle_data(self, data):
        if self._in_data:
            self.data_blocks.append(data)


def _page(client):
    response = client.get(DOCS)
    assert response.status_code == 200
    parser = _References()
    parser.feed(response.content.decode())
    return response, parser


def test_it_serves_the_docs_page_and_every_file_it_references(client):
    _, page = _page(client)
    assert len(page.urls) == 4  # stylesheet, icon, Swagger UI, ninja's init script
    for url in page.urls:
        assert url.startswith("/api/v1/docs/assets/"), url
        asset = client.get(url)
        assert asset.status_code == 200 and len(b"".join(asset.streaming_content)) > 100, url


def test_it_points_swagger_ui_at_the_schema_served_here(client):
    _, page = _page(client)
    settings = json.loads(page.data_blocks[0])
    schema = client.get(settings["url"])
    assert settings["url"] == "/api/v1/openapi.json"
    assert schema.status_code == 200 and schema.json()["openapi"].startswith("3.")


def test_it_holds_no_inline_script_or_style_and_keeps_the_policy(client):
    response, page = _page(client)
    assert page.inline_scripts == 0 and page.styles == 0
    policy = response["Content-Security-Policy"]
    assert re.search(r"script-src 'self'(;|$)", policy) and "unsafe-inline" not in policy


def test_it_loads_nothing_from_another_host(client):
    response, page = _page(client)
    assert not re.search(rb"https?://", response.content)
    init = b"".join(client.get("/api/v1/docs/assets/swagger-ui-init.js").streaming_content)
    assert not re.search(rb"https?://", init)


def test_it_serves_only_swagger_uis_files(client):
    assert client.get("/api/v1/docs/assets/redoc.standalone.js").status_code == 404
    assert client.get("/api/v1/docs/assets/..%2F..%2F__init__.py").status_code == 404


def test_it_documents_the_bearer_token_on_every_operation(client):
    schema = client.get("/api/v1/openapi.json").json()
    schemes = schema["components"]["securitySchemes"]
    assert [s["scheme"] for s in schemes.values()] == ["bearer"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            assert operation.get("security"), f"{method} {path}"
