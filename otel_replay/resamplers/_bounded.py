"""The model clients' HTTP client (``httpx``, or its successor ``httpx2``: whichever the ``openai``
or ``anthropic`` client is built on) with the bounds every client of the package keeps (`otel_replay._web.Bounds`): each
read waits at most the timeout, the whole answer (connecting, headers, body) is in within the
deadline, or the connection's socket is shut, and the body holds at most ``max_bytes``. A limit
hit is a `GaveUp` naming the URL and the limit, which `gave_up` finds behind the client's own
error. Each request has its own connection, so the watchdog always knows its socket; a proxy the
environment names is used by the bounded transport itself, so no request goes around it."""

from __future__ import annotations

import importlib
import urllib.request
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from otel_replay._web import FAILURES, Bounds, GaveUp, Meter, Watch

#: The largest answer a model server may give.
MAX_MODEL_ANSWER_BYTES = 32 << 20


def http_module(sdk: str) -> ModuleType:
    """The HTTP library the client ``sdk`` ("openai", "anthropic") is built on: the ``httpx2``
    its newer releases take, else ``httpx``."""
    try:
        base = importlib.import_module(f"{sdk}._base_client")
    except ImportError:
        base = None
    for name in ("httpx2", "httpx"):
        module = getattr(base, name, None)
        if isinstance(module, ModuleType):
            return module
    return importlib.import_module("httpx")


def bounded_client(bounds: Bounds, sdk: str) -> Any:
    """A client of the HTTP library ``sdk`` is built on whose every request keeps ``bounds``. A
    limit hit is raised as the library's own error (a read timeout for the deadline), caused by
    the `GaveUp`, so the client's retries and errors treat it as they treat theirs."""
    httpx: Any = http_module(sdk)

    class Bounded(httpx.TransportError):  # type: ignore[misc]
        """A limit hit, as the library's own kind of error."""

    class Body(httpx.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, meter: Meter, watch: Watch) -> None:
            self._inner = inner
            self._meter = meter
            self._watch = watch

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._inner:
                    self._meter.take(len(chunk))
                    yield chunk
            except GaveUp as exc:
                raise _raised(exc) from exc
            except (httpx.TransportError, *FAILURES):
                if self._watch.expired:
                    raise _raised(self._meter.late()) from self._meter.late()
                raise
            if self._watch.expired:
                raise _raised(self._meter.late()) from self._meter.late()

        def close(self) -> None:
            self._watch.cancel()
            self._inner.close()

    def _raised(exc: GaveUp) -> Exception:
        if exc.limit.startswith("took"):
            return httpx.ReadTimeout(str(exc))  # type: ignore[no-any-return]
        return Bounded(str(exc))

    class Transport(httpx.BaseTransport):  # type: ignore[misc]
        """Requests sent directly or through the proxy the environment names for their URL
        (``HTTPS_PROXY``, ``NO_PROXY``...), bounded either way."""

        def __init__(self) -> None:
            self._inners: dict[str | None, Any] = {}

        def _inner(self, url: Any) -> Any:
            proxies = urllib.request.getproxies()
            proxy = proxies.get(url.scheme) or proxies.get("all")
            if proxy and urllib.request.proxy_bypass(url.host):
                proxy = None
            if proxy not in self._inners:
                # no connection is kept for the next request: each one's socket is its own to shut
                limits = httpx.Limits(max_keepalive_connections=0)
                self._inners[proxy] = httpx.HTTPTransport(limits=limits, proxy=proxy)
            return self._inners[proxy]

        def handle_request(self, request: Any) -> Any:
            watch = Watch(bounds.deadline)
            meter = Meter(str(request.url), bounds)
            earlier = request.extensions.get("trace")

            def trace(event: str, info: dict[str, Any]) -> None:
                if event == "connection.connect_tcp.complete":
                    stream = info.get("return_value")
                    watch.add(stream.get_extra_info("socket") if stream is not None else None)
                if earlier is not None:
                    earlier(event, info)

            request.extensions = {**request.extensions, "trace": trace}
            try:
                answer = self._inner(request.url).handle_request(request)
            except (httpx.TransportError, *FAILURES):
                watch.cancel()
                if watch.expired:
                    raise _raised(meter.late()) from meter.late()
                raise
            try:
                meter.expect(answer.headers.get("content-length"))
            except GaveUp as exc:
                watch.cancel()
                answer.close()
                raise _raised(exc) from exc
            return httpx.Response(
                answer.status_code,
                headers=answer.headers,
                stream=Body(answer.stream, meter, watch),
                extensions=answer.extensions,
                request=request,
            )

        def close(self) -> None:
            for inner in self._inners.values():
                inner.close()

    # the environment's proxies are the transport's to use: httpx would send through its own
    timeout = min(bounds.timeout, bounds.deadline)
    return httpx.Client(transport=Transport(), timeout=timeout, trust_env=False)


def gave_up(exc: BaseException) -> GaveUp | None:
    """The `GaveUp` behind a client's error (the clients wrap what their transport raised)."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None or isinstance(seen, GaveUp):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
