"""What an export selects, parsed once for the form, the API and the command line.

Every user-facing error is a constant that tests assert on.

Example:
    >>> f = parse_filters({"environment": "airline", "alpha": "0.1", "misbehaviours": "3,5"})
    >>> (f.environment, f.alpha, f.misbehaviours)
    ('airline', 0.1, (3, 5))
    >>> parse_kinds("sft,diagnosis")
    ('sft', 'diagnosis')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import date
from typing import Any

SFT = "sft"
PREFERENCE = "preference"
DIAGNOSIS = "diagnosis"
START_STATES = "start_states"
KINDS = (SFT, PREFERENCE, DIAGNOSIS, START_STATES)
SCHEMA_FILES = {
    SFT: "sft.schema.json",
    PREFERENCE: "preference.schema.json",
    DIAGNOSIS: "diagnosis.schema.json",
    START_STATES: "start_state.schema.json",
}

MSG_BAD_KIND = "Unknown export kind {kind!r}; choose from sft, preference, diagnosis, start_states."
MSG_NO_KIND = "Choose at least one export kind."
MSG_BAD_ALPHA = "alpha must be a number between 0 and 1 (exclusive), e.g. 0.1."
MSG_BAD_DATE = "{field} must be a date written YYYY-MM-DD."
MSG_NO_SUCH_DATE = "{field} {value!r} is no day of the calendar."
MSG_BAD_RANGE = "date_from must not be after date_to."
MSG_BAD_MISBEHAVIOURS = "misbehaviours must be misbehaviour ids separated by commas, e.g. 3,5."
MSG_BAD_WINDOW = (
    "diagnosis_window must be a whole number of steps, 0 or more (0: the whole rollout)."
)
MSG_BAD_OBSERVATION_CHARS = (
    "observation_chars must be a whole number of characters, 0 or more (0: never cut)."
)
MSG_BAD_FLAG = "human_only must be true or false."
MSG_UNKNOWN_FILTER = "Unknown filter {name!r}; the filters are: {names}."


class FilterError(ValueError):
    """A filter value the user must fix; the message says how, ``field`` names the input."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class ExportFilters:
    environment: str = ""
    policy_model: str = ""
    misbehaviours: tuple[int, ...] = ()
    alpha: float | None = None
    human_only: bool = False
    date_from: date | None = None
    date_to: date | None = None
    diagnosis_window: int = 0
    observation_chars: int = 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["misbehaviours"] = list(self.misbehaviours)
        data["date_from"] = self.date_from.isoformat() if self.date_from else None
        data["date_to"] = self.date_to.isoformat() if self.date_to else None
        return data


def filter_names() -> tuple[str, ...]:
    """The names a filter may have, in a form, a JSON body or on the command line."""
    return tuple(f.name for f in fields(ExportFilters))


def unknown_filters_refuse(params: Mapping[str, Any], *, besides: Iterable[str] = ()) -> None:
    """Refuse a filter name that is not one (a misspelt filter must not export everything).

    Example:
        >>> try:
        ...     unknown_filters_refuse({"environmnt": "airline"})
        ... except FilterError as exc:
        ...     print(exc.field, "|", str(exc)[:30])
        environmnt | Unknown filter 'environmnt'; t
    """
    known = set(filter_names()) | set(besides)
    for name in params:
        if name not in known:
            raise FilterError(
                MSG_UNKNOWN_FILTER.format(name=name, names=", ".join(filter_names())), field=name
            )


def _text(params: Mapping[str, Any], key: str) -> str:
    value = params.get(key)
    return "" if value is None else str(value).strip()


def _date(params: Mapping[str, Any], key: str) -> date | None:
    raw = _text(params, key)
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        # Written right but no such day (2026-02-30): say so, not how to write it.
        well_written = re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(raw)) is not None
        message = MSG_NO_SUCH_DATE if well_written else MSG_BAD_DATE
        raise FilterError(message.format(field=key, value=raw), field=key) from None


def _ids(raw: Any) -> tuple[int, ...]:
    if raw in (None, ""):
        return ()
    items: Iterable[Any] = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
    ids: list[int] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        if not text.isdigit():
            raise FilterError(MSG_BAD_MISBEHAVIOURS, field="misbehaviours")
        ids.append(int(text))
    return tuple(sorted(set(ids)))


def _flag(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = "" if raw is None else str(raw).strip().lower()
    if text in ("", "0", "false", "no", "off"):
        return False
    if text in ("1", "true", "yes", "on"):
        return True
    raise FilterError(MSG_BAD_FLAG, field="human_only")


def parse_filters(params: Mapping[str, Any]) -> ExportFilters:
    """Filters from a form, a JSON body or command-line options; raises FilterError."""
    alpha_raw = _text(params, "alpha")
    alpha: float | None = None
    if alpha_raw:
        try:
            alpha = float(alpha_raw)
        except ValueError:
            raise FilterError(MSG_BAD_ALPHA, field="alpha") from None
        if not 0 < alpha < 1:
            raise FilterError(MSG_BAD_ALPHA, field="alpha")
    window_raw = _text(params, "diagnosis_window") or "0"
    if not window_raw.isdigit():
        raise FilterError(MSG_BAD_WINDOW, field="diagnosis_window")
    chars_raw = _text(params, "observation_chars") or "0"
    if not chars_raw.isdigit():
        raise FilterError(MSG_BAD_OBSERVATION_CHARS, field="observation_chars")
    date_from, date_to = _date(params, "date_from"), _date(params, "date_to")
    if date_from and date_to and date_from > date_to:
        raise FilterError(MSG_BAD_RANGE, field="date_from")
    return ExportFilters(
        environment=_text(params, "environment"),
        policy_model=_text(params, "policy_model"),
        misbehaviours=_ids(params.get("misbehaviours")),
        alpha=alpha,
        human_only=_flag(params.get("human_only")),
        date_from=date_from,
        date_to=date_to,
        diagnosis_window=int(window_raw),
        observation_chars=int(chars_raw),
    )


def parse_kinds(raw: Any) -> tuple[str, ...]:
    """Export kinds in their canonical order, from "a,b" or a list; raises FilterError."""
    items = raw if isinstance(raw, (list, tuple)) else [raw or ""]
    chosen = {part.strip() for item in items for part in str(item).split(",") if part.strip()}
    for kind in sorted(chosen):
        if kind not in KINDS:
            raise FilterError(MSG_BAD_KIND.format(kind=kind), field="kinds")
    if not chosen:
        raise FilterError(MSG_NO_KIND, field="kinds")
    return tuple(kind for kind in KINDS if kind in chosen)
