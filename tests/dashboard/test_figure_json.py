"""The figures' JSON filter writes exactly what Django's json_script writes."""

from __future__ import annotations

from django.utils.html import json_script

from dashboard.templatetags.faultline import figure_json

HOSTILE = {
    "text": "</script><script>alert(1)</script> & <b>bold</b> \u2028 'q' \"dq\"",
    "numbers": [0.1, 1e-9, 3],
    "nested": {"<k>": ["&amp;", None, True]},
}


def test_it_writes_what_json_script_writes():
    assert figure_json(HOSTILE, "fig-1") == json_script(HOSTILE, "fig-1")


def test_it_escapes_the_element_id():
    assert figure_json([], '"><x') == json_script([], '"><x')
