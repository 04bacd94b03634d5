"""Trace files → `Trajectory` objects.

`read_path` picks the reader (``format="auto"`` sniffs the first bytes); each reader module exposes one
public function: `read_otlp_json`, `read_otlp_proto`, `read_jsonl`. Exports load on first use
(`otel_replay._lazy`): reading a JSON file never loads protobuf.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.importers._options import ReadOptions
    from otel_replay.importers._read import read_path
    from otel_replay.importers._sniff import Format
    from otel_replay.importers.jsonl import read_jsonl

if TYPE_CHECKING:  # lent to the other floors: __inside__
    from otel_replay.importers._buffer import TraceBuffer as TraceBuffer
    from otel_replay.importers._exported import REBUILT_ATTRIBUTE as REBUILT_ATTRIBUTE
    from otel_replay.importers._exported import RECORD_ATTRIBUTE as RECORD_ATTRIBUTE
    from otel_replay.importers._jaeger import JAEGER_FORMAT as JAEGER_FORMAT
    from otel_replay.importers._jaeger import decode_jaeger as decode_jaeger
    from otel_replay.importers._lint import LintedRun as LintedRun
    from otel_replay.importers._lint import lint_file as lint_file
    from otel_replay.importers._lint import lint_stored as lint_stored
    from otel_replay.importers._merge import built_from_spans as built_from_spans
    from otel_replay.importers._merge import merge_partial as merge_partial
    from otel_replay.importers._mlflow import MLFLOW_FORMAT as MLFLOW_FORMAT
    from otel_replay.importers._mlflow import decode_mlflow_trace as decode_mlflow_trace
    from otel_replay.importers._options import DEFAULT_MAX_RECORD_BYTES as DEFAULT_MAX_RECORD_BYTES
    from otel_replay.importers._phoenix import PHOENIX_FORMAT as PHOENIX_FORMAT
    from otel_replay.importers._phoenix import decode_phoenix_page as decode_phoenix_page
    from otel_replay.importers._request import assemble_trace as assemble_trace
    from otel_replay.importers._request import span_bytes as span_bytes
    from otel_replay.importers._request import span_from_bytes as span_from_bytes
    from otel_replay.importers._request import spans_of_request as spans_of_request
    from otel_replay.importers._spans import SpanEvent as SpanEvent
    from otel_replay.importers._spans import SpanRecord as SpanRecord

__all__ = [
    "Format",
    "ReadOptions",
    "read_jsonl",
    "read_path",
]

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "JAEGER_FORMAT",
    "MLFLOW_FORMAT",
    "PHOENIX_FORMAT",
    "REBUILT_ATTRIBUTE",
    "RECORD_ATTRIBUTE",
    "LintedRun",
    "SpanEvent",
    "SpanRecord",
    "TraceBuffer",
    "assemble_trace",
    "built_from_spans",
    "decode_jaeger",
    "decode_mlflow_trace",
    "decode_phoenix_page",
    "lint_file",
    "lint_stored",
    "merge_partial",
    "span_bytes",
    "span_from_bytes",
    "spans_of_request",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
