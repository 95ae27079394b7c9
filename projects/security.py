"""Web security plumbing that settings.py and the middleware stack point at: the log-in
lockout page (django-axes) and the throttle on failed API-token uses.

The token throttle counts failures per client address in Django's cache, so every web
process sharing the Redis cache (FAULTLINE_CACHE_URL) sees the same count. A view marks a
refused token by raising :class:`TokenRefused` (a 404, so a bad token never tells whether
the project exists); the middleware counts those and answers 429 once the limit is reached,
before the view runs, even for a right token, until the cool-off has passed.

Example:
    >>> token_failure_key("127.0.0.1")
    'faultline:token-failures:127.0.0.1'
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from axes.backends import AxesStandaloneBackend
from csp.constants import UNSAFE_EVAL
from csp.decorators import csp_update
from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from projects.tokens import TokenRefused

logger = logging.getLogger(__name__)

MSG_LOGIN_LOCKED = (
    "Too many failed log-in attempts for this user from this address. Log-in is locked "
    "for a while: try again later."
)
MSG_TOKEN_THROTTLED = (
    "Too many requests with a wrong API token from this address. Wait a while before trying again."
)
TOKEN_FAILURE_PREFIX = "faultline:token-failures:"
# Marks a view that applies the token throttle itself (the OTLP receiver answers in OTLP's
# own encoding): the middleware leaves it alone.
OWN_THROTTLE = "faultline_own_token_throttle"
P = ParamSpec("P")
R = TypeVar("R")
# plotly's WebGL traces (scattergl) build their shaders with new Function(); a view that
# shows one adds this to its policy (see settings.py), through plotly_webgl_page.
PLOTLY_WEBGL_CSP = {"script-src": [UNSAFE_EVAL]}


def plotly_webgl_page(view: Callable[P, R]) -> Callable[P, R]:
    """Add 'unsafe-eval' to the policy of this view's pages only (django-csp's csp_update,
    typed for views that take URL arguments too)."""
    return cast(Callable[P, R], csp_update(PLOTLY_WEBGL_CSP)(cast(Any, view)))


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' backend, except for calls without a request (the test client's
    ``login()``, scripts): those are not a web log-in, so there is nothing to throttle and
    the model backend after this one decides."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def login_lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """The log-in page again, with the lockout message and the username typed (never the
    password), as 429 (AXES_LOCKOUT_CALLABLE)."""
    context = {
        "lockout_message": MSG_LOGIN_LOCKED,
        "next": request.POST.get("next", ""),
        "username": request.POST.get("username", ""),
    }
    return render(request, "dashboard/login.html", context, status=429)


def client_address(request: HttpRequest) -> str | None:
    """The client's address: REMOTE_ADDR, or behind one proxy (FAULTLINE_BEHIND_PROXY) the
    last X-Forwarded-For entry, the one the proxy itself appended (earlier ones are the
    client's word and could be forged)."""
    if settings.FAULTLINE_BEHIND_PROXY:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-1]
    # None, not a made-up word, when the request carries no address (a test client's
    # force_login): django-axes stores it in an IP column, which PostgreSQL checks.
    return str(request.META.get("REMOTE_ADDR", "")) or None


def token_failure_key(address: str) -> str:
    return TOKEN_FAILURE_PREFIX + address


# The URL name of Swagger UI's files, which dashboard.api.docs serves.
API_DOCS_ASSET_URL_NAME = "api_docs_asset"
# The browsable docs, the OpenAPI schema and Swagger UI's files (dashboard.api.urls).
UNTHROTTLED_URL_NAMES = frozenset({"openapi-view", "openapi-json", API_DOCS_ASSET_URL_NAME})


class TokenThrottleMiddleware:
    """Refuse API requests (429) from an address that sent too many refused tokens."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], *args: Any
    ) -> HttpResponse | None:
        if not request.path_info.startswith(settings.FAULTLINE_API_PREFIX):
            return None
        match = request.resolver_match
        if match is not None and match.url_name in UNTHROTTLED_URL_NAMES:
            return None  # the docs take no token: a locked-out user can still read them
        if getattr(view_func, OWN_THROTTLE, False) or not token_throttled(request):
            return None
        response = JsonResponse({"error": MSG_TOKEN_THROTTLED}, status=429)
        response["Retry-After"] = str(settings.FAULTLINE_TOKEN_COOLOFF_SECONDS)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        if isinstance(exception, TokenRefused):
            token_refusal_count(request)
        return None


def own_token_throttle(view: Callable[P, R]) -> Callable[P, R]:
    """Mark a view that applies :func:`token_throttled` itself."""
    setattr(view, OWN_THROTTLE, True)
    return view


def token_throttled(request: HttpRequest) -> bool:
    """Whether the request's address has sent too many refused tokens (the one rule, for
    the middleware and for the OTLP receiver, which answers in OTLP's own encoding)."""
    failures = _token_failures(client_address(request) or "unknown")
    return failures >= settings.FAULTLINE_TOKEN_FAILURE_LIMIT


def token_refusal_count(request: HttpRequest) -> None:
    """Count one refused token of the request's address; when the cache (Redis) is down
    the refusal stands, uncounted."""
    try:
        token_failure_record(client_address(request) or "unknown")
    except Exception as exc:  # one line, not a traceback per request, while Redis is down
        logger.warning("could not count a refused token: %s", exc)


def _token_failures(address: str) -> int:
    """Refused tokens counted for ``address``; 0 when the cache is unreachable, so a Redis
    outage (the broker's too) throttles nobody instead of failing every API call with 500."""
    try:
        return int(cache.get(token_failure_key(address), 0))
    except Exception as exc:
        logger.warning("the token throttle could not read the cache: %s", exc)
        return 0


def token_failure_record(address: str) -> int:
    """Count one refused token for ``address``; the count expires after the cool-off."""
    key = token_failure_key(address)
    timeout = settings.FAULTLINE_TOKEN_COOLOFF_SECONDS
    cache.add(key, 0, timeout=timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=timeout)
        return 1
