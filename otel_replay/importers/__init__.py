"""Trace files → `Trajectory` objects.

`read_path` picks the reader (``format="auto"`` sniffs the first bytes); each reader module exposes one
public function: `read_otlp_json`, `read_otlp_proto`, `read_jsonl`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from otel_replay.importers._merge import built_from_spans, merge_partial
from otel_replay.importers._options import DEFAULT_OUTCOME_ATTRIBUTES, ReadOptions, ReadReport
from otel_replay.importers._sniff import Format, detect
from otel_replay.importers.jsonl import read_jsonl
from otel_replay.importers.otlp_json import read_otlp_json
from otel_replay.importers.otlp_proto import read_otlp_proto
from otel_replay.model import Trajectory

__all__ = [
    "DEFAULT_OUTCOME_ATTRIBUTES",
    "Format",
    "ReadOptions",
    "ReadReport",
    "built_from_spans",
    "detect",
    "merge_partial",
    "read_jsonl",
    "read_otlp_json",
    "read_otlp_proto",
    "read_path",
]

_READERS = {
    Format.OTLP_JSON: read_otlp_json,
    Format.OTLP_PROTO: read_otlp_proto,
    Format.JSONL: read_jsonl,
}


def read_path(
    path: str | Path,
    format: Format | str = Format.AUTO,
    options: ReadOptions | None = None,
) -> Iterator[Trajectory]:
    """Yield the trajectories in one trace file.

    Raises:
        TraceFormatError: the file (or, without ``options.skip_invalid``, one record in it) cannot be
            read; the error names the file, the line or byte offset, and what was wrong.
    """
    path = Path(path)
    fmt = Format(format)
    if fmt is Format.AUTO:
        fmt = detect(path)
    return _READERS[fmt](path, options or ReadOptions())
