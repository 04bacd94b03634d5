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

__all__ = [
    "Format",
    "ReadOptions",
    "read_jsonl",
    "read_path",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
