"""Write traces the way an OpenTelemetry pipeline would: OTLP JSON, JSON Lines and protobuf.

The contract:

* :func:`request_to_otlp_json` turns an ``ExportTraceServiceRequest`` into the OTLP JSON mapping
  of the OTLP specification ("JSON Protobuf Encoding"), which is *not* the generic protobuf JSON
  mapping: keys are lowerCamelCase, trace/span/parent ids (also in links) are lower-case hex, enums
  are integers, 64-bit integers (timestamps, ``intValue``) are decimal strings, fields at their
  default are omitted, other ``bytes`` (``bytesValue``) are standard base64, and non-finite doubles
  are the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``. A set oneof member is always written,
  even at its default (``{"stringValue": ""}``), so an empty ``AnyValue`` stays ``{}``.
* :func:`write_otlp_json_lines` writes one compact object per line, ``\\n`` terminated, like the
  Collector file exporter with ``format: json``.
* :func:`write_otlp_proto_stream` writes the Collector file exporter ``format: proto`` framing: per
  message a 4-byte big-endian unsigned length, then the serialized request.
* :func:`write_otlp_proto` writes one bare serialized request (an OTLP/HTTP protobuf body).
* :func:`send_otlp` POSTs one request to an OTLP/HTTP endpoint as protobuf, as the SDK's exporter
  does: to the `destination` made from a URL (``/v1/traces`` appended when it has no path), the
  ``OTEL_EXPORTER_OTLP_HEADERS`` / ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` headers and the caller's,
  gzip when asked; 429, 502, 503 and 504 are tried again after a short backoff (``Retry-After``
  followed up to a few seconds). A redirect is not followed (`otel_replay._web`). Any other
  refusal, a redirect, or no answer raises `otel_replay.errors.ExportError` naming the URL (without
  its query string) and the status.

Output is a pure function of the input messages, so fixtures generated with it are byte-stable.
"""

from __future__ import annotations

import base64
import gzip
import math
import os
import struct
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_replay._files import output_file
from otel_replay._web import (
    FAILURES,
    Bounds,
    GaveUp,
    checked_url,
    moved,
    open_request,
    shown_url,
)
from otel_replay.errors import ExportError, SettingError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "Destination",
    "Sent",
    "destination",
    "request_to_otlp_json",
    "send_otlp",
    "spans_to_request",
    "write_otlp_json_lines",
    "write_otlp_proto",
    "write_otlp_proto_stream",
]

PathLike = str | os.PathLike[str]

# OTLP overrides the protobuf JSON mapping for exactly these bytes fields (Span, Span.Link,
# LogRecord); matching by name keeps the walker generic over every OTLP message type.
_HEX_ID_FIELDS = frozenset({"trace_id", "span_id", "parent_span_id"})

_INT64_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_FLOAT_TYPES = frozenset({FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT})

# The length prefix is an unsigned 32-bit integer; a bigger message cannot be framed.
_MAX_FRAME = 0xFFFFFFFF


def request_to_otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """Return the OTLP JSON object (``{"resourceSpans": [...]}``) for one export request."""
    return _message_to_json(request)


def _message_to_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # ListFields yields only populated fields (plus set oneof members) in field-number order,
    # which gives "defaults omitted" for free and a stable key order.
    for field, value in message.ListFields():
        if field.is_repeated:
            out[field.json_name] = [_scalar_or_message(field, item) for item in value]
        else:
            out[field.json_name] = _scalar_or_message(field, value)
    return out


def _scalar_or_message(field: FieldDescriptor, value: Any) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_MESSAGE:
        if field.message_type.GetOptions().map_entry:
            # No OTLP message has a map field; refusing beats silently emitting a wrong shape.
            raise TypeError(f"map field {field.full_name} is not part of OTLP")
        return _message_to_json(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        data = bytes(value)
        if field.name in _HEX_ID_FIELDS:
            return data.hex()
        return base64.b64encode(data).decode("ascii")
    if kind in _INT64_TYPES:
        # Nanosecond timestamps exceed 2**53; a JSON number would lose digits in JavaScript readers.
        return str(int(value))
    if kind in _FLOAT_TYPES:
        number = float(value)
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return number
    # Enums are already plain ints (OTLP requires integers, not names); bool/str/int32 pass through.
    return value


def spans_to_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """Encode finished SDK spans exactly as the OTLP exporters of the Python SDK would."""
    # Imported here because it pulls in the SDK, which only callers holding SDK spans need.
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans)


def _json_line(request: ExportTraceServiceRequest) -> bytes:
    return orjson.dumps(request_to_otlp_json(request)) + b"\n"


def write_otlp_json_lines(requests: Iterable[ExportTraceServiceRequest], path: PathLike) -> None:
    """Write one compact OTLP JSON object per request and line (Collector ``format: json``)."""
    with output_file(Path(path)) as out:
        out.writelines(_json_line(request) for request in requests)


def _serialize(request: ExportTraceServiceRequest) -> bytes:
    # deterministic=True pins the byte order of anything unordered, so fixtures are reproducible.
    body: bytes = request.SerializeToString(deterministic=True)
    return body


def write_otlp_proto_stream(requests: Iterable[ExportTraceServiceRequest], path: PathLike) -> None:
    """Write length-prefixed serialized requests (Collector file exporter ``format: proto``)."""
    with output_file(Path(path)) as out:
        for request in requests:
            body = _serialize(request)
            if len(body) > _MAX_FRAME:
                raise ValueError(
                    f"request of {len(body)} bytes does not fit a 4-byte length prefix"
                )
            out.write(struct.pack(">I", len(body)))
            out.write(body)


def write_otlp_proto(request: ExportTraceServiceRequest, path: PathLike) -> None:
    """Write one bare serialized ``ExportTraceServiceRequest`` (no framing)."""
    with output_file(Path(path)) as out:
        out.write(_serialize(request))


#: The statuses the OTLP/HTTP specification says to try again on (the server is busy or asks
#: the client to slow down); everything else is an answer.
_RETRYABLE = frozenset({429, 502, 503, 504})

#: Seconds waited before each retry, as the SDK's exporter backs off (shorter: a command waits).
BACKOFF = (0.5, 1.0, 2.0)

#: The longest ``Retry-After`` followed, in seconds; a server asking for more is refusing.
_MAX_RETRY_AFTER = 5.0

#: Seconds one POST may take (``OTEL_EXPORTER_OTLP_TIMEOUT``'s default).
TIMEOUT = 10.0
#: The largest answer an OTLP endpoint may give (a partial success is a few lines).
_MAX_ANSWER = 16 << 20

_HEADER_VARIABLES = ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS")
_COMPRESSION_VARIABLES = ("OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION")
_TIMEOUT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")


@dataclass(frozen=True, slots=True, repr=False)
class Destination:
    """Where requests go: the full URL POSTed to, the headers sent with each (lower-case names),
    whether bodies are gzipped, and the seconds one POST may take, its answer whole. Its repr
    shows the URL without its query and the headers' names only, which may hold keys."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    gzip: bool = False
    timeout: float = TIMEOUT

    def __repr__(self) -> str:
        names = tuple(name for name, _ in self.headers)
        return f"Destination(url={shown_url(self.url)!r}, headers={names!r}, gzip={self.gzip!r})"


@dataclass(frozen=True, slots=True)
class Sent:
    """What one POST did: the URL, the status that answered it, the spans it carried, and the
    spans the endpoint said it rejected (an OTLP partial success) with its message."""

    url: str
    status: int
    spans: int
    rejected: int = 0
    message: str = ""


def destination(
    endpoint: str,
    headers: Sequence[str] = (),
    compression: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Destination:
    """The `Destination` of ``endpoint`` (an ``http://`` or ``https://`` URL): a URL without a path
    gets ``/v1/traces`` (as ``OTEL_EXPORTER_OTLP_ENDPOINT`` does), one with a path is used as it
    is. Headers: ``OTEL_EXPORTER_OTLP_HEADERS``, then ``OTEL_EXPORTER_OTLP_TRACES_HEADERS``
    (``key=value`` pairs parted by commas, values percent-encoded), then ``headers``
    (``KEY=VALUE`` each); a later one of the same name wins. ``compression`` (``gzip`` or
    ``none``) defaults to ``OTEL_EXPORTER_OTLP_TRACES_COMPRESSION``, else
    ``OTEL_EXPORTER_OTLP_COMPRESSION``, else none. The time one POST may take, its answer whole,
    is ``OTEL_EXPORTER_OTLP_TRACES_TIMEOUT``, else ``OTEL_EXPORTER_OTLP_TIMEOUT`` (milliseconds, as
    the SDK's exporter reads them), else 10 s."""
    env = os.environ if environ is None else environ
    parts = checked_url(endpoint, "OTLP endpoint")
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    chosen: dict[str, str] = {}
    for variable in _HEADER_VARIABLES:
        items = filter(None, (item.strip() for item in env.get(variable, "").split(",")))
        for position, pair in enumerate(items, 1):
            name, value = _pair(pair, f"entry {position} of {variable}")
            chosen[name] = urllib.parse.unquote(value)
    for position, pair in enumerate(headers, 1):
        name, value = _pair(pair, f"header {position}")
        chosen[name] = value
    for variable in reversed(_COMPRESSION_VARIABLES):  # the traces' own first
        compression = compression or env.get(variable, "").strip().lower() or None
    if compression not in (None, "gzip", "none"):
        raise SettingError(f"OTLP compression {compression!r} is not gzip or none")
    url = urllib.parse.urlunsplit(parts)
    return Destination(url, tuple(chosen.items()), compression == "gzip", _timeout(env))


def _timeout(env: Mapping[str, str]) -> float:
    """Seconds one POST may take: the first timeout variable set, in milliseconds."""
    for variable in _TIMEOUT_VARIABLES:
        given = env.get(variable, "").strip()
        if not given:
            continue
        try:
            milliseconds = float(given)
        except ValueError:
            milliseconds = 0.0
        if not 0 < milliseconds < 1e9:
            raise SettingError(f"{variable}={given!r} is not a number of milliseconds above 0")
        return milliseconds / 1000
    return TIMEOUT


def _pair(text: str, where: str) -> tuple[str, str]:
    """``KEY=VALUE`` split; an entry that is not is told by ``where`` (its position), never by
    its text: with no ``=`` there is no telling a name from a value, and a value may be a key."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise SettingError(f"{where} is not KEY=VALUE (a name, '=', then the value)")
    return name.strip().lower(), value.strip()


def send_otlp(
    request: ExportTraceServiceRequest,
    to: Destination,
    *,
    timeout: float | None = None,
    deadline: float | None = None,
    backoff: Sequence[float] = BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> Sent:
    """POST ``request`` as protobuf to ``to``; retried after each of ``backoff``'s waits while the
    endpoint answers a retryable status. Each try waits at most ``timeout`` per read and
    ``deadline`` for its whole answer (both by default ``to.timeout``), and holds at most 16 MiB
    of it. Raises `ExportError` when it cannot be reached or answers
    with any other error status (or still a retryable one after the last wait)."""
    bounds = Bounds(timeout or to.timeout, deadline or to.timeout, _MAX_ANSWER)
    body = _serialize(request)
    headers = {"content-type": "application/x-protobuf", **dict(to.headers)}
    if to.gzip:
        body = gzip.compress(body)
        headers["content-encoding"] = "gzip"
    spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    shown = shown_url(to.url)
    for attempt in range(len(backoff) + 1):
        try:
            post = urllib.request.Request(to.url, data=body, headers=headers, method="POST")
            with open_request(post, bounds) as answer:
                return _sent(to.url, answer.status, spans, answer.headers, answer.read())
        except GaveUp as exc:
            raise ExportError(
                f"the OTLP endpoint {shown} {exc.limit}: gave up", url=to.url
            ) from None
        except urllib.error.HTTPError as refused:
            with refused:  # its answer's connection closed, whatever was read of it
                wait = _retry_wait(refused, backoff, attempt)
                if wait is None:
                    raise _refused(to.url, refused, attempt) from None
            sleep(wait)
        except FAILURES as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise ExportError(
                f"could not reach the OTLP endpoint {shown}: {_reason(reason)}", url=to.url
            ) from None
    raise AssertionError("unreachable: the last attempt returns or raises")


def _retry_wait(
    refused: urllib.error.HTTPError, backoff: Sequence[float], attempt: int
) -> float | None:
    """How long to wait before trying again, or None: do not."""
    if refused.code not in _RETRYABLE or attempt >= len(backoff):
        return None
    asked = refused.headers.get("retry-after") if refused.headers else None
    if asked is not None and asked.strip().isdigit():
        seconds = float(asked.strip())
        return seconds if seconds <= _MAX_RETRY_AFTER else None
    return backoff[attempt]


def _refused(url: str, refused: urllib.error.HTTPError, attempt: int) -> ExportError:
    redirect = moved(refused, url)
    if redirect is not None:
        message = f"the OTLP endpoint {shown_url(url)} {redirect}"
        return ExportError(message, url=url, status=refused.code)
    try:
        said = _said(refused.headers, refused.read())
    except FAILURES:
        said = ""
    tries = f" after {attempt + 1} tries" if attempt else ""
    return ExportError(
        f"the OTLP endpoint {shown_url(url)} answered {refused.code} {refused.reason}{tries}"
        + (f": {said}" if said else ""),
        url=url,
        status=refused.code,
    )


def _reason(reason: object) -> str:
    text = getattr(reason, "strerror", None) or str(reason)
    return str(text)


def _said(headers: Any, body: bytes) -> str:
    """An error answer's message: the ``google.rpc.Status`` an OTLP server sends, else its text."""
    kind = (headers.get("content-type") if headers else None) or ""
    if "protobuf" in kind:
        return _status_message(body)
    text = body.decode("utf-8", "replace").strip()
    return " ".join(text.split())[:200]


def _status_message(body: bytes) -> str:
    """Field 2 (``message``) of a serialized ``google.rpc.Status``; "" when it has none or the
    body is not one. Read off the wire: the message type is not among this package's dependencies."""
    at = 0
    while at < len(body):
        tag, at = _varint(body, at)
        if tag & 7 == 0:  # a varint (the code)
            _, at = _varint(body, at)
        elif tag & 7 == 2:  # length-delimited: the message, or details
            length, at = _varint(body, at)
            if tag >> 3 == 2:
                return body[at : at + length].decode("utf-8", "replace")[:200]
            at += length
        else:
            return ""
    return ""


def _varint(body: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while at < len(body):
        byte = body[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at
    return value, len(body) + 1  # cut short: ends the walk


def _sent(url: str, status: int, spans: int, headers: Any, body: bytes) -> Sent:
    kind = (headers.get("content-type") if headers else None) or ""
    if "protobuf" not in kind or not body:
        return Sent(url, status, spans)
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    try:
        answer = ExportTraceServiceResponse.FromString(body)
    except DecodeError:
        return Sent(url, status, spans)
    partial = answer.partial_success
    return Sent(url, status, spans, int(partial.rejected_spans), str(partial.error_message))
