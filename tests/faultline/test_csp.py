"""The Content-Security-Policy header and the plotly hashes it allows."""

from __future__ import annotations

import base64
import hashlib
import json
import re

import pytest
from django.conf import settings

pytestmark = pytest.mark.django_db


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _plotly_run_time_styles() -> dict[str, str]:
    """The styles plotly.min.js adds at run time, read from the installed file itself."""
    source = (settings.PLOTLY_JS_DIR / "plotly.min.js").read_text(encoding="utf-8")
    declarations = re.search(r"CSS_DECLARATIONS=(\[\[.*?\]\]);", source)
    maplibre = re.search(r"textContent='(\.maplibregl-map\{(?:[^'\\]|\\.)*)'", source)
    assert declarations and maplibre, "plotly.min.js changed how it adds styles: re-measure"
    assert "\\" not in maplibre.group(1)  # the hash below is of the literal as written
    image_rendering = "".join(": ".join(pair) + "; " for pair in json.loads(declarations[1]))
    return {"empty": "", "maplibre css": maplibre.group(1), "heatmap": image_rendering}


def test_it_allows_exactly_the_styles_the_installed_plotly_adds():
    expected = [_csp_hash(text) for text in _plotly_run_time_styles().values()]
    assert expected == settings.PLOTLY_STYLE_HASHES


def test_it_sends_a_policy_without_inline_script_or_eval(client):
    policy = client.get("/login/")["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'" and directives["object-src"] == "'none'"
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy


def test_it_sends_frame_denial_nosniff_and_the_referrer_policy(client):
    response = client.get("/login/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


def test_it_adds_eval_only_to_the_webgl_map_page(client, member, project):
    client.force_login(member)
    map_policy = client.get(f"/p/{project.slug}/misbehaviours/map/")["Content-Security-Policy"]
    list_policy = client.get(f"/p/{project.slug}/misbehaviours/")["Content-Security-Policy"]
    assert "script-src 'self' 'unsafe-eval'" in map_policy
    assert "'unsafe-eval'" not in list_policy
