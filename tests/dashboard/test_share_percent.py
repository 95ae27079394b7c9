from __future__ import annotations

import doctest

import dashboard.templatetags.faultline as tags


def test_it_shows_a_share_too_small_to_round_as_under_one_percent():
    assert tags.share_percent(0.0041) == "<1%"
    assert tags.share_percent(0.006) == "1%"
    assert tags.share_percent(0.109) == "11%"
    assert tags.share_percent(0.0) == "0%"


def test_its_examples_hold():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(tags.share_percent, "share_percent"):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
