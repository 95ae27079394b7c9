"""What an error step says about its error, where the trace recorded it beside the content:
a span's status message (OpenTelemetry, OpenInference, Langfuse), a chat message's
``error: {type, message}`` (inspect_ai's tool errors: output_limit, timeout, permission...).
Pure Python; the rollout page escapes it and shows it under the step's "error" badge.
"""

from __future__ import annotations

from typing import Any

DETAIL_CHARS = 300


def _described(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        kind = value.get("type") or value.get("code") or value.get("name")
        message = value.get("message") or value.get("detail") or value.get("description")
        parts = [str(part).strip() for part in (kind, message) if part not in (None, "")]
        return ": ".join(parts)
    return ""


def error_detail(metadata: Any, content: str = "") -> str:
    """The recorded error of a step as one line ("" when none, or when the step's content
    already says it).

    Example:
        >>> error_detail({"extra": {"error": {"type": "output_limit",
        ...     "message": "The tool output limit of 10 MiB was exceeded."}}}, "...")
        'output_limit: The tool output limit of 10 MiB was exceeded.'
        >>> error_detail({"status_message": "ReadTimeout"}, "Error: ReadTimeout after 30 s")
        ''
    """
    if not isinstance(metadata, dict):
        return ""
    extra = metadata.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    for value in (metadata.get("error"), extra.get("error"), metadata.get("status_message")):
        detail = " ".join(_described(value).split())
        if detail:
            if detail in " ".join((content or "").split()):
                return ""
            return detail[: DETAIL_CHARS - 1] + "…" if len(detail) > DETAIL_CHARS else detail
    return ""
