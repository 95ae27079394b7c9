"""Every error of the REST API is JSON: ``{"error": message}``, plus ``"field"`` (the
dotted name of the input at fault) when one input is to blame.

Bad input is a 400, never a 422 or a 5xx: the same status the upload and export endpoints
answered before the API moved to django-ninja, so no client breaks. A refused token is a
404 (:class:`projects.tokens.TokenRefused`: it never tells whether the project exists)
and is counted by the token throttle exactly as the middleware counts it for other views.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI, Schema
from ninja.errors import HttpError, ValidationError

from projects.security import token_refusal_count
from projects.tokens import MSG_NO_PROJECT, TokenRefused

MSG_INVALID_FIELD = "{field}: {message}"
MSG_INVALID_INPUT = "The request is not valid: {message}"
MSG_NOT_FOUND = "Not found."
MSG_NUL = "{field}: text may not contain NUL characters."
MSG_NO_ENDPOINT = "No API endpoint at {path}; the endpoints are listed at /api/v1/docs."
MSG_METHOD = "{method} is not allowed on {path}; use {allowed}."
MSG_STATUS = "The request was refused: {reason}."
# Answers already in a machine-readable form (the OTLP receiver's are protobuf or JSON).
_MACHINE_TYPES = ("application/json", "application/x-protobuf")
# Where an input came from, as ninja's validation errors name it; not part of the field.
BODY_PARAM = "payload"
_SOURCES = {"body", "query", "path", "form", "file", "header", "cookie"}


class ErrorOut(Schema):
    error: str
    field: str | None = None


class ApiError(Exception):
    """An answer other than success, with the message the client sees."""

    def __init__(self, status: int, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


NINJA_UNPARSED_BODY = "Cannot parse request body"
MSG_BODY_NOT_JSON = (
    "The request body is not JSON: send a JSON object with 'Content-Type: application/json'."
)


def error_response(status: int, message: str, *, field: str | None = None) -> JsonResponse:
    body: dict[str, Any] = {"error": message}
    if field is not None:
        body["field"] = field
    return JsonResponse(body, status=status)


def field_name(location: list[Any] | tuple[Any, ...]) -> str:
    """The dotted input name of a pydantic error location (every JSON body parameter of
    this API is called ``payload``, which is no part of the field's name).

    Example:
        >>> field_name(["body", "payload", "reward"])
        'reward'
        >>> field_name(["query", "limit"])
        'limit'
    """
    parts = [str(part) for part in location]
    if parts and parts[0] in _SOURCES:
        source = parts.pop(0)
        if source == "body" and len(parts) > 1 and parts[0] == BODY_PARAM:
            parts.pop(0)
    return ".".join(parts) or "body"


# ninja types a handler's exception as the class or an instance of it: Any, narrowed here.
def _validation_error(request: HttpRequest, exc: Any) -> HttpResponse:
    assert isinstance(exc, ValidationError)
    errors = exc.errors
    if not errors:
        return error_response(400, MSG_INVALID_INPUT.format(message="unreadable input"))
    first = errors[0]
    field = field_name(first.get("loc", ()))
    message = str(first.get("msg", "invalid value"))
    return error_response(400, MSG_INVALID_FIELD.format(field=field, message=message), field=field)


def _token_refused(request: HttpRequest, exc: Any) -> HttpResponse:
    token_refusal_count(request)  # uncounted, not a 500, when the cache (Redis) is down
    return error_response(404, MSG_NO_PROJECT)


def _not_found(request: HttpRequest, exc: Any) -> HttpResponse:
    return error_response(404, str(exc) or MSG_NOT_FOUND)


def _api_error(request: HttpRequest, exc: Any) -> HttpResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.message, field=exc.field)


def _http_error(request: HttpRequest, exc: Any) -> HttpResponse:
    assert isinstance(exc, HttpError)
    if exc.status_code == 400 and str(exc).startswith(NINJA_UNPARSED_BODY):
        # ninja's words for a body that is no JSON (a form, say) name neither the input
        # nor what to send instead.
        return error_response(400, MSG_BODY_NOT_JSON, field="body")
    return error_response(exc.status_code, str(exc))


def error_handlers_install(api: NinjaAPI) -> None:
    api.add_exception_handler(ValidationError, _validation_error)
    api.add_exception_handler(TokenRefused, _token_refused)
    api.add_exception_handler(Http404, _not_found)
    api.add_exception_handler(ApiError, _api_error)
    api.add_exception_handler(HttpError, _http_error)


def no_nul(value: str, field: str) -> str:
    """Refuse text with NUL characters (PostgreSQL cannot store them): a 400, not a 500."""
    if "\x00" in value:
        raise ApiError(400, MSG_NUL.format(field=field), field=field)
    return value


def errors_documented(*statuses: int) -> dict[int, type[ErrorOut]]:
    """The error part of an operation's ``response=`` mapping (documented in the schema)."""
    return {status: ErrorOut for status in statuses}


class ApiJsonErrorsMiddleware:
    """Every error under the API prefix is JSON, also those Django or ninja answer before
    any handler above runs: a path no route matches (Django's HTML 404 page) and a method
    a route does not take (ninja's plain-text 405, whose ``Allow`` header is kept)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path_info.startswith(settings.FAULTLINE_API_PREFIX)
            or response.get("Content-Type", "").startswith(_MACHINE_TYPES)
        ):
            return response
        path = request.path_info
        if response.status_code == 404:
            message = MSG_NO_ENDPOINT.format(path=path)
        elif response.status_code == 405:
            allowed = response.get("Allow", "")
            message = MSG_METHOD.format(
                method=request.method, path=path, allowed=allowed.replace(",", " or") or "none"
            )
        else:
            message = MSG_STATUS.format(reason=response.reason_phrase.lower())
        answer = error_response(response.status_code, message)
        for header in ("Allow", "Retry-After"):
            if header in response:
                answer[header] = response[header]
        return answer
