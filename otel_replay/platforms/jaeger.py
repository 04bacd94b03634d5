"""Jaeger's query service read as runs: ``import jaeger://HOST:PORT/SERVICE``.

A server is named ``jaeger://HOST:PORT`` (port 16686, the query service's, when left out), a service
by its name after it: ``jaeger://127.0.0.1:16686/support-agent``. Requests go over plain HTTP to the
query API the Jaeger UI uses, with ``Authorization: Bearer`` and the token in ``JAEGER_API_KEY``
when it is set (a Jaeger behind an authenticating proxy).

`read_jaeger` asks ``GET /api/services`` whether the service is there (naming the services there
when it is not), then searches ``GET /api/traces?service=&start=&end=&limit=``: every trace with a
span of the service in the window (with ``since``, from then to now; else all Jaeger holds), each
whole, as the search answers them. Jaeger's search has no cursor and its backends do not promise
which traces a full answer holds, so a window whose answer is full is split in two and each half
searched again, until no answer is full: no trace is missed whatever order a backend keeps. The
answers are Jaeger JSON (`otel_replay.importers._jaeger`), decoded into the same assembly as files.

Bounded: each answer within the client's deadline and size cap (`otel_replay.platforms._http`), at
most ``max_requests`` searches and ``max_traces`` traces (then it gives up, saying to narrow the
search with ``since``), progress reported after each search. Everything is fetched before the first
run is handed over: a server that fails half way leaves nothing half imported.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from otel_replay._web import checked_url, shown_url
from otel_replay.errors import AddressError, PlatformError, ReplayError, TraceFormatError, setting
from otel_replay.importers import JAEGER_FORMAT, ReadOptions, SpanRecord, TraceBuffer, decode_jaeger
from otel_replay.model import Trajectory
from otel_replay.platforms._http import MAX_HELD_BYTES, MAX_HELD_SPANS, Held, JsonClient

__all__ = [
    "DEFAULT_PORT",
    "KEY_VARIABLE",
    "SCHEME",
    "JaegerAddress",
    "is_jaeger_url",
    "parse_jaeger_url",
    "read_jaeger",
]

SCHEME = "jaeger://"
KEY_VARIABLE = "JAEGER_API_KEY"
DEFAULT_PORT = 16686
#: Traces asked for in one search (the Jaeger UI's own largest is 1,500).
SEARCH_LIMIT = 500
#: The most searches one import makes, and the most traces it holds.
MAX_REQUESTS = 2_000
MAX_TRACES = 20_000

#: Told what has been fetched so far, after each search (a line for standard error).
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class JaegerAddress:
    """A Jaeger query service (``host``, ``port``) and one of its services."""

    host: str
    port: int
    service: str | None = None

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        service = "/" + urllib.parse.quote(self.service, safe="") if self.service else ""
        return f"{SCHEME}{self.host}:{self.port}{service}"


def is_jaeger_url(text: str) -> bool:
    return text.startswith(SCHEME)


def parse_jaeger_url(url: str) -> JaegerAddress:
    """``jaeger://HOST[:PORT][/SERVICE]``; anything else is a `ReplayError` saying the form."""
    form = "jaeger://HOST:PORT/SERVICE (the port is 16686 when left out)"
    shown = shown_url(url)
    if not is_jaeger_url(url):
        raise AddressError(f"{shown!r} is not a Jaeger address: expected {form}")
    try:
        parts = checked_url("http://" + url[len(SCHEME) :], "Jaeger address", shown=shown)
    except ReplayError as exc:
        raise AddressError(f"{exc}; expected {form}") from None
    if parts.query or parts.fragment:
        raise AddressError(f"{shown!r} is not a Jaeger address: expected {form}")
    service = urllib.parse.unquote(parts.path.strip("/")) or None
    if service is not None and ("/" in service or "?" in service or "#" in service):
        raise AddressError(f"{shown!r}: a Jaeger service name has no '/', '?' or '#'")
    assert parts.hostname is not None  # checked_url saw a host
    return JaegerAddress(parts.hostname, parts.port or DEFAULT_PORT, service)


def read_jaeger(
    url: str,
    since_ns: int | None = None,
    options: ReadOptions | None = None,
    key: str | None = None,
    *,
    progress: Progress | None = None,
    client: JsonClient | None = None,
    now_ns: int | None = None,
    max_requests: int = MAX_REQUESTS,
    max_traces: int = MAX_TRACES,
    search_limit: int = SEARCH_LIMIT,
    held: tuple[int, int] = (MAX_HELD_BYTES, MAX_HELD_SPANS),
) -> Iterator[Trajectory]:
    """The runs of the service ``url`` names (``jaeger://HOST:PORT/SERVICE``): every trace with a
    span of it (started since ``since_ns`` when given), each whole. ``key`` is a bearer token
    (default: ``JAEGER_API_KEY``); ``client`` one to use instead (its bounds); ``search_limit`` the
    traces asked for in one search; ``held`` the most bytes of answers and spans held until the
    runs are made. A server that cannot
    be reached, has no such service, answers what is no Jaeger JSON or holds more than the bounds
    raises `ReplayError` before any run is yielded."""
    address = parse_jaeger_url(url)
    if address.service is None:
        raise AddressError(f"{url!r} names no service: jaeger://HOST:PORT/SERVICE")
    options = options or ReadOptions()
    if client is None:
        key = os.environ.get(KEY_VARIABLE) if key is None else key
        client = JsonClient("Jaeger", address.base, key or None, KEY_VARIABLE)
    _check_service(client, address.service)
    bounds = (max_requests, max_traces, search_limit)
    search = _Search(client, address, options, progress, bounds, Held(client, *held))
    end = (time.time_ns() if now_ns is None else now_ns) // 1000 + 1
    search.window(0 if since_ns is None else since_ns // 1000, end)
    yield from search.runs()


def _check_service(client: JsonClient, service: str) -> None:
    answer = client.get("/api/services", (), "the list of services")
    names = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(names, list):
        raise PlatformError(
            f"Jaeger at {client.base} answered /api/services with no list of services (is it "
            "Jaeger's query service, port 16686?)"
        )
    if service not in names:
        there = ", ".join(sorted(str(n) for n in names)[:20]) or "none"
        raise PlatformError(
            f"Jaeger at {client.base} has no service {service!r} (its services: {there})"
        )


class _Search:
    """The traces found so far, by id, and the searches made."""

    def __init__(
        self,
        client: JsonClient,
        address: JaegerAddress,
        options: ReadOptions,
        progress: Progress | None,
        bounds: tuple[int, int, int],
        held: Held,
    ) -> None:
        self._client = client
        self._held = held
        self._address = address
        self._options = options
        self._progress = progress
        self._max_requests, self._max_traces, self._limit = bounds
        self._traces: dict[str, list[SpanRecord]] = {}
        self.requests = 0

    def window(self, start: int, end: int) -> None:
        """Every trace of the window [start, end) µs: searched, and split in two while full."""
        stack = [(start, end)]
        while stack:
            low, high = stack.pop()
            full = self._search(low, high)
            if full and high - low > 1:
                middle = (low + high) // 2
                stack += [(low, middle), (middle, high)]

    def _search(self, start: int, end: int) -> bool:
        """Search one window; whether its answer was full (it may hold more)."""
        if self.requests >= self._max_requests:
            raise PlatformError(
                f"Jaeger at {self._client.base} still had more traces after {self.requests} "
                f"searches, the most made: gave up (narrow it with {setting('since')})"
            )
        self.requests += 1
        params = [
            ("service", self._address.service or ""),
            ("start", str(start)),
            ("end", str(end)),
            ("limit", str(self._limit)),
        ]
        what = f"search {self.requests} of the traces of {self._address.service!r}"
        answer = self._client.get("/api/traces", params, what)
        traces = _answer_traces(answer, self._client.base, what)
        self._options.report.records += 1
        new = 0
        for i, trace in enumerate(traces):
            trace_id = trace.get("traceID") if isinstance(trace, dict) else None
            if isinstance(trace_id, str) and trace_id in self._traces:
                continue  # found again by an overlapping or split window
            located = self._invalid(what, i)
            try:
                spans = list(decode_jaeger({"data": [trace]}, located))
            except TraceFormatError as exc:
                if exc.path is not None:  # already located (and not skipped)
                    raise
                located(exc)  # no trace at all: refused, or skipped whole
                spans = []
            self._traces[str(trace_id) if trace_id else f"{what}#{i}"] = spans
            new += len(spans)
            if len(self._traces) > self._max_traces:
                raise PlatformError(
                    f"Jaeger at {self._client.base} holds more than {self._max_traces} traces "
                    f"of {self._address.service!r} here: gave up (narrow it with {setting('since')})"
                )
        self._held.add(what, new)
        if self._progress is not None:
            found = len(self._traces)
            self._progress(
                f"{found} trace{'' if found == 1 else 's'} of {self._address.service!r} fetched "
                f"from Jaeger ({self.requests} search{'' if self.requests == 1 else 'es'})"
            )
        return len(traces) >= self._limit

    def _invalid(self, what: str, index: int) -> Callable[[TraceFormatError], None]:
        def invalid(error: TraceFormatError) -> None:
            inner = (error.where or "").removeprefix("data[0]").lstrip(".")
            where = f"{what}, data[{index}]" + (f".{inner}" if inner else "")
            self._options.invalid(
                TraceFormatError(error.reason, path=self._address.url, where=where)
            )

        return invalid

    def runs(self) -> Iterator[Trajectory]:
        metadata = {"source": self._address.url, "format": JAEGER_FORMAT}
        buffer = TraceBuffer(self._options, metadata)
        order = 0
        for spans in self._traces.values():
            for span in spans:
                span.order = order
                order += 1
                buffer.add(span, "untraced-jaeger")
        self._traces = {}
        yield from buffer.drain()


def _answer_traces(answer: Any, base: str, what: str) -> list[Any]:
    if not isinstance(answer, dict) or not isinstance(answer.get("data") or [], list):
        raise PlatformError(f"Jaeger at {base} answered {what} with no list of traces")
    errors = answer.get("errors")
    if errors and not answer.get("data"):
        shown = "; ".join(
            str(e.get("msg", e)) if isinstance(e, dict) else str(e) for e in errors[:3]
        )
        raise PlatformError(f"Jaeger at {base} answered {what} with errors: {shown}")
    return list(answer.get("data") or [])
