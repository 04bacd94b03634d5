"""What the HTTP clients of the package share (the OTLP sender, the platforms' REST client, the
model clients): one urllib opener that never follows a redirect and bounds every answer, the bounds
themselves, the check of a URL before anything is done with it, and a URL as messages show it.

Every answer is bounded three ways: each read waits at most ``timeout`` seconds, the whole
exchange (connecting, the status line and headers, the body) must be over within ``deadline``
seconds however steadily it trickles in (a watchdog shuts the connection's socket when it is not),
and a body holds at most ``max_bytes``. A limit hit is a `GaveUp` naming the URL and the limit.

A redirect is not followed because urllib would turn a POST into a GET (and call the send a
success though nothing was delivered) and carry the ``Authorization`` header to whatever host the
answer names: a 3xx is an error that names the status and where it points. A URL is shown
without its query string, fragment or user name and password, which may hold credentials."""

from __future__ import annotations

import contextlib
import functools
import http.client
import io
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from otel_replay.errors import AddressError, ReplayError

__all__ = [
    "DEADLINE_SECONDS",
    "FAILURES",
    "MAX_ANSWER_BYTES",
    "TIMEOUT_SECONDS",
    "Answer",
    "Bounds",
    "GaveUp",
    "Meter",
    "Watch",
    "checked_url",
    "moved",
    "open_request",
    "shown_url",
    "size",
]

#: Seconds one read may wait for the server.
TIMEOUT_SECONDS = 60.0
#: Seconds one whole answer may take to arrive, however steadily it trickles in.
DEADLINE_SECONDS = 300.0
#: The largest answer held in memory.
MAX_ANSWER_BYTES = 256 << 20
#: What is kept of an error answer's body (its first line is what a message quotes).
_ERROR_BYTES = 64 << 10
_CHUNK = 1 << 16

#: What opening a request and reading its answer may raise besides `urllib.error.HTTPError`: no
#: answer (`OSError`, which `urllib.error.URLError` is), an answer that is no HTTP
#: (`http.client.HTTPException`: a bad status line, a body cut short), a URL urllib cannot use.
FAILURES: tuple[type[Exception], ...] = (
    urllib.error.URLError,
    OSError,
    http.client.HTTPException,
    ValueError,
)

#: A host name or address as http.client takes it: no space, control character or delimiter.
_HOST = re.compile(r"[\w.~%:-]+")


@dataclass(frozen=True)
class Bounds:
    """The limits of one request: ``timeout`` per read, ``deadline`` for the whole exchange,
    ``max_bytes`` for the body."""

    timeout: float = TIMEOUT_SECONDS
    deadline: float = DEADLINE_SECONDS
    max_bytes: int = MAX_ANSWER_BYTES


class GaveUp(ReplayError):
    """A request given up at one of its `Bounds`: ``limit`` says which ("took more than 5 s to
    answer", "answered with more than 256 MiB"), the message names the URL as `shown_url` shows
    it."""

    def __init__(self, url: str, limit: str) -> None:
        super().__init__(f"{shown_url(url)} {limit}: gave up")
        self.url = url
        self.limit = limit


class Meter:
    """One answer's bounds as it arrives: `take` counts each chunk and raises `GaveUp` past
    ``max_bytes`` or ``deadline`` (counted from the meter's making); the reader every client uses,
    whatever its HTTP library."""

    def __init__(self, url: str, bounds: Bounds) -> None:
        self.url = url
        self.bounds = bounds
        self.started = time.monotonic()
        self.held = 0

    def late(self) -> GaveUp:
        return GaveUp(self.url, f"took more than {self.bounds.deadline:g} s to answer")

    def too_large(self) -> GaveUp:
        return GaveUp(self.url, f"answered with more than {size(self.bounds.max_bytes)}")

    def expect(self, length: str | None) -> None:
        """A ``Content-Length`` past the cap is refused before any of the body is read."""
        if length is not None and length.strip().isdigit() and int(length) > self.bounds.max_bytes:
            raise self.too_large()

    def take(self, count: int) -> None:
        self.held += count
        if self.held > self.bounds.max_bytes:
            raise self.too_large()
        if time.monotonic() - self.started > self.bounds.deadline:
            raise self.late()


class Watch:
    """The deadline of one exchange: when it passes, every socket the exchange opened (`add`) is
    shut, so a read blocked in the status line, the headers or the body returns at once; `cancel`
    when the exchange is over."""

    def __init__(self, deadline: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(deadline, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


class _Watched(http.client.HTTPConnection):
    def __init__(self, host: str, *, watch: Watch, **kwargs: Any) -> None:
        super().__init__(host, **kwargs)
        self._watch = watch

    def connect(self) -> None:
        super().connect()
        self._watch.add(self.sock)


class _WatchedTLS(http.client.HTTPSConnection):
    def __init__(self, host: str, *, watch: Watch, **kwargs: Any) -> None:
        super().__init__(host, **kwargs)
        self._watch = watch

    def connect(self) -> None:
        super().connect()
        self._watch.add(self.sock)


class _WatchedRequest(urllib.request.Request):
    watch: Watch


class _HTTP(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        if not isinstance(req, _WatchedRequest):
            return super().http_open(req)
        return self.do_open(functools.partial(_Watched, watch=req.watch), req)


class _HTTPS(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        if not isinstance(req, _WatchedRequest):
            return super().https_open(req)
        context = getattr(self, "_context", None)
        return self.do_open(functools.partial(_WatchedTLS, watch=req.watch), req, context=context)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Every 3xx comes back as the `urllib.error.HTTPError` it is, unfollowed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects, _HTTP, _HTTPS)


class Answer:
    """An answer being read within its bounds: ``status``, ``headers``, and `read` (the whole
    body, or `GaveUp`). Closing it closes the connection and stops its watchdog."""

    def __init__(self, response: Any, meter: Meter, watch: Watch) -> None:
        self._response = response
        self._meter = meter
        self._watch = watch
        self.status: int = response.status
        self.headers: Any = response.headers

    def read(self) -> bytes:
        return _read(self._response, self._meter, self._watch)

    def close(self) -> None:
        self._watch.cancel()
        self._response.close()

    def __enter__(self) -> Answer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_request(request: urllib.request.Request, bounds: Bounds | float | None = None) -> Answer:
    """Send ``request`` through the opener that follows no redirect, within ``bounds`` (a number:
    the timeout per read, the other bounds their defaults). A status that is no success raises
    its `urllib.error.HTTPError`, its body already read (at most 64 KiB of it kept, within the
    deadline); a limit hit raises `GaveUp`; no answer raises one of `FAILURES`."""
    if not isinstance(bounds, Bounds):
        bounds = Bounds() if bounds is None else Bounds(timeout=bounds)
    url = request.full_url
    watched = _WatchedRequest(
        url, data=request.data, headers=dict(request.header_items()), method=request.get_method()
    )
    watch = watched.watch = Watch(bounds.deadline)
    meter = Meter(url, bounds)
    try:
        response = _OPENER.open(watched, timeout=min(bounds.timeout, bounds.deadline))
    except urllib.error.HTTPError as refused:
        with refused:
            body = _error_body(refused, meter, watch)
        watch.cancel()
        raise urllib.error.HTTPError(
            refused.url, refused.code, refused.msg, refused.headers, io.BytesIO(body)
        ) from None
    except FAILURES:
        watch.cancel()
        if watch.expired:
            raise meter.late() from None
        raise
    return Answer(response, meter, watch)


def _read(response: Any, meter: Meter, watch: Watch) -> bytes:
    """``response``'s whole body within ``meter``'s bounds (a body cut short by the watchdog is
    the deadline passed, not a short body)."""
    length = response.headers.get("content-length")
    meter.expect(length)
    chunks: list[bytes] = []
    try:
        while chunk := response.read1(_CHUNK):
            meter.take(len(chunk))
            chunks.append(chunk)
    except FAILURES:
        if watch.expired:
            raise meter.late() from None
        raise
    if watch.expired:
        raise meter.late()
    data = b"".join(chunks)
    if length is not None and length.strip().isdigit() and meter.held < int(length):
        raise http.client.IncompleteRead(data, int(length) - meter.held)
    return data


def _error_body(refused: urllib.error.HTTPError, meter: Meter, watch: Watch) -> bytes:
    """The first 64 KiB of an error answer's body (what is past them is not read)."""
    chunks: list[bytes] = []
    held = 0
    try:
        while held < _ERROR_BYTES and not watch.expired:
            chunk = refused.read1(_ERROR_BYTES - held)
            if not chunk:
                break
            held += len(chunk)
            chunks.append(chunk)
    except FAILURES:
        pass  # what was read is what there is
    return b"".join(chunks)


def size(count: int) -> str:
    """``count`` bytes as messages say it: "256 MiB", "1000 bytes"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift and count % (1 << shift) == 0:
            return f"{count >> shift} {unit}"
    return f"{count} bytes"


def moved(refused: urllib.error.HTTPError, url: str) -> str | None:
    """For a 3xx answer to ``url``: "answered 301, moved to LOCATION: give that URL" (the
    location shown as `shown_url` shows it); None for any other status."""
    if not 300 <= refused.code < 400:
        return None
    location = refused.headers.get("location") if refused.headers else None
    if not location:
        return f"answered {refused.code} (a redirect, not followed) without saying where to"
    try:
        target = urllib.parse.urljoin(url, location)
    except ValueError:
        target = location
    return f"answered {refused.code}, moved to {shown_url(target)}: give that URL"


def shown_url(url: str) -> str:
    """``url`` without its query string, fragment, or user name and password: what a message may
    print of a URL that could hold a key."""
    head = re.split(r"[?#]", url, maxsplit=1)[0]
    scheme, separator, rest = head.partition("://")
    if not separator:
        return head
    authority, slash, path = rest.partition("/")
    return f"{scheme}://{authority.rpartition('@')[2]}{slash}{path}"


def checked_url(
    url: str, what: str, *, shown: str | None = None, schemes: tuple[str, ...] = ("http", "https")
) -> urllib.parse.SplitResult:
    """``url`` split, with one of ``schemes``, a host http.client takes and, when it has a port,
    one from 1 to 65535; else a one-line `ReplayError` about ``what`` (e.g. "OTLP endpoint") that
    shows the URL as ``shown`` (default: as `shown_url` does). A URL with a user name or password
    is refused (urllib would not send them): the message does not repeat them."""
    shown = shown_url(url) if shown is None else shown
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError as exc:
        raise AddressError(f"{what} {shown!r} is not a URL ({exc})") from None
    if parts.scheme not in schemes or not parts.netloc:
        wanted = " or ".join(f"{scheme}://" for scheme in schemes)
        raise AddressError(f"{what} {shown!r} is not an {wanted} URL")
    if "@" in parts.netloc:
        raise AddressError(
            f"{what} {shown!r} has a user name or password in it, which is not sent: drop them "
            "and give the key in a header or the environment variable instead"
        )
    host = parts.hostname or ""
    if not _HOST.fullmatch(host):
        raise AddressError(f"{what} {shown!r} has no host name a request can go to")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise AddressError(f"{what} {shown!r}: the port is not a number from 1 to 65535")
    return parts
