"""What both HTTP clients of the package share (the OTLP sender and the platforms' REST client):
one urllib opener that never follows a redirect, the check of a URL before anything is done with
it, and a URL as messages show it.

A redirect is not followed because urllib would turn a POST into a GET (and call the send a
success though nothing was delivered) and carry the ``Authorization`` header to whatever host the
answer names: a 3xx is an error that names the status and where it points. A URL is shown
without its query string, fragment or user name and password, which may hold credentials."""

from __future__ import annotations

import http.client
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from otel_replay.errors import ReplayError

__all__ = ["FAILURES", "checked_url", "moved", "open_request", "shown_url"]

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


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Every 3xx comes back as the `urllib.error.HTTPError` it is, unfollowed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def open_request(request: urllib.request.Request, timeout: float) -> Any:
    """``urlopen`` through the opener that follows no redirect (a 3xx raises its HTTPError)."""
    return _OPENER.open(request, timeout=timeout)


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
        raise ReplayError(f"{what} {shown!r} is not a URL ({exc})") from None
    if parts.scheme not in schemes or not parts.netloc:
        wanted = " or ".join(f"{scheme}://" for scheme in schemes)
        raise ReplayError(f"{what} {shown!r} is not an {wanted} URL")
    if "@" in parts.netloc:
        raise ReplayError(
            f"{what} {shown!r} has a user name or password in it, which is not sent: drop them "
            "and give the key in a header or the environment variable instead"
        )
    host = parts.hostname or ""
    if not _HOST.fullmatch(host):
        raise ReplayError(f"{what} {shown!r} has no host name a request can go to")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise ReplayError(f"{what} {shown!r}: the port is not a number from 1 to 65535")
    return parts
