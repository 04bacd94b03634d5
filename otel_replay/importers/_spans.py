"""The decoded span every wire format is turned into, and helpers the decoders share.

A `SpanRecord` holds what the step builders need and nothing else (no links, no dropped counts), with
ids normalised to lower-case hex, times as int nanoseconds and attributes as a plain dict of JSON
values. Wire formats differ; everything after this point does not.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from otel_replay.errors import TraceFormatError, preview
from otel_replay.hashing import MAX_DEPTH

# Span kind and status code numbers (trace.proto); enum names are accepted in JSON too.
SPAN_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2
STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}

_HEX = re.compile(r"[0-9a-fA-F]+")
_ZERO = re.compile(r"0+")


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_unix_nano: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class SpanRecord:
    """One span, decoded. ``order`` is its position in the input (the last tie-breaker)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: dict[str, Any]
    status_code: int = STATUS_UNSET
    status_message: str = ""
    events: list[SpanEvent] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    order: int = 0


def normalize_id(raw: object, n_bytes: int, field_name: str, integers: bool = False) -> str:
    """Return an id as lower-case hex ('' when unset), deciding hex vs base64 by length and alphabet.

    Every hex string is also valid base64, so trying base64 first would silently decode hex ids to the
    wrong length; instead: 2n hex digits → hex; base64 of exactly n bytes → base64; ``0x``-hex and UUIDs
    are accepted too. All-zero ids are invalid per the trace API and mean "unset". With ``integers``
    (span lists that write ids as JSON numbers) a non-negative integer of at most ``8 * n_bytes``
    bits is the id's value; a float never is (it has lost the id's low digits).
    """
    if raw is None or raw == "":
        return ""
    if integers and isinstance(raw, int) and not isinstance(raw, bool):
        return _integer_id(raw, n_bytes, field_name)
    if integers and isinstance(raw, float):
        raise TraceFormatError(
            f"{field_name} {raw!r} is a floating-point number: the id's exact value is lost"
        )
    if not isinstance(raw, str):
        expected = "a string or an integer" if integers else "a string"
        raise TraceFormatError(f"{field_name} must be {expected}, got {raw!r}")
    # Each spelling is tried whole: base64 may itself begin with "0x" (1 id in 2,000 or so).
    candidates = [raw]
    if raw.startswith(("0x", "0X")):
        candidates.append(raw[2:])
    if len(raw) == 36 and raw.count("-") == 4:
        candidates.append(raw.replace("-", ""))
    hexes = [c for c in candidates if len(c) == 2 * n_bytes and _HEX.fullmatch(c)]
    hex_id = hexes[0].lower() if hexes else _base64_id(raw, n_bytes, field_name)
    return "" if _ZERO.fullmatch(hex_id) else hex_id


def _integer_id(value: int, n_bytes: int, field_name: str) -> str:
    if not 0 <= value < 1 << (8 * n_bytes):
        raise TraceFormatError(
            f"{field_name} {preview(value)} does not fit in {8 * n_bytes} bits (an integer id is "
            f"0 to 2**{8 * n_bytes} - 1)"
        )
    return "" if value == 0 else format(value, f"0{2 * n_bytes}x")


def _base64_id(text: str, n_bytes: int, field_name: str) -> str:
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) != n_bytes:
        raise TraceFormatError(
            f"{field_name} {text!r} is neither {2 * n_bytes} hex digits nor base64 of "
            f"{n_bytes} bytes"
        )
    return decoded.hex()


def json_safe_float(value: float) -> float | str:
    """Non-finite doubles have no JSON form; keep them as the strings OTLP JSON uses for them."""
    if math.isfinite(value):
        return value
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def parse_json_text(text: str) -> Any:
    """Decode JSON carried inside a string attribute; ``None`` when it is not JSON.

    Strings that merely look like JSON are kept by the caller. Non-finite numbers cannot occur: the
    decoder rejects ``NaN``/``Infinity`` literals, so such text stays a string.
    """
    if not text or (text[0] not in '{["' and not (text[0].isdigit() or text[0] in "-tfn")):
        return _NOT_JSON
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _NOT_JSON
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        return _NOT_JSON  # kept as the text it is: nested beyond what can be stored and hashed
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return False


_NOT_JSON: Any = object()


def maybe_json(value: Any) -> Any:
    """A string holding JSON becomes the decoded value (twice, for double-encoded JSON); else as is."""
    for _ in range(2):
        if not isinstance(value, str):
            return value
        decoded = parse_json_text(value)
        if decoded is _NOT_JSON:
            return value
        value = decoded
    return value


def is_json_mime(mime: object) -> bool:
    return isinstance(mime, str) and "json" in mime.lower()


ProgressCallback = Callable[[int], None]
