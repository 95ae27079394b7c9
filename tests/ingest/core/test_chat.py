"""Whether a tool's output reports an error, for the readers whose format has no exit code."""

from __future__ import annotations

import pytest

from ingest.core.chat import closes_with_error, looks_like_error


@pytest.mark.parametrize(
    "output",
    [
        "collected 14 items\n\n======= 1 failed, 13 passed in 0.87s =======\n",
        "1 failed, 13 passed in 0.87s",
        "==================== 2 errors in 0.30s ====================",
        "Collecting x\nERROR: No matching distribution found for x",
        "error: pip install exited with status 1; tests were not run",
        "Ran 3 tests in 0.001s\n\nFAILED (failures=1)",
        "Traceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'a'",
        "Traceback (most recent call last):\n  ...\nrequests.exceptions.ConnectionError: boom",
        "Traceback (most recent call last):\n  ...\nAssertionError",
    ],
)
def test_it_reads_a_failure_on_the_last_line(output):
    assert closes_with_error(output)


@pytest.mark.parametrize(
    "output",
    [
        "",
        "==================== 5 passed in 0.12s ====================",
        "==================== 1 passed, 1 xfailed in 0.12s ====================",
        "AUTHORS.rst\nerrors.py\nsetup.py",
        # Code being viewed mentions errors without closing on one: numbered, indented, a diff.
        "[File: a.py (2 lines total)]\n1:class ParseError(Exception):\n2:    raise ParseError('x')",
        "def check(value):\n    raise ValueError('error: bad value')",
        "-    return value\n+    raise KeyError(key)",
        "class ParseError(Exception):",
        "Errors: 0",
        "ERROR: could not connect\nRetrying... connected.\nDone.",
    ],
)
def test_it_does_not_flag_output_that_does_not_close_on_a_failure(output):
    assert not closes_with_error(output)


def test_it_reads_only_the_last_line_not_the_head():
    # The head is looks_like_error's: the two together say what a reader flags.
    output = "Error: cache miss, fetched again\nresult: 42"
    assert looks_like_error(output) and not closes_with_error(output)
