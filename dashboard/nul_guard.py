"""A NUL character in a page's URL parameters or form fields is answered 400, naming the
field, before any view sends it to the database.

PostgreSQL refuses NUL in text (psycopg raises DataError), so a project name, a token
name, a username to add or a search holding one was a server error there and worked on
SQLite. No one types a NUL; it comes from a script or a hostile link, and the honest answer
is a clear refusal with nothing stored. The API says the same through its schemas (each
text field's ``NO_NUL`` pattern), in its JSON error shape, so its paths are left to it.
Trace content is another matter: a NUL inside an uploaded file is replaced as it is stored
(``ingest.core.storable``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render

MSG_NUL = (
    "The field “{field}” holds a NUL character (\\x00), which Faultline does not accept in "
    "any text it stores or searches; nothing was changed."
)
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


def nul_field(params: QueryDict) -> str | None:
    """The first parameter whose name or one of whose values holds a NUL, or None."""
    for key, values in params.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            return key.replace("\x00", "\\x00")
    return None


class NulGuardMiddleware:
    """Refuses page requests whose query or form fields hold a NUL (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info.startswith(settings.FAULTLINE_API_PREFIX):
            return self.get_response(request)
        field = nul_field(request.GET)
        # Form posts: the CSRF check reads them anyway. This runs after the upload limit
        # (dashboard.upload_limit), so an upload too large is refused before its body is
        # read; a file's content is in request.FILES, never looked at here.
        if field is None and request.method == "POST" and request.content_type in _FORM_TYPES:
            field = nul_field(request.POST)
        if field is not None:
            message = MSG_NUL.format(field=field)
            return render(request, "400.html", {"message": message}, status=400)
        return self.get_response(request)
