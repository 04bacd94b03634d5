"""Trace files → `Trajectory` objects.

`read_path` picks the reader (``format="auto"`` sniffs the first bytes); each reader module exposes one
public function: `read_otlp_json`, `read_otlp_proto`, `read_jsonl`. Exports load on first use
(`otel_replay._lazy`): reading a JSON file never loads protobuf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.importers._merge import built_from_spans, merge_partial
    from otel_replay.importers._options import (
        DEFAULT_MAX_RECORD_BYTES,
        DEFAULT_OUTCOME_ATTRIBUTES,
        ReadOptions,
        ReadReport,
    )
    from otel_replay.importers._read import read_path
    from otel_replay.importers._request import (
        assemble_trace,
        span_bytes,
        span_from_bytes,
        spans_of_request,
    )
    from otel_replay.importers._sniff import Format, detect
    from otel_replay.importers._spans import SpanRecord
    from otel_replay.importers.jsonl import read_jsonl
    from otel_replay.importers.otlp_json import read_otlp_json
    from otel_replay.importers.otlp_proto import read_otlp_proto

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "DEFAULT_OUTCOME_ATTRIBUTES",
    "Format",
    "ReadOptions",
    "ReadReport",
    "SpanRecord",
    "assemble_trace",
    "built_from_spans",
    "detect",
    "merge_partial",
    "read_jsonl",
    "read_otlp_json",
    "read_otlp_proto",
    "read_path",
    "span_bytes",
    "span_from_bytes",
    "spans_of_request",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
