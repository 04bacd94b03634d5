"""OTLP/HTTP trace receiver: ``POST /v1/traces`` into the store, as the OTLP specification asks.

* ``application/x-protobuf`` and ``application/json`` bodies (anything else: 415), plain or
  ``Content-Encoding: gzip`` (another encoding: 415); a body over ``max_body_bytes``, before or after
  inflating, is refused with 413 and never held whole.
* A body read one way only (`otel_replay.receiver._framing`): one Content-Length of ASCII digits
  or ``Transfer-Encoding: chunked``, whole, followed by nothing or by another request; gzip whole to
  its last member's trailer (`otel_replay.receiver._gzip`). Anything else: 400 (another transfer
  coding: 501), nothing stored, the connection closed: a request is stored whole or not at all.
* 200 with an ``ExportTraceServiceResponse`` in the request's encoding; spans that cannot be decoded,
  or hold what no run can keep (a token count beyond 64 bits), are left out and counted in its
  ``partial_success`` (``rejected_spans``, the first reason in ``error_message``). A body that is
  not a request, or a run the store cannot hold as JSON: 400, with a ``google.rpc.Status`` saying
  why, and nothing of the request stored.
* The answer is sent after the spans are committed (`Intake`): a killed receiver loses only requests
  it had not answered, which the exporter retries. A store that cannot take them (busy past its
  patience, a full disk): 503 with ``Retry-After``, which exporters retry.
* Connections are kept alive and served concurrently (a thread each, decoding in parallel; the store
  has one writer). `Receiver.stop` answers the requests in hand, then closes.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
from google.protobuf.json_format import MessageToJson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from otel_replay.errors import (
    CanonicalJSONError,
    ListenError,
    ReplayError,
    TraceFormatError,
    quoting_through,
    setting,
)
from otel_replay.importers import spans_of_request
from otel_replay.ingest import Ingested
from otel_replay.receiver._framing import (
    Refused,
    content_length,
    read_chunked,
    refuse_unless_a_request_follows,
)
from otel_replay.receiver._gzip import GzipError, InflatedTooLarge, gunzip
from otel_replay.receiver._intake import Intake, Stored, untraced_id
from otel_replay.store import Store

PATH = "/v1/traces"
PROTOBUF, JSON = "application/x-protobuf", "application/json"
#: What the OTLP/HTTP specification advises a receiver to accept at most, decompressed
#: (docs/importing.md, "Receive traces as they happen").
DEFAULT_MAX_BODY_BYTES = 64 << 20
DEFAULT_FLUSH_AFTER = 30.0
#: How long a kept-alive connection may sit idle before it is closed (and how long a stop waits).
IDLE_SECONDS = 2.0


class Receiver:
    """``POST /v1/traces`` on ``host:port`` (port 0: a free one) into the store ``open_store`` opens
    (on the writer thread: a connection belongs to the thread that opened it).

    ``on_stored`` hears of each run stored or merged into, ``on_request`` of each request answered
    (its status and a line saying what it did), ``on_trouble`` of what went wrong with no request
    to answer (a waiting trace built on its own time); all on server threads.
    """

    def __init__(
        self,
        open_store: Callable[[], Store],
        host: str = "127.0.0.1",
        port: int = 4318,
        *,
        flush_after: float = DEFAULT_FLUSH_AFTER,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        on_stored: Callable[[Ingested], None] | None = None,
        on_request: Callable[[int, str], None] | None = None,
        on_trouble: Callable[[str], None] | None = None,
    ) -> None:
        try:
            self._server = _Server((host, port), _Handler)
        except OSError as exc:
            raise ListenError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc} (is another receiver or a "
                f"Collector there? {setting('port')} picks another)"
            ) from None
        self._server.receiver = self
        self.max_body_bytes = max_body_bytes
        self.on_request = on_request
        self.stopping = False
        host_name, bound = self._server.server_address[:2]
        name = host_name.decode() if isinstance(host_name, bytes) else str(host_name)
        self.url = f"http://{name}:{bound}"
        self.intake = Intake(
            open_store, f"otlp-http {self.url}", flush_after, on_stored, on_trouble
        )
        self._serving: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Open the store and serve on a background thread; raises what opening the store raised."""
        try:
            self.intake.start()
        except BaseException:
            self._server.server_close()
            raise
        self._serving = threading.Thread(target=self._server.serve_forever, name="otlp-http")
        self._serving.start()

    def stop(self) -> Stored:
        """Stop taking requests, answer the ones in hand, build every trace still waiting for its
        root (a later part merges into it), and close the store."""
        self.stopping = True
        self._server.shutdown()
        self._server.server_close()  # joins the connection threads: requests in hand are answered
        if self._serving is not None:
            self._serving.join()
        return self.intake.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # a stop waits for the requests in hand
    block_on_close = True
    receiver: Receiver

    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet for a client that went away (reset, closed while we wrote, silent past the idle
        time): that is the client's business. Anything else is our bug: its traceback."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: exporters send batch after batch
    timeout = IDLE_SECONDS
    server: _Server

    def do_POST(self) -> None:
        receiver = self.server.receiver
        media = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        json = media == JSON
        try:
            length = content_length(self.headers)  # before anything: where does this body end?
            if self.path.split("?")[0] != PATH:
                raise Refused(HTTPStatus.NOT_FOUND, f"no such endpoint {self.path!r}: {PATH}")
            if media not in (PROTOBUF, JSON):
                raise Refused(
                    HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                    f"Content-Type {media or '(none)'!r}: send {PROTOBUF} or {JSON}",
                )
            body = self._body(length, receiver.max_body_bytes)
            with quoting_through(receiver.intake.scrub.text):  # what a refusal quotes
                spans, rejected = spans_of_request(body, json=json)
            stored = receiver.intake.receive(spans, untraced_id(body))
        except Refused as exc:
            self.close_connection = True  # what is left of the body must not be read as a request
            self._answer_status(exc.status, str(exc), json)
            return
        except (TraceFormatError, CanonicalJSONError) as exc:  # the request's content: no retry
            self._answer_status(HTTPStatus.BAD_REQUEST, str(exc), json)
            return
        except ReplayError as exc:  # the store: busy past its patience, full, read-only
            self._answer_status(HTTPStatus.SERVICE_UNAVAILABLE, str(exc), json, retry=True)
            return
        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = len(rejected)
            response.partial_success.error_message = receiver.intake.scrub.text(str(rejected[0]))
        self._answer(HTTPStatus.OK, _encoded(response, json), json)
        self._told(HTTPStatus.OK, _summary(len(spans), len(rejected), stored))

    def do_GET(self) -> None:
        self.close_connection = True  # a body it may have is not read: it must not be a request
        self._answer_status(HTTPStatus.METHOD_NOT_ALLOWED, f"POST spans to {PATH}", False)

    do_PUT = do_DELETE = do_PATCH = do_GET

    def _body(self, length: int | None, limit: int) -> bytes:
        """The request's body (``length`` bytes, or chunked with None), inflated, refused past
        ``limit`` bytes without being held whole, and refused unless it is whole and what follows
        it on the connection begins another request."""
        if length is None:
            raw = read_chunked(self.rfile, limit)
        elif length > limit:
            self._discard(length, limit)
            raise Refused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"a body of {length} bytes is over the limit of {limit} "
                f"({setting('max_body_bytes')})",
            )
        else:
            raw = self.rfile.read(length)
            if len(raw) < length:
                raise Refused(
                    HTTPStatus.BAD_REQUEST,
                    f"the body ends after {len(raw)} of the {length} bytes its Content-Length says",
                )
        refuse_unless_a_request_follows(self.rfile, self.connection)
        encoding = self.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding in ("", "identity"):
            return raw
        if encoding != "gzip":
            raise Refused(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"Content-Encoding {encoding!r}: send gzip or no encoding",
            )
        try:
            return gunzip(raw, limit)
        except GzipError as exc:
            raise Refused(HTTPStatus.BAD_REQUEST, str(exc)) from None
        except InflatedTooLarge as exc:
            raise Refused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"{exc} ({setting('max_body_bytes')})"
            ) from None

    def _discard(self, length: int, limit: int) -> None:
        """Read past a body refused for its size, a chunk at a time, so that the client, which
        sends it all before it reads an answer, gets the answer; a body claiming more than 16
        times the limit is not waited for: the connection is closed."""
        if length > 16 * limit:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 16))
            if not chunk:
                break
            length -= len(chunk)

    def _answer_status(
        self, status: HTTPStatus, message: str, json: bool, *, retry: bool = False
    ) -> None:
        """An error, as the ``google.rpc.Status`` OTLP/HTTP sends with one; what it quotes of the
        request redacted with ``serve --redact``'s patterns, as the stored runs are."""
        code = _RPC_CODES.get(status, 2)  # UNKNOWN
        message = self.server.receiver.intake.scrub.text(message)
        if json:
            body = orjson.dumps({"code": code, "message": message})
        else:
            body = _rpc_status(code, message)
        self._answer(status, body, json, retry=retry)
        self._told(status, message)

    def _answer(self, status: HTTPStatus, body: bytes, json: bool, *, retry: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", JSON if json else PROTOBUF)
        self.send_header("Content-Length", str(len(body)))
        if retry:
            self.send_header("Retry-After", "1")
        if self.server.receiver.stopping:
            self.close_connection = True
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _told(self, status: int, what: str) -> None:
        callback = self.server.receiver.on_request
        if callback is not None:
            callback(int(status), what)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the command reports what was stored (`Receiver` ``on_request``)."""


#: google.rpc.Code of each refusal (the status OTLP/HTTP bodies carry).
_RPC_CODES = {
    HTTPStatus.BAD_REQUEST: 3,  # INVALID_ARGUMENT
    HTTPStatus.NOT_FOUND: 5,  # NOT_FOUND
    HTTPStatus.METHOD_NOT_ALLOWED: 12,  # UNIMPLEMENTED
    HTTPStatus.LENGTH_REQUIRED: 3,
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: 8,  # RESOURCE_EXHAUSTED
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: 3,
    HTTPStatus.SERVICE_UNAVAILABLE: 14,  # UNAVAILABLE
    HTTPStatus.NOT_IMPLEMENTED: 12,
}


def _rpc_status(code: int, message: str) -> bytes:
    """``google.rpc.Status{code, message}`` in protobuf's wire format (two fields: no dependency)."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _encoded(response: ExportTraceServiceResponse, json: bool) -> bytes:
    if json:
        return str(MessageToJson(response, indent=None)).encode()
    return bytes(response.SerializeToString())


def _summary(spans: int, rejected: int, stored: Stored) -> str:
    """One line on what a request did."""
    parts = [f"{spans} span{'s' * (spans != 1)}"]
    if rejected:
        parts.append(f"{rejected} rejected")
    if stored.runs:
        parts.append(", ".join(f"{run.summary.id[:12]} {run.result.value}" for run in stored.runs))
    if stored.waiting:
        parts.append(f"{stored.waiting} trace{'s' * (stored.waiting != 1)} waiting for a root span")
    return "; ".join(parts)
