"""Which reader handles a file: one table of formats, each answering "is this mine?" from the first
bytes. When none does, the error says what was tried."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path

import orjson

from otel_replay.errors import TraceFormatError
from otel_replay.importers._source import GZIP_MAGIC, first_line, read_head
from otel_replay.importers.otlp_proto import is_length_prefixed


class Format(str, Enum):
    """An input format; ``auto`` detects it from the file's first bytes."""

    AUTO = "auto"
    OTLP_JSON = "otlp-json"
    OTLP_PROTO = "otlp-proto"
    JSONL = "jsonl"


_OTLP_KEYS = frozenset({"resourceSpans", "resource_spans", "resourceLogs", "batches"})


def _is_native_jsonl(head: bytes, first_line: bytes) -> bool:
    """Decided by the first record's own top-level keys, never by what its values contain."""
    if b'"trajectory_id"' not in first_line:
        return False
    try:
        first = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(first, dict) and "trajectory_id" in first and not _OTLP_KEYS & set(first)


def _is_otlp_json(head: bytes, first_line: bytes) -> bool:
    return head.lstrip()[:1] in (b"{", b"[")


def _is_otlp_proto(head: bytes, first_line: bytes) -> bool:
    return head[:1] == b"\x0a"


_DETECTORS: tuple[tuple[Format, Callable[[bytes, bytes], bool]], ...] = (
    (Format.JSONL, _is_native_jsonl),
    (Format.OTLP_JSON, _is_otlp_json),
    (Format.OTLP_PROTO, _is_otlp_proto),
)


def detect(path: Path) -> Format:
    """The format of ``path`` (gzip is looked through)."""
    head = read_head(path)
    line = first_line(path) if head.lstrip()[:1] == b"{" else b""
    if not head.strip():
        raise TraceFormatError("empty file", path=path)
    with open(path, "rb") as raw:
        size = (1 << 62) if raw.read(2) == GZIP_MAGIC else path.stat().st_size
    if is_length_prefixed(head, size):
        return Format.OTLP_PROTO
    for fmt, matches in _DETECTORS:
        if matches(head, line):
            return fmt
    tried = ", ".join(fmt.value for fmt, _ in _DETECTORS)
    raise TraceFormatError(
        f"not a trace file (tried {tried}); it starts with {head[:16]!r}", path=path
    )
