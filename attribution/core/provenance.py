"""Where a tool-argument value came from: the user, an observation, the context, or nowhere.

:class:`SeenSoFar` accumulates, step by step, what an agent could have read before it
acts (normalised: lower case, ``_`` and ``-`` as spaces, each step cut to
``HAYSTACK_CHARS``), and :meth:`SeenSoFar.source_of` looks an argument value up in it.
An agent's own earlier words are not a source for it: otherwise a value it made up
once would count as observed the second time.

Example:
    >>> seen = SeenSoFar("")
    >>> seen.add(FROM_USER, "My id is mia_li_3668; pay 100 now and 50 later")
    >>> seen.add(FROM_OBSERVATION, "", speaker="other")
    >>> [seen.source_of(v) for v in ("mia-li-3668", 150, "HAT999")]
    ['user', 'derived', 'invented']
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ingest.core.vocabulary import is_agent_action, is_user_turn

FROM_USER = "user"
FROM_OBSERVATION = "observation"
FROM_CONTEXT = "context"  # the system prompt or the task itself
DERIVED = "derived"  # a sum, difference, product or quotient of two numbers seen
INVENTED = "invented"
SOURCES = (FROM_USER, FROM_OBSERVATION, FROM_CONTEXT, DERIVED, INVENTED)
#: Each source as the words after "a value": "a value nobody provided".
ORIGIN_WORDS = {
    FROM_USER: "the user gave",
    FROM_OBSERVATION: "read from an earlier result",
    FROM_CONTEXT: "from the instructions",
    DERIVED: "computed from what it saw",
    INVENTED: "nobody provided",
}

# Each earlier step adds at most this much to the text an argument is looked up in: a
# pasted web page says what it says in its head, and the lookup stays linear.
HAYSTACK_CHARS = 5000
# Numbers are read further in than text: a number set grows by what a step holds and is
# looked up in constant time, and a web page's element ids or a table's figures sit
# anywhere in it (a browsing agent's click on element 4118 of a 40 kB page is no
# invention).
NUMBER_CHARS = 200_000
# Numbers seen, at most, for the sum-or-difference check (quadratic in this).
DERIVED_NUMBERS = 200
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


_AS_SPACE = str.maketrans({"_": " ", "-": " "})


def argument_origins(pairs: Any) -> list[tuple[str, str]]:
    """A step's ``(argument, source)`` pairs as a page says them.

    >>> argument_origins([["new", "invented"], ["path", "user"]])
    [('new', 'a value nobody provided'), ('path', 'a value the user gave')]
    """
    return [
        (name or "its argument", f"a value {ORIGIN_WORDS.get(source, source)}")
        for name, source in pairs
    ]


def normal(text: str) -> str:
    """Lower case, ``_`` and ``-`` as spaces, white space collapsed."""
    return " ".join((text or "").lower().translate(_AS_SPACE).split())


def numbers(text: str) -> list[float]:
    """The numbers of a text, as :func:`normal` leaves them: a ``-`` is a space there, so
    no number is negative, and as the pattern spans no letter or space the raw text gives
    the same numbers without normalising it first (a step of 200,000 characters).

    >>> numbers("gift_card_8190876 costs 1,234.50; rows 3-5"), numbers(normal("x-1"))
    ([8190876.0, 1234.5, 3.0, 5.0], [1.0])
    """
    return [_number(raw) for raw in _NUMBER.findall(text)]


def _number(raw: str) -> float:
    # The pattern leaves digits, commas and one decimal point: always a float.
    return float(raw.replace(",", ""))


_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
)  # fmt: skip
# An ISO date as :func:`normal` leaves it ("2025 04 04"), a time after it allowed.
_ISO_DATE = re.compile(r"^(\d{4}) (\d{2}) (\d{2})(?:[ t]\d{2}:\d{2}.*)?$")


def date_spellings(needle: str) -> list[str]:
    """How a person may have written the ISO date ``needle`` (as :func:`normal` leaves
    it): day and month in words, either order, the month whole or cut to three letters,
    the day with its ordinal ending; [] for anything else.

    >>> date_spellings(normal("2025-04-04"))[:4]
    ['4 april', 'april 4', '4 apr', 'apr 4']
    >>> "1st may" in date_spellings("2025 05 01"), date_spellings("next friday")
    (True, [])
    """
    match = _ISO_DATE.match(needle)
    if match is None or not 1 <= int(match.group(2)) <= 12:
        return []
    day, month = int(match.group(3)), _MONTHS[int(match.group(2)) - 1]
    ordinal = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}
    days = [str(day), f"{day}{ordinal.get(day, 'th')}"]
    spellings = []
    for written_day in days:
        for written_month in (month, month[:3]):
            spellings += [f"{written_day} {written_month}", f"{written_month} {written_day}"]
    return spellings


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in leaves(value[key], str(key))]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item, path)]
    return [(path, value)]


def arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"": raw} if raw.strip() else {}
    return raw if raw is not None else {}


# Argument names of text an agent writes rather than copies: a shell command, code, a
# patch, a search query, a calculator's expression, a file's new content, a thought. Such
# a value is composed from what the agent saw (a path, a figure) and has no source of its
# own, however short: "pytest test_dates.py" is not an invented value. Names are split at
# "_", "-" and case changes, so "new_str", "file_text" and "searchQuery" match.
_WRITTEN_NAME_WORDS = frozenset(
    {"command", "cmd", "code", "script", "patch", "diff", "query", "expression", "formula"}
    | {"content", "contents", "text", "body", "thought", "str", "snippet", "source", "sql"}
)
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# A number an argument so named holds is the agent's own choice of where to look or how
# much to take (a file's line, a page, a result count), not a fact with a source: a coding
# agent's ``open_file(line=40)`` read as "a value nobody provided" on every call.
_CHOSEN_NUMBER_WORDS = frozenset(
    {"line", "lines", "lineno", "offset", "limit", "page", "start", "end", "top", "k"}
    | {"max", "min", "size", "depth", "timeout", "row", "rows", "col", "column", "width"}
    | {"height", "retries", "seconds", "context", "before", "after", "skip", "first", "last"}
)
# Code by its syntax, whatever the argument is called (an edit tool's ``new``, a
# notebook's ``cell``): a call ``f(x)``, an assignment or comparison, a statement end, a
# block, a pipe or ``&&``, a shell variable or backticks. Only with a space in the value:
# a URL's ``?a=b`` or an id is copied whole, and "Hilton (Downtown)" is not a call.
_CODE_SYNTAX = re.compile(r"\w\(|[=;{}`|$]|&&|->")
# A word an argument so named holds is one of the tool's own options (which way to scroll,
# how to sort), not a fact with a source: a browser's ``scroll(direction="down")`` read as
# "a value nobody provided".
_CHOSEN_WORD_NAMES = frozenset(
    {"direction", "order", "sort", "mode", "format", "unit", "units", "method", "kind"}
    | {"type", "style", "level", "scope", "lang", "language", "encoding", "button", "key"}
)
# Argument names of an identifier: copied, never computed (with hundreds of numbers on a
# page, almost any id is a sum or a difference of two of them).
_IDENTIFIER_NAME_WORDS = frozenset({"id", "ids", "uuid", "index", "idx", "ref"})


def written(path: str) -> bool:
    """Whether an argument's name says its value is written text (code, a command, a query).

    >>> [written(n) for n in ("command", "new_str", "file_text", "searchQuery", "user_id")]
    [True, True, True, True, False]
    """
    return any(word.lower() in _WRITTEN_NAME_WORDS for word in _NAME_WORD.findall(path))


def _name_words(path: str) -> set[str]:
    return {word.lower() for word in _NAME_WORD.findall(path.rsplit(".", 1)[-1])}


def identifier(path: str) -> bool:
    """Whether an argument's name says it holds an identifier, which is copied, not computed.

    >>> [identifier(n) for n in ("element_id", "reservationId", "index", "amount", "width")]
    [True, True, True, False, False]
    """
    return bool(_name_words(path) & _IDENTIFIER_NAME_WORDS)


def traceable(value: Any, path: str = "") -> bool:
    """Whether an argument value is specific enough that its source can be told.

    >>> [traceable(v) for v in ("HAT001", "New York", 1416, "please cancel my trip today")]
    [True, True, True, False]
    >>> traceable("pytest test_dates.py", "command"), traceable("a = 1" + chr(10) + "b = 2")
    (False, False)
    >>> [traceable(v, "new") for v in ("return normalise(x)", "Hilton (Downtown)", "a?b=c")]
    [False, True, True]
    >>> traceable(240, "line"), traceable(20, "max_results"), traceable(240, "amount")
    (False, False, True)
    >>> traceable("down", "direction"), traceable("economy", "cabin")
    (False, True)
    """
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return abs(value) > 1 and not _name_words(path) & _CHOSEN_NUMBER_WORDS
    text = str(value).strip()
    if written(path) or "\n" in text:
        return False
    if _name_words(path) & _CHOSEN_WORD_NAMES and text.replace("_", "").isalpha():
        return False
    if " " in text and _CODE_SYNTAX.search(text):
        return False
    # Free text (a reason, a message to send) is written, not copied: it has no source.
    return len(text) >= 3 and len(text.split()) < 4


def _derived(recent: np.ndarray, number: float) -> bool:
    """Whether ``number`` is a sum, difference, product or quotient of two seen numbers (a
    quotient to the cent: a per-day budget is the total over the days, rounded).

    >>> seen = np.array([1414.0, 2.0, 3.0])
    >>> [_derived(seen, n) for n in (1416, 707, 471.33, 2828, 500)]
    [True, True, True, True, False]
    """
    if not len(recent):
        return False
    left, right = recent[:, None], recent[None, :]
    if np.isclose(left + right, number).any() or np.isclose(left - right, number).any():
        return True
    if np.isclose(left * right, number).any():
        return True
    quotients = left / np.where(right != 0, right, np.nan)  # no quotient by zero
    return bool(np.isclose(quotients, number, rtol=0.0, atol=0.005 + 1e-9).any())


class SeenSoFar:
    """What the agent could have seen before a step, by source, normalised.

    Texts and the numbers in them are kept per source (and per speaking agent), so a
    lookup reads each source once and never re-parses what came before.
    """

    def __init__(self, task_text: str) -> None:
        self.texts = {FROM_USER: "", FROM_OBSERVATION: "", FROM_CONTEXT: ""}
        self.number_sets: dict[str, set[float]] = {source: set() for source in self.texts}
        self.said: dict[str, str] = {}  # what each agent said: an observation for the others
        self.said_numbers: dict[str, set[float]] = {}
        self.task = normal(task_text[:HAYSTACK_CHARS])
        self.task_numbers = set(numbers(self.task))
        self.numbers: list[float] = []
        self.has_user = False

    def add(self, source: str, text: str, *, speaker: str = "") -> None:
        head = normal((text or "")[:HAYSTACK_CHARS])
        # A page or a table repeats its figures: each distinct one is converted once.
        raws = _NUMBER.findall((text or "")[:NUMBER_CHARS])
        found = {_number(raw) for raw in set(raws)}
        if speaker:
            self.said[speaker] = self.said.get(speaker, "") + " " + head
            self.said_numbers.setdefault(speaker, set()).update(found)
        else:
            self.texts[source] += " " + head
            self.number_sets[source].update(found)
        self.numbers.extend(_number(raw) for raw in raws[:50])
        self.has_user = self.has_user or source == FROM_USER

    def _texts(self, agent: str) -> list[tuple[str, str]]:
        others = [(FROM_OBSERVATION, text) for who, text in self.said.items() if who != agent]
        return [*self.texts.items(), *others]

    def _number_sets(self, agent: str) -> list[tuple[str, set[float]]]:
        others = [(FROM_OBSERVATION, s) for who, s in self.said_numbers.items() if who != agent]
        return [*self.number_sets.items(), *others]

    def source_of(self, value: Any, agent: str = "", *, derivable: bool = True) -> str:
        """Where a value came from, for ``agent``: its own earlier words do not count.
        With ``derivable`` False (an identifier) a number is never a sum of two seen."""
        needle = normal(str(value))
        if isinstance(value, (int, float)) or _NUMBER.fullmatch(needle or "x"):
            number = float(str(value).replace(",", ""))
            for source, found in self._number_sets(agent):
                if number in found:
                    return source
            if not self.has_user and number in self.task_numbers:
                return FROM_USER
            if derivable and _derived(np.array(self.numbers[-DERIVED_NUMBERS:]), number):
                return DERIVED
            return INVENTED
        for source, text in self._texts(agent):
            if needle and needle in text:
                return source
        if not self.has_user and needle and needle in self.task:
            return FROM_USER  # an autonomous agent's task text is its user's request
        spellings = date_spellings(needle)
        if spellings:
            # A date the agent wrote in the tool's form ("2025-04-04") of one it was told
            # in words ("Friday 4 April"): a conversion, not an invention.
            spelled = re.compile("|".join(rf"(?<!\w){re.escape(v)}(?!\w)" for v in spellings))
            for source, text in self._texts(agent):
                if spelled.search(text):
                    return source
            if not self.has_user and spelled.search(self.task):
                return FROM_USER
        return INVENTED

    def supports(self, fact: str, agent: str = "") -> bool:
        """Whether a claimed fact appears in what the agent saw (or in the task)."""
        needle = normal(fact.strip('"'))
        return any(needle in text for _, text in self._texts(agent)) or needle in self.task


def source_of_step(step: Any) -> str:
    """What a step that is no agent action is to the agents: the instructions (a system
    step), the user's words, or an observation (a tool result, another party)."""
    if step.kind == "system" or step.role == "system":
        return FROM_CONTEXT
    return FROM_USER if is_user_turn(step) else FROM_OBSERVATION


def observe(seen: SeenSoFar, step: Any) -> None:
    """Add what ``step`` shows the agents: a message an agent writes is an observation for
    the others (never a source for itself); a tool call adds nothing."""
    if not is_agent_action(step):
        seen.add(source_of_step(step), step.content or "")
    elif step.kind != "tool_call":
        seen.add(FROM_OBSERVATION, step.content or "", speaker=step.agent or step.role or "")


def unsupported_arguments(
    steps: Any, stop: int, call: Any, *, task_text: str = ""
) -> list[tuple[str, Any]]:
    """The ``(argument, value)`` pairs of ``call`` that nothing before position ``stop`` of
    ``steps`` (nor the task) holds, for the agent making the call.

    >>> from types import SimpleNamespace as S
    >>> seen = [S(kind="tool_result", role="tool", agent="", content="Found HAT001")]
    >>> call = S(kind="tool_call", agent="a", role="assistant", tool_args={"id": "HAT001"})
    >>> unsupported_arguments(seen, 1, call), unsupported_arguments(seen, 0, call)
    ([], [('id', 'HAT001')])
    """
    seen = SeenSoFar(task_text)
    for step in steps[:stop]:
        observe(seen, step)
    agent = call.agent or call.role or ""
    return [
        (path, value)
        for path, value in leaves(arguments(call.tool_args))
        if traceable(value, path)
        and seen.source_of(value, agent, derivable=not identifier(path)) == INVENTED
    ]
