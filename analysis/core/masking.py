"""Masking the task's entities out of step text before it is embedded or named.

A misbehaviour is a way of acting ("books without asking", "retries the same failing
call"), not a task topic; yet the words that set one step's text apart from another's
are mostly the task's own: reservation codes, people, cities, amounts, dates. Left in,
they split one behaviour into one cluster per task and end up in the names ("hxdubj").
:func:`mask_text` replaces them with a few fixed placeholders:

``<url>`` ``<email>`` ``<id>`` (uuids, hex, tokens that mix letters and digits, and
capitalised codes in prose like ``HXDUBJ``, ``IAH`` or ``AAPL``) ``<date>`` (dates and
times) ``<amount>`` (money) ``<num>`` ``<quoted>`` (a quoted value, not a JSON key)
``<name>`` (capitalised words inside a sentence) and ``<task-word>`` (a word of this
rollout's own task text that is rare across the project's tasks, see
:class:`TaskVocabulary`).

Example:
    >>> mask_text("Reservation HXDUBJ for Mia Li costs $1,250.50 on 2024-05-15.")
    'Reservation <id> for <name> costs <amount> on <date>.'
    >>> mask_text("user_id=mia_li_3668, cabin=economy", task_words={"mia", "li"})
    'user_id=<task-word>_<task-word>_<id>, cabin=economy'
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from ingest.core.vocabulary import MUTATING_VERBS, PROPER_NOUN, READ_ONLY_VERBS

URL = "<url>"
EMAIL = "<email>"
ID = "<id>"
DATE = "<date>"
AMOUNT = "<amount>"
NUMBER = "<num>"
QUOTED = "<quoted>"
NAME = "<name>"
TASK_WORD = "<task-word>"
PLACEHOLDERS = (URL, EMAIL, ID, DATE, AMOUNT, NUMBER, QUOTED, NAME, TASK_WORD)

#: A task word is an entity when it occurs in less than this share of the project's task
#: texts: the words every task shares ("reservation", "flight") describe the domain and
#: the behaviour, the rare ones (a surname, a city, a product) describe one task.
TASK_WORD_SHARE = 0.05
#: ...and in fewer than this many task texts, so a project of a handful of tasks still
#: masks what is unique to one task.
TASK_WORD_MIN_TASKS = 2

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
    r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
# One alternation, tried left to right at each position, so a date is never also
# split into numbers and an amount never loses its currency sign. Every alternative
# starts at a word boundary or with a currency sign or a quote: the leading lookahead
# says so once, so a position inside a word fails one test instead of ten (masking was
# half of a 100k-step clustering; this made it 1.7 times faster, with the same output).
_STRUCTURED = re.compile(
    r"(?=\b|[$€£¥\"'])(?:"
    + "|".join(
        (
            r"(?P<url>\b(?:https?|ftp)://[^\s<>\"')\]]+|\bwww\.[^\s<>\"')\]]+)",
            r"(?P<email>\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b)",
            r"(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)",
            r"(?P<hex>\b0x[0-9a-fA-F]+\b)",
            r"(?P<date>\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
            r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b"
            rf"|\b{_MONTH}\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b"
            rf"|\b\d{{1,2}}(?:st|nd|rd|th)? {_MONTH}(?:,? \d{{4}})?\b"
            r"|\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?\b"
            r"|\b\d{1,2}\s?[AaPp][Mm]\b)",
            r"(?P<amount>[$€£¥]\s?\d[\d,]*(?:\.\d+)?"
            r"|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars?|euros?|pounds?)\b)",
            r"(?P<quoted>(?<![\w\"])\"[^\"\n]{1,80}\"(?!\s*:)|(?<![\w'])'[^'\n]{1,80}'(?![A-Za-z]|\s*:))",
            # Tokens mixing letters and digits (HAT030, gift_card_8190876, gpt-4o): masked
            # per segment so the descriptive part ("gift_card_") survives.
            r"(?P<mixed>\b(?=[\w-]*[A-Za-z])(?=[\w-]*\d)[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*\b)",
            r"(?P<number>\b\d[\d,]*(?:\.\d+)?\b)",
        )
    )
    + ")"
)
# Runs of capitalised words: one or two in prose are codes (booking codes "HXDUBJ",
# airports "IAH to SFO", tickers, agencies, states); three or more are a shouted heading
# ("GIVEN OR VERIFIED FACTS"), which is kept.
_CAPS_RUN = re.compile(r"\b[A-Z]{2,}\b(?:[ \t]+[A-Z]{2,}\b)*")
_CODE_LENGTHS = range(2, 7)
_HEADING_WORDS = 3
# Capitalised words of code length that name no task entity: formats, protocols, parts
# of a program or a form, and shouted words (stop words and action verbs are kept too).
_NOT_CODES = frozenset(
    {"ID", "IDS", "API", "URL", "URI", "CSV", "PDF", "JSON", "HTML", "XML", "YAML", "SQL"}
    | {"HTTP", "UI", "AI", "LLM", "GPT", "OCR", "OK", "CLI", "CPU", "GPU", "RAM", "OS"}
    | {"EOF", "FAQ", "PY", "SH", "ENV", "ARGV", "AM", "PM", "DOB", "ZIP", "TODO", "NOTE"}
    | {"WARN", "INFO", "ERROR", "DEBUG", "TRUE", "FALSE", "NULL", "NONE", "YES", "NO"}
    | {"DONE", "STOP", "PASS", "FAIL", "END", "START", "FINAL", "PYTHON", "SYSTEM"}
    | {"STATUS", "FAILED", "PASSED", "ERRORS", "RESULT", "OUTPUT", "NOTICE", "REPORT"}
    | {"ANSWER", "FINISH", "ACTION", "SELECT", "INSERT", "RETURN"}
)
_SEGMENT = re.compile(r"[A-Za-z0-9]+|[_-]")
_NOT_NAMES = frozenset(
    {"I", "I'm", "Ok", "Okay", "Yes", "No", "Please", "Thanks", "Thank", "Error", "Note"}
    | {"True", "False", "None", "Null", "Python", "Json", "Api", "Here", "The", "This"}
)
_TASK_TOKEN = re.compile(r"[A-Za-z]+")
# Words never masked as task words, even if a task text has them: they name actions.
_ACTION_WORDS = MUTATING_VERBS | READ_ONLY_VERBS
_STOP_WORDS: frozenset[str] | None = None


def _stop_words() -> frozenset[str]:
    global _STOP_WORDS
    if _STOP_WORDS is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        # Function words scikit-learn's list lacks: no task is about them.
        extra = {"does", "did", "doing", "don", "doesn", "isn", "wasn", "won", "just", "let"}
        _STOP_WORDS = frozenset(ENGLISH_STOP_WORDS | extra)
    return _STOP_WORDS


def _mixed(token: str) -> str:
    return "".join(
        ID if piece not in "_-" and any(c.isdigit() for c in piece) else piece
        for piece in _SEGMENT.findall(token)
    )


def _structured(match: re.Match[str]) -> str:
    kind = match.lastgroup
    text = match.group(0)
    if kind in ("uuid", "hex"):
        return ID
    if kind == "mixed":
        return _mixed(text)
    return {
        "url": URL,
        "email": EMAIL,
        "date": DATE,
        "amount": AMOUNT,
        "quoted": QUOTED,
        "number": NUMBER,
    }.get(kind or "", text)


def _code(word: str) -> str:
    if (
        len(word) not in _CODE_LENGTHS
        or word in _NOT_CODES
        or word.lower() in _stop_words()
        or word.lower() in _ACTION_WORDS
    ):
        return word
    return ID


def _caps_run(match: re.Match[str]) -> str:
    run = match.group(0)
    if len(run.split()) >= _HEADING_WORDS:
        return run
    return re.sub(r"[A-Z]+", lambda word: _code(word.group(0)), run)


def task_words(text: str) -> set[str]:
    """The content words of a task text, lower-cased (stop words and action verbs left out).

    >>> sorted(task_words("Please cancel my trip to Cologne, I am Mia."))
    ['cologne', 'mia', 'trip']
    """
    stop = _stop_words()
    return {
        word
        for word in (token.lower() for token in _TASK_TOKEN.findall(text or ""))
        if len(word) >= 2 and word not in stop and word not in _ACTION_WORDS
    }


@dataclass
class TaskVocabulary:
    """How many of the project's task texts hold each word, to tell entities from domain.

    >>> vocabulary = TaskVocabulary.from_texts(
    ...     ["cancel my reservation, I am mia"] + ["cancel my reservation"] * 29)
    >>> sorted(vocabulary.entities("cancel the reservation for mia"))
    ['mia']
    """

    tasks: int = 0
    document_frequency: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> TaskVocabulary:
        vocabulary = cls()
        for text in texts:
            vocabulary.tasks += 1
            vocabulary.document_frequency.update(task_words(text))
        return vocabulary

    def entities(self, task_text: str) -> set[str]:
        """The words of this task text that are rare across the project's tasks."""
        limit = max(TASK_WORD_MIN_TASKS, TASK_WORD_SHARE * self.tasks)
        return {
            word for word in task_words(task_text) if self.document_frequency.get(word, 1) < limit
        }


def mask_text(text: str, *, task_words: Collection[str] = ()) -> str:
    """The text with task entities replaced by placeholders (see the module docstring).

    ``task_words`` (lower case) are masked wherever they occur as a whole word, also
    inside snake_case identifiers.

    >>> mask_text('Error: "Lisbon" not found at https://x.org/a?b=1 (mail a.b@c.de)')
    'Error: <quoted> not found at <url> (mail <email>)'
    >>> mask_text('{"status": "cancelled", "count": 3}')
    '{"status": <quoted>, "count": <num>}'
    >>> mask_text("Sure. Flights from Boston to New York at 10:30 am")
    'Sure. Flights from <name> to <name> at <date>'
    >>> mask_text("IAH to SFO, your user ID please. TASK GIVEN BY MANAGER")
    '<id> to <id>, your user ID please. TASK GIVEN BY MANAGER'
    """
    if not text:
        return ""
    masked = _STRUCTURED.sub(_structured, text)
    masked = _CAPS_RUN.sub(_caps_run, masked)
    masked = PROPER_NOUN.sub(
        lambda match: match.group(0) if match.group(0) in _NOT_NAMES else NAME, masked
    )
    if task_words:
        masked = _task_word_pattern(frozenset(word.lower() for word in task_words)).sub(
            _task_word, masked
        )
    return masked


@lru_cache(maxsize=4096)
def _task_word_pattern(words: frozenset[str]) -> re.Pattern[str]:
    """A placeholder, or one of ``words`` as a whole run of letters (any case): only those
    reach the replacement, instead of every word of the text (the words of one rollout's
    task are the same for each of its steps, so the pattern is compiled once per rollout)."""
    alternatives = "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))
    return re.compile(
        rf"(?-i:<[a-z][a-z-]*>)|(?<![A-Za-z])(?:{alternatives})(?![A-Za-z])", re.I | re.A
    )


def _task_word(match: re.Match[str]) -> str:
    word = match.group(0)
    return word if word.startswith("<") else TASK_WORD


def strip_placeholders(text: str) -> str:
    """The text without placeholders, for names: runs of them become one ellipsis.

    >>> strip_placeholders("reservation <id> for <name> <name> not found")
    'reservation … for … not found'
    """
    pattern = "|".join(re.escape(p) for p in (*PLACEHOLDERS, "<*>"))
    collapsed = re.sub(rf"(?:(?:{pattern})[\s_,.:;-]*)+", "… ", text)
    collapsed = re.sub(r"\s+", " ", collapsed)
    return re.sub(r"(?:… ?)+(?=[)\]]|$)", "…", collapsed).strip()
