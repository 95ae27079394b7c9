"""Small typed accessors that turn a bad value into a TraceParseError naming the field.

Example:
    >>> require_str({"id": "a"}, "id", record="line 1")
    'a'
    >>> require_str({}, "id", record="line 1")
    Traceback (most recent call last):
    ...
    ingest.core.errors.TraceParseError: line 1, field id: Field is required.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from ingest.core.errors import TraceParseError

MSG_REQUIRED = "Field is required."
MSG_NOT_STRING = "Expected a string."
MSG_NOT_LIST = "Expected a list."
MSG_NOT_OBJECT = "Expected a JSON object."
MSG_NOT_NUMBER = "Expected a number."
MSG_NOT_BOOL = "Expected true or false."
MSG_NOT_TIME = "Expected an ISO 8601 timestamp."
MSG_BAD_CHOICE = "Expected one of: {choices}."
MSG_BAD_ID = "Expected a non-empty string id."


def _fail(message: str, record: str, field: str) -> TraceParseError:
    return TraceParseError(message, record=record, field=field)


def require_object(value: Any, *, record: str, field: str = "") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(MSG_NOT_OBJECT, record, field)
    return value


def require_str(obj: dict[str, Any], key: str, *, record: str, prefix: str = "") -> str:
    if key not in obj or obj[key] is None:
        raise _fail(MSG_REQUIRED, record, prefix + key)
    value = obj[key]
    if not isinstance(value, str):
        raise _fail(MSG_NOT_STRING, record, prefix + key)
    return value


def required_id(obj: dict[str, Any], key: str, *, record: str) -> str:
    """An id that must be a non-empty string (``Field is required`` when absent): a
    Langfuse observation's, a LangSmith run's."""
    value = require_str(obj, key, record=record)
    if not value:
        raise TraceParseError(MSG_BAD_ID, record=record, field=key)
    return value


def optional_str(
    obj: dict[str, Any], key: str, *, record: str, prefix: str = "", default: str = ""
) -> str:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _fail(MSG_NOT_STRING, record, prefix + key)
    return value


def require_list(obj: dict[str, Any], key: str, *, record: str, prefix: str = "") -> list[Any]:
    if key not in obj or obj[key] is None:
        raise _fail(MSG_REQUIRED, record, prefix + key)
    value = obj[key]
    if not isinstance(value, list):
        raise _fail(MSG_NOT_LIST, record, prefix + key)
    return value


def optional_list(obj: dict[str, Any], key: str, *, record: str, prefix: str = "") -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(MSG_NOT_LIST, record, prefix + key)
    return value


def optional_object(
    obj: dict[str, Any], key: str, *, record: str, prefix: str = ""
) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(MSG_NOT_OBJECT, record, prefix + key)
    return value


def optional_number(
    obj: dict[str, Any], key: str, *, record: str, prefix: str = ""
) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(MSG_NOT_NUMBER, record, prefix + key)
    number = float(value)
    if not math.isfinite(number):
        raise _fail(MSG_NOT_NUMBER, record, prefix + key)
    return number


def optional_bool(obj: dict[str, Any], key: str, *, record: str, prefix: str = "") -> bool | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise _fail(MSG_NOT_BOOL, record, prefix + key)
    return value


def optional_choice(
    obj: dict[str, Any],
    key: str,
    choices: tuple[str, ...],
    *,
    record: str,
    prefix: str = "",
    default: str,
) -> str:
    value = optional_str(obj, key, record=record, prefix=prefix, default=default)
    if value not in choices:
        raise _fail(MSG_BAD_CHOICE.format(choices=", ".join(choices)), record, prefix + key)
    return value


def optional_time(
    obj: dict[str, Any], key: str, *, record: str, prefix: str = ""
) -> datetime | None:
    value = optional_str(obj, key, record=record, prefix=prefix)
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise _fail(MSG_NOT_TIME, record, prefix + key) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


#: Content parts that carry media, by type, and what is stored for them: their bytes
#: (often base64 inline) would fill the step, its embedding and its page. OpenAI's chat and
#: Responses shapes, Anthropic's, inspect_ai's.
MEDIA_PARTS = {
    "image_url": "[image]",
    "input_image": "[image]",
    "image": "[image]",
    "input_audio": "[audio]",
    "audio": "[audio]",
    "video": "[video]",
    "file": "[file]",
    "document": "[document]",
}
#: Parts whose text is under their own type's name: a model's reasoning (inspect_ai's
#: ``reasoning``, Anthropic's ``thinking``).
NAMED_TEXT_PARTS = ("reasoning", "thinking")
#: Parts that hold nothing readable: Anthropic's encrypted reasoning.
HIDDEN_PARTS = ("redacted_thinking",)


def _part_text(part: Any) -> str:
    import json

    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        kind = part.get("type")
        if isinstance(part.get("text"), str):
            return str(part["text"])
        if kind in NAMED_TEXT_PARTS and isinstance(part.get(kind), str):
            return str(part[kind])
        if isinstance(kind, str) and kind in MEDIA_PARTS:
            return MEDIA_PARTS[kind]
    return json.dumps(part, ensure_ascii=False, sort_keys=True)


def _readable(part: Any) -> bool:
    return not (isinstance(part, dict) and part.get("type") in HIDDEN_PARTS)


def text_of(value: Any) -> str:
    r"""Message content as text: strings as they are, lists of parts joined, the rest as JSON.

    Example:
        >>> text_of([{"type": "reasoning", "reasoning": "Check the date."},
        ...          {"type": "text", "text": "Done."}, {"type": "image", "image": "iVBOR..."}])
        'Check the date.\nDone.\n[image]'
        >>> text_of([{"type": "redacted_thinking", "data": "EmwKAhgB..."}, {"type": "text", "text": "Hi."}])
        'Hi.'
    """
    import json

    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_part_text(part) for part in value if _readable(part))
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
