"""A small JSON client for a platform's REST API over plain HTTP (the standard library's urllib: no
dependency), with a Bearer key, and its failures as one-line `ReplayError`s."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from otel_replay._web import FAILURES, moved, open_request, shown_url
from otel_replay.errors import ReplayError

#: Seconds a request may wait for the server before it is given up.
TIMEOUT_SECONDS = 60.0


class NotFound(ReplayError):
    """The server answered 404: what was asked for is not there (the caller says what it was)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class JsonClient:
    """Requests to ``base`` (``http://host:port``) on behalf of ``platform`` (its name, for
    messages), with ``Authorization: Bearer key`` when a key is given and ``key_variable`` the
    environment variable a user sets it in. A redirect is not followed: it is an error saying
    where it points. Messages show ``base`` without its query (`shown_url`)."""

    def __init__(self, platform: str, base: str, key: str | None, key_variable: str) -> None:
        self.platform = platform
        self.base = shown_url(base)
        self._url = base
        self._key = key
        self._key_variable = key_variable

    def get(self, path: str, params: Sequence[tuple[str, str]] = ()) -> Any:
        return self._call("GET", path, params, None)

    def post(self, path: str, params: Sequence[tuple[str, str]], body: Any) -> Any:
        return self._call("POST", path, params, json.dumps(body).encode())

    def _call(
        self, method: str, path: str, params: Sequence[tuple[str, str]], body: bytes | None
    ) -> Any:
        url = self._url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        try:
            request = urllib.request.Request(url, data=body, headers=headers, method=method)
            with open_request(request, TIMEOUT_SECONDS) as response:
                data = response.read()
        except urllib.error.HTTPError as exc:
            with exc:  # its answer's connection closed, whatever was read of it
                raise self._refused(exc, url) from None
        except FAILURES as exc:
            reason = getattr(exc, "reason", None) or exc
            raise ReplayError(f"cannot reach {self.platform} at {self.base}: {reason}") from None
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise ReplayError(
                f"{self.platform} at {self.base} answered {method} {path} with something that is "
                "not JSON (is it the right address?)"
            ) from None

    def _refused(self, exc: urllib.error.HTTPError, url: str) -> ReplayError:
        redirect = moved(exc, url)
        if redirect is not None:
            return ReplayError(f"{self.platform} at {self.base} {redirect}")
        detail = _detail(exc)
        if exc.code in (401, 403):
            if not self._key:
                return ReplayError(
                    f"{self.platform} at {self.base} wants an API key (HTTP {exc.code}): set "
                    f"{self._key_variable}"
                )
            return ReplayError(
                f"{self.platform} at {self.base} refused the API key in {self._key_variable} "
                f"(HTTP {exc.code}{': ' + detail if detail else ''})"
            )
        if exc.code == 404:
            return NotFound(detail)
        return ReplayError(
            f"{self.platform} at {self.base} answered HTTP {exc.code}"
            f"{': ' + detail if detail else ''}"
        )


def _detail(exc: urllib.error.HTTPError) -> str:
    """The server's own words: FastAPI's ``{"detail": ...}``, else the body's first line."""
    try:
        body = exc.read().decode("utf-8", errors="replace")
    except FAILURES:
        return ""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError, RecursionError):
        detail = None
    text = str(detail) if detail is not None else body
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."
