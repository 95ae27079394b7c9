"""HTTP clients for the fault tests: a logged-in browser session (CSRF included) and the
API with a bearer token, over urllib against the real web server."""

from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any


def multipart(field: str, name: str, content: bytes, extra: dict[str, str]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in extra.items()
    ]
    parts.append(
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + content
        + b"\r\n"
    )
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), (
        f"multipart/form-data; boundary={boundary}"
    )


@dataclass
class Answer:
    status: int
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


def _open(opener: urllib.request.OpenerDirector, request: urllib.request.Request) -> Answer:
    try:
        with opener.open(request, timeout=60) as response:
            return Answer(response.status, response.read().decode())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.read().decode(errors="replace"))


class Browser:
    """A logged-in session, as the uploads page's form uses it."""

    def __init__(self, base: str, username: str, password: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        html = self.get("/login/").body
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert csrf, html[:500]
        data = urllib.parse.urlencode(
            {"username": username, "password": password, "csrfmiddlewaretoken": csrf.group(1)}
        ).encode()
        request = urllib.request.Request(
            f"{base}/login/", data=data, headers={"Referer": f"{base}/login/"}
        )
        with self.opener.open(request, timeout=60) as final:
            assert "/login/" not in final.geturl(), "login failed"

    def csrf(self) -> str:
        return next(cookie.value for cookie in self.jar if cookie.name == "csrftoken") or ""

    def get(self, path: str) -> Answer:
        return _open(self.opener, urllib.request.Request(self.base + path))

    def post(self, path: str, data: dict[str, str]) -> Answer:
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": self.csrf()}).encode()
        request = urllib.request.Request(
            self.base + path, data=body, headers={"Referer": self.base + path}, method="POST"
        )
        return _open(self.opener, request)

    def upload(self, slug: str, name: str, content: bytes) -> Answer:
        body, content_type = multipart("files", name, content, {"csrfmiddlewaretoken": self.csrf()})
        request = urllib.request.Request(
            f"{self.base}/p/{slug}/uploads/",
            data=body,
            headers={
                "Content-Type": content_type,
                "Accept": "application/json",
                "X-CSRFToken": self.csrf(),
                "Referer": f"{self.base}/p/{slug}/uploads/",
            },
            method="POST",
        )
        return _open(self.opener, request)


def api_upload(base: str, token: str, slug: str, name: str, content: bytes) -> Answer:
    body, content_type = multipart("file", name, content, {})
    request = urllib.request.Request(
        f"{base}/api/v1/projects/{slug}/uploads",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
        method="POST",
    )
    return _open(urllib.request.build_opener(), request)
