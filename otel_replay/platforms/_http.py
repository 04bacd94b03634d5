"""A small JSON client for a platform's REST API over plain HTTP (the standard library's urllib: no
dependency), with a Bearer key (or Basic credentials), and its failures as one-line `ReplayError`s.

Every request is bounded: each read waits at most `TIMEOUT_SECONDS`, the whole answer must be in
within ``deadline`` seconds (`DEADLINE_SECONDS`) and hold at most ``max_bytes`` (`MAX_ANSWER_BYTES`),
else the error names what was asked (``what``: "page 3 of the trace search"). Paging by a token or
cursor goes through `Pages`, which stops at a page cap and at a token given twice; what an import
holds until its runs are made goes through `Held`, which stops at a cap on spans and bytes."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from otel_replay._web import (
    DEADLINE_SECONDS,
    FAILURES,
    MAX_ANSWER_BYTES,
    TIMEOUT_SECONDS,
    Bounds,
    GaveUp,
    moved,
    open_request,
    shown_url,
    size,
)
from otel_replay.errors import PlatformError, setting

__all__ = [
    "DEADLINE_SECONDS",
    "MAX_ANSWER_BYTES",
    "MAX_HELD_BYTES",
    "MAX_HELD_SPANS",
    "MAX_PAGES",
    "TIMEOUT_SECONDS",
    "Held",
    "JsonClient",
    "NotFound",
    "Pages",
]

#: The most pages one listing is followed for.
MAX_PAGES = 10_000
#: The most bytes of answers an import holds before its runs are made.
MAX_HELD_BYTES = 2 << 30
#: The most spans an import holds before its runs are made.
MAX_HELD_SPANS = 2_000_000


class NotFound(PlatformError):
    """The server answered 404: what was asked for is not there (the caller says what it was)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class JsonClient:
    """Requests to ``base`` (``http://host:port``) on behalf of ``platform`` (its name, for
    messages), with ``Authorization: Bearer key`` when a key is given and ``key_variable`` the
    environment variable a user sets it in (``scheme``: ``Basic`` for a user name and password
    given as the key, ``secret`` what messages call it). A redirect is not followed: it is an
    error saying where it points. Messages show ``base`` without its query (`shown_url`)."""

    def __init__(
        self,
        platform: str,
        base: str,
        key: str | None,
        key_variable: str,
        *,
        max_bytes: int = MAX_ANSWER_BYTES,
        deadline: float = DEADLINE_SECONDS,
        scheme: str = "Bearer",
        secret: str = "API key",
        cap: str = "",
    ) -> None:
        self.platform = platform
        self.cap = cap
        self.received = 0
        self.base = shown_url(base)
        self._url = base
        self._key = key
        self._key_variable = key_variable
        self._scheme = scheme
        self._secret = secret
        self.max_bytes = max_bytes
        self.deadline = deadline

    def get(self, path: str, params: Sequence[tuple[str, str]] = (), what: str = "") -> Any:
        return self._call("GET", path, params, None, what)

    def post(self, path: str, params: Sequence[tuple[str, str]], body: Any, what: str = "") -> Any:
        return self._call("POST", path, params, json.dumps(body).encode(), what)

    def patch(self, path: str, body: Any, what: str = "") -> Any:
        return self._call("PATCH", path, (), json.dumps(body).encode(), what)

    def delete(self, path: str, what: str = "") -> Any:
        return self._call("DELETE", path, (), None, what)

    def _call(
        self,
        method: str,
        path: str,
        params: Sequence[tuple[str, str]],
        body: bytes | None,
        what: str,
    ) -> Any:
        url = self._url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self._key:
            headers["Authorization"] = f"{self._scheme} {self._key}"
        bounds = Bounds(TIMEOUT_SECONDS, self.deadline, self.max_bytes)
        try:
            request = urllib.request.Request(url, data=body, headers=headers, method=method)
            with open_request(request, bounds) as response:
                data = response.read()
            self.received = len(data)
        except GaveUp as exc:
            raise self._gave_up(exc, what or f"{method} {path}") from None
        except urllib.error.HTTPError as exc:
            with exc:  # its answer's connection closed, whatever was read of it
                raise self._refused(exc, url) from None
        except FAILURES as exc:
            reason = getattr(exc, "reason", None) or exc
            asking = f" (asking for {what})" if what else ""
            raise PlatformError(
                f"cannot reach {self.platform} at {self.base}: {reason}{asking}"
            ) from None
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            raise PlatformError(
                f"{self.platform} at {self.base} answered {method} {path} with something that is "
                "not JSON (is it the right address?)"
            ) from None

    def _gave_up(self, exc: GaveUp, what: str) -> PlatformError:
        if exc.limit.startswith("answered with more than"):
            hint = f"{self.cap} raises the cap" if self.cap else "is it the right address?"
            return PlatformError(
                f"{self.platform} at {self.base} answered {what} with more than "
                f"{size(self.max_bytes)}: gave up ({hint})"
            )
        return PlatformError(
            f"{self.platform} at {self.base} took more than {self.deadline:g} s to answer "
            f"{what}: gave up"
        )

    def _refused(self, exc: urllib.error.HTTPError, url: str) -> PlatformError:
        redirect = moved(exc, url)
        if redirect is not None:
            return PlatformError(f"{self.platform} at {self.base} {redirect}")
        detail = _detail(exc)
        if exc.code in (401, 403):
            if not self._key:
                return PlatformError(
                    f"{self.platform} at {self.base} wants {_a(self._secret)} (HTTP {exc.code}): set "
                    f"{self._key_variable}"
                )
            return PlatformError(
                f"{self.platform} at {self.base} refused the {self._secret} in {self._key_variable} "
                f"(HTTP {exc.code}{': ' + detail if detail else ''})"
            )
        if exc.code == 404:
            return NotFound(detail)
        return PlatformError(
            f"{self.platform} at {self.base} answered HTTP {exc.code}"
            f"{': ' + detail if detail else ''}"
        )


class Pages:
    """The pages of one listing (``what``: "the trace search"), counted: `turn` takes each page's
    next token and says whether to go on; a token given twice, or more than ``limit`` pages, is a
    `ReplayError` naming the page."""

    def __init__(
        self, client: JsonClient, what: str, token: str = "page token", limit: int = MAX_PAGES
    ) -> None:
        self._client = client
        self.what = what
        self.token = token
        self.limit = limit
        self.count = 0
        self._seen: set[str] = set()

    @property
    def this(self) -> str:
        """The page being asked for, as messages name it ("page 3 of the trace search")."""
        return f"page {self.count + 1} of {self.what}"

    def turn(self, token: object) -> str | None:
        """Count the page just read; its next token (None: it was the last page)."""
        self.count += 1
        if not token:
            return None
        token = str(token)
        where = f"{self._client.platform} at {self._client.base}"
        if token in self._seen:
            raise PlatformError(
                f"{where} answered page {self.count} of {self.what} with a {self.token} it gave "
                "before: its pages go round in a circle"
            )
        if self.count >= self.limit:
            raise PlatformError(
                f"{where} still had more after page {self.count} of {self.what}, the most "
                f"followed: gave up"
            )
        self._seen.add(token)
        return token


class Held:
    """What one import holds until its runs are made (every page is fetched first, so a server
    failing half way leaves the store as it was): `add` counts each page's bytes and spans, and a
    `ReplayError` naming the page stops the import past ``max_bytes`` or ``max_spans``."""

    def __init__(
        self, client: JsonClient, max_bytes: int = MAX_HELD_BYTES, max_spans: int = MAX_HELD_SPANS
    ) -> None:
        self._client = client
        self.max_bytes = max_bytes
        self.max_spans = max_spans
        self.bytes = 0
        self.spans = 0

    def add(self, what: str, spans: int) -> None:
        """Count the page ``what`` just read (its bytes: the client's last answer's)."""
        self.bytes += self._client.received
        self.spans += spans
        over = (
            f"{self.max_spans} spans"
            if self.spans > self.max_spans
            else f"{size(self.max_bytes)} of pages"
            if self.bytes > self.max_bytes
            else None
        )
        if over is not None:
            raise PlatformError(
                f"{self._client.platform} at {self._client.base}: with {what}, the import would "
                f"hold more than {over} before its runs are made, the most it holds: gave up "
                f"(import less at a time: a shorter time with {setting('since')})"
            )


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"


def _detail(exc: urllib.error.HTTPError) -> str:
    """The server's own words: FastAPI's ``{"detail": ...}``, MLflow's ``{"message": ...}``, else
    the body's first line."""
    try:
        body = exc.read().decode("utf-8", errors="replace")
    except FAILURES:
        return ""
    try:
        parsed = json.loads(body)
        detail = parsed.get("detail") or parsed.get("message")
    except (ValueError, AttributeError, RecursionError):
        detail = None
    text = str(detail) if detail is not None else body
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 200 else line[:197] + "..."
