"""Which reader handles a file: one table of formats, each answering "is this mine?" from the first
bytes. When none does, the error says what was tried."""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum
from pathlib import Path

import orjson

from otel_replay.errors import TraceFormatError
from otel_replay.importers._framing import is_length_prefixed
from otel_replay.importers._lookalikes import text_lookalike
from otel_replay.importers._options import DEFAULT_MAX_RECORD_BYTES
from otel_replay.importers._source import LongLine, first_line, is_compressed, read_head


class Format(str, Enum):
    """An input format; ``auto`` detects it from the file's first bytes."""

    AUTO = "auto"
    OTLP_JSON = "otlp-json"
    OTLP_PROTO = "otlp-proto"
    JSONL = "jsonl"
    # What `agent-replay list` shows of runs read from the forms each reader tells apart by itself:
    # accepted by name, so a format a user sees can be given back to --format.
    OTLP_JSONL = "otlp-jsonl"
    SPAN_DUMP = "span-dump"
    OTLP_PROTO_STREAM = "otlp-proto-stream"
    # the JSON documents `otel_replay.importers._documents` tells apart by their shape
    ANY_AGENT = "any-agent"
    FLAT_SPANS = "flat-spans"
    LANGFUSE = "langfuse"
    PHOENIX_OTLP = "phoenix-otlp"  # Arize Phoenix's OTLP-shaped span pages (import phoenix:// too)
    JAEGER = "jaeger"  # the Jaeger UI's download, its query API's answers (import jaeger:// too)
    ZIPKIN = "zipkin"  # Zipkin v2 span lists
    LANGSMITH = "langsmith"  # LangSmith run trees, run lists, batch ingest payloads, feedback
    DATADOG = "datadog"  # Datadog APM span lists and LLM Observability span events
    MLFLOW = "mlflow"  # MLflow traces (Trace.to_json()) and its REST API's traces


_OTLP_KEYS = frozenset({"resourceSpans", "resource_spans", "resourceLogs", "batches"})
_FIRST_KEY = re.compile(rb'\s*\{\s*"([^"\\]*)"\s*:')


def _is_native_jsonl(head: bytes, first_line: bytes) -> bool:
    """Decided by the first record's own top-level keys, never by what its values contain."""
    if b'"trajectory_id"' not in first_line:
        return False
    try:
        first = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return False
    return isinstance(first, dict) and "trajectory_id" in first and not _OTLP_KEYS & set(first)


#: Bytes JSON text never holds raw (inside strings they are escaped); protobuf is full of them.
_BINARY = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _is_otlp_json(head: bytes, first_line: bytes) -> bool:
    # A protobuf request opens with 0x0a (a newline) and its length, which may be "{" or "[":
    # its field tags (0x12, 0x1a, ...) soon show it is not text.
    return head.lstrip()[:1] in (b"{", b"[") and not _BINARY.search(head)


def _is_otlp_proto(head: bytes, first_line: bytes) -> bool:
    return head[:1] == b"\x0a"


_DETECTORS: tuple[tuple[Format, Callable[[bytes, bytes], bool]], ...] = (
    (Format.JSONL, _is_native_jsonl),
    (Format.OTLP_JSON, _is_otlp_json),
    (Format.OTLP_PROTO, _is_otlp_proto),
)


def detect(path: Path, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> Format:
    """The format of ``path`` (gzip is looked through); no line past ``max_record_bytes`` is held."""
    head = read_head(path)
    line = first_line(path, max_record_bytes) if head.lstrip()[:1] == b"{" else b""
    if not head.strip():
        raise TraceFormatError("empty file", path=path)
    size = (1 << 62) if is_compressed(path) else path.stat().st_size
    if is_length_prefixed(head, size):
        return Format.OTLP_PROTO
    if isinstance(line, LongLine):
        # a first record too long to hold, so never parsed: its first key tells whose it is
        first_key = _FIRST_KEY.match(line.head)
        native = first_key is not None and first_key[1] == b"trajectory_id"
        return Format.JSONL if native else Format.OTLP_JSON
    for fmt, matches in _DETECTORS:
        if matches(head, line):
            return fmt
    tried = ", ".join(fmt.value for fmt, _ in _DETECTORS)
    looks = text_lookalike(head)
    raise TraceFormatError(
        f"not a trace file (tried {tried}); it starts with {head[:16]!r}"
        + (f"; {looks}" if looks else ""),
        path=path,
    )
