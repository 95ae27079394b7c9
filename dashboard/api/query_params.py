"""The API refuses a query parameter a GET endpoint does not take (a 400 naming it and the
ones it takes), and one given twice (no parameter takes several values), instead of
ignoring it: ``rollouts?agent_system=planner`` (the filter is
``system``) used to answer every rollout, and the caller believed the filter had worked.

One rule for every endpoint, installed on the API as a decorator: the names an endpoint
takes are read from the query models ninja built from its signature (the same models
ninja reads the query string with and writes the OpenAPI parameters from), so an endpoint
added later is covered without a line of its own, and what is accepted is exactly what is
documented. GET endpoints without query parameters are left as they are.

The check runs where ninja calls the endpoint: after the token check (a refused caller
still learns nothing about the inputs) and after the declared parameters were validated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from django.http import HttpRequest
from ninja import NinjaAPI

from dashboard.api.errors import ApiError

MSG_UNKNOWN_PARAM = "{field}: not a query parameter of this endpoint; it takes {accepted}."
MSG_UNKNOWN_PARAMS = "{fields}: not query parameters of this endpoint; it takes {accepted}."
MSG_REPEATED_PARAM = (
    "{field}: given {count} times; it takes one value (ask once per value, or leave it out)."
)
QUERY_SOURCE = "query"


def unknown_params(given: Iterable[str], accepted: Iterable[str]) -> list[str]:
    """The names of ``given`` that are not ``accepted``, in the order given, once each.

    Example:
        >>> unknown_params(["agent_system", "limit", "agent_system"], {"system", "limit"})
        ['agent_system']
    """
    known = set(accepted)
    return [name for name in dict.fromkeys(given) if name not in known]


def repeated_params(given: Iterable[tuple[str, list[str]]]) -> list[tuple[str, int]]:
    """The names given more than once, with how many times. No query parameter of the API
    takes several values, and ninja kept only the last: ``?environment=a&environment=b``
    answered b's rollouts alone, as if the filter had worked.

    Example:
        >>> repeated_params([("outcome", ["failure", "success"]), ("limit", ["5"])])
        [('outcome', 2)]
    """
    return [(name, len(values)) for name, values in given if len(values) > 1]


def unknown_params_message(unknown: list[str], accepted: Iterable[str]) -> str:
    """What the 400 says: the unknown names and every name the endpoint takes.

    Example:
        >>> unknown_params_message(["agent_system"], ["system", "limit"])
        'agent_system: not a query parameter of this endpoint; it takes limit, system.'
    """
    takes = ", ".join(sorted(accepted))
    if len(unknown) == 1:
        return MSG_UNKNOWN_PARAM.format(field=unknown[0], accepted=takes)
    return MSG_UNKNOWN_PARAMS.format(fields=", ".join(unknown), accepted=takes)


def declared_query_params(view_func: Callable[..., Any]) -> frozenset[str]:
    """The query parameter names of the endpoint ``view_func`` is the function of: the
    keys ninja reads from the query string (a ``Query[Schema]`` parameter's fields count
    one by one, by their alias if they have one)."""
    operation = getattr(view_func, "_ninja_operation", None)
    # Without it the rule would silently vanish for the endpoint: fail at start-up instead.
    assert operation is not None, f"{view_func!r} is not the function of a ninja operation"
    if "GET" not in operation.methods:
        return frozenset()
    names: set[str] = set()
    for model in operation.models:
        if model.__ninja_param_source__ == QUERY_SOURCE:
            names.update(model.__ninja_flatten_map__)
    return frozenset(names)


def unknown_query_refused(view_func: Callable[..., Any]) -> Callable[..., Any]:
    """``view_func``, answering 400 first when the request's query string holds a name the
    endpoint does not take (unchanged for an endpoint without query parameters)."""
    accepted = declared_query_params(view_func)
    if not accepted:
        return view_func

    @functools.wraps(view_func)
    def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        unknown = unknown_params(request.GET.keys(), accepted)
        if unknown:
            message = unknown_params_message(unknown, accepted)
            raise ApiError(400, message, field=unknown[0])
        repeated = repeated_params(request.GET.lists())
        if repeated:
            field, count = repeated[0]
            raise ApiError(400, MSG_REPEATED_PARAM.format(field=field, count=count), field=field)
        return view_func(request, *args, **kwargs)

    return checked


def unknown_query_guard_install(api: NinjaAPI) -> None:
    """Every operation of ``api`` (routers added before or after) gets the check."""
    # "operation" mode wraps the endpoint function itself: it runs after authentication.
    api.add_decorator(unknown_query_refused, mode="operation")
