"""The figures' JSON filter writes exactly what Django's json_script writes, of the figure
with its text escaped for plotly."""

from __future__ import annotations

from django.utils.html import json_script

from dashboard.plotly_text import escape_figure_text
from dashboard.templatetags.faultline import figure_json

HOSTILE = {
    "text": "</script><script>alert(1)</script> & <b>bold</b> \u2028 'q' \"dq\"",
    "numbers": [0.1, 1e-9, 3],
    "nested": {"<k>": ["&amp;", None, True]},
}


def test_it_writes_what_json_script_writes():
    assert figure_json(HOSTILE, "fig-1") == json_script(escape_figure_text(HOSTILE), "fig-1")


def test_it_escapes_the_element_id():
    assert figure_json([], '"><x') == json_script([], '"><x')


def test_trace_text_reaches_plotly_as_text_not_markup():
    figure = {
        "data": [
            {
                "type": "treemap",
                "ids": ["m:<1>"],
                "parents": ["category:<x>"],
                "labels": ["<a href='https://phish.example/'>win</a> & <b>bold</b>"],
                "customdata": [["/p/x/rollouts/?a=1&b=2", "<span style='x'>agent</span>"]],
                "texttemplate": "%{label}<br>%{value:.1f}%",
                "text": ["58%<br>116/200"],
            }
        ],
        "layout": {"yaxis": {"ticktext": ["<i>lane</i>"]}, "title": {"text": "Who&When"}},
    }
    trace = escape_figure_text(figure)["data"][0]
    assert trace["labels"] == [
        "&lt;a href='https://phish.example/'&gt;win&lt;/a&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"
    ]
    # A click opens customdata[0]: its & stays; its markup does not.
    assert trace["customdata"] == [
        ["/p/x/rollouts/?a=1&b=2", "&lt;span style='x'&gt;agent&lt;/span&gt;"]
    ]
    assert trace["texttemplate"] == "%{label}<br>%{value:.1f}%"  # Faultline's own markup
    assert trace["text"] == ["58%<br>116/200"]  # a line break restyles nothing
    assert (trace["ids"], trace["parents"]) == (["m:<1>"], ["category:<x>"])  # never drawn
    layout = escape_figure_text(figure)["layout"]
    assert layout["yaxis"]["ticktext"] == ["&lt;i&gt;lane&lt;/i&gt;"]
    assert layout["title"]["text"] == "Who&amp;When"


def test_the_module_examples_hold():
    import doctest

    from dashboard import plotly_text

    assert doctest.testmod(plotly_text).failed == 0
