"""The error a step drew, reduced to a message template mined across the project.

"Error: gift card balance is not enough" is one behaviour's symptom in every task it
happens in, but its variants carry amounts, ids and names. Each error text is first cut
to its telling line (the exception line of a traceback, else the first line that says
what went wrong) and masked (:func:`analysis.core.masking.mask_text`); then drain3's
Drain miner groups the masked lines of the whole project and replaces the tokens that
vary within a group by ``<*>``. Drain runs in memory with a configuration built here (no
``drain3.ini``, no persistence). Its result depends on the order it sees messages in, so
the distinct lines are fed sorted: the same set of errors always gives the same
templates.

Example:
    >>> templates = ErrorTemplates().fit([
    ...     "Error: user alice not found", "Error: user bob not found",
    ...     "Error: gift card balance is not enough (gift_card_8190876)"])
    >>> templates.template("Error: user carol not found")
    'Error: user <*> not found'
    >>> templates.template("Error: gift card balance is not enough (gift_card_77)")
    'Error: gift card balance is not enough (gift_card_<id>)'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from analysis.core.masking import mask_text

#: Drain's similarity threshold: the share of tokens two lines of the same length must
#: share to be one template. drain3's default; lower merges unrelated short errors.
SIMILARITY = 0.4
#: Drain's parse-tree depth (drain3's default): the first ``DEPTH - 2`` tokens route a line.
DEPTH = 4
TEMPLATE_CHARS = 160
READ_CHARS = 2000

_EXCEPTION_LINE = re.compile(r"^[\w.]*(Error|Exception|Exit|Interrupt)\b.*")
_TELLING = re.compile(
    r"\berror\b|\bexception\b|\bfailed\b|\bfailure\b|not found|\binvalid\b|\bcannot\b|"
    r"\bunable\b|\bdenied\b|\bnot enough\b|\bdoes not\b|timed? ?out",
    re.IGNORECASE,
)
_EXIT_ONLY = re.compile(r"^exitcode: \d+ \(execution (failed|succeeded)\)$", re.IGNORECASE)


# Where a JSON error body keeps its message: {"error": "..."}, {"error": {"message": ...}},
# {"detail": "..."}. Masking would read the whole message as one quoted string.
_MESSAGE_KEYS = ("error", "message", "detail", "error_message", "msg", "reason", "description")


def json_message(text: str) -> str | None:
    """The message of an error sent as a JSON object, or None when the text is not one.

    >>> json_message('{"error": "ReadTimeout: no response after 30s", "code": 504}')
    'ReadTimeout: no response after 30s'
    >>> json_message('{"error": {"type": "invalid_request", "message": "bad id"}}')
    'bad id'
    >>> json_message('Error: not JSON') is None
    True
    """
    stripped = (text or "").strip()
    if not stripped.startswith("{"):
        return None
    try:
        value: Any = json.loads(stripped[:READ_CHARS])
    except ValueError:
        return None
    for _ in range(3):  # {"error": {"message": ...}} and the like, not deeper
        if not isinstance(value, dict):
            break
        inner = next((value[key] for key in _MESSAGE_KEYS if value.get(key)), None)
        if inner is None:
            return None
        if isinstance(inner, str):
            return inner
        value = inner
    return None


def telling_line(text: str) -> str:
    """The line of an error text that says what went wrong.

    >>> telling_line("Traceback (most recent call last):\\n  File 'a.py'\\nKeyError: 'x'")
    "KeyError: 'x'"
    >>> telling_line("exitcode: 1 (execution failed)\\nCode output: \\nNameError: rows")
    'NameError: rows'
    >>> telling_line('{"error": "ReadTimeout: no response after 30s"}')
    'ReadTimeout: no response after 30s'
    """
    text = json_message(text) or text
    lines = [line.strip() for line in (text or "")[:READ_CHARS].splitlines() if line.strip()]
    if not lines:
        return ""
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if exceptions:
        return exceptions[-1]
    for line in lines:
        if _TELLING.search(line) and not _EXIT_ONLY.match(line):
            return line
    return lines[0]


def error_key(text: str) -> str:
    """The masked telling line of an error text, cut: what the miner sees.

    >>> error_key("Error: not enough seats on flight HAT290")
    'Error: not enough seats on flight <id>'
    """
    return mask_text(telling_line(text))[:TEMPLATE_CHARS].strip()


def _miner() -> Any:
    from drain3.template_miner import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.drain_sim_th = SIMILARITY
    config.drain_depth = DEPTH
    config.drain_max_children = 100
    config.parametrize_numeric_tokens = True
    config.masking_instructions = []  # mask_text has masked already
    config.profiling_enabled = False
    return TemplateMiner(persistence_handler=None, config=config)


class ErrorTemplates:
    """Error templates fitted on a project's error texts; pickles as the texts it saw."""

    def __init__(self) -> None:
        self.keys_: list[str] = []
        self.templates_: dict[str, str] = {}

    def fit(self, texts: Iterable[str]) -> ErrorTemplates:
        self.keys_ = sorted({key for key in map(error_key, texts) if key})
        self._mine()
        return self

    def _mine(self) -> None:
        miner = _miner()
        for key in self.keys_:
            miner.add_log_message(key)
        self.templates_ = {}
        for key in self.keys_:
            cluster = miner.match(key, full_search_strategy="fallback")
            self.templates_[key] = cluster.get_template() if cluster is not None else key
        self.miner_ = miner

    def template(self, text: str) -> str:
        """The template of an error text ("" for no error); unseen errors match or stay."""
        key = error_key(text)
        if not key:
            return ""
        known = self.templates_.get(key)
        if known is not None:
            return known
        if not hasattr(self, "miner_"):
            self._mine()
        cluster = self.miner_.match(key, full_search_strategy="fallback")
        return cluster.get_template() if cluster is not None else key

    def __getstate__(self) -> dict[str, Any]:
        return {"keys_": self.keys_, "templates_": self.templates_}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.keys_ = list(state.get("keys_", []))
        self.templates_ = dict(state.get("templates_", {}))  # the miner is rebuilt on use
