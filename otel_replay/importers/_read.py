"""`read_path`: the reader for a file's format, chosen by name or by its first bytes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from otel_replay.importers._options import ReadOptions
from otel_replay.importers._sniff import Format, detect
from otel_replay.model import Trajectory

Reader = Callable[[Path, ReadOptions], Iterator[Trajectory]]


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
    options = options or ReadOptions()
    if fmt is Format.AUTO:
        fmt = detect(path, options.max_record_bytes)
    return _reader(fmt)(path, options)


def _reader(fmt: Format) -> Reader:
    """Each reader loads when a file of its format arrives (protobuf's runtime is not free)."""
    if fmt is Format.JSONL:
        from otel_replay.importers.jsonl import read_jsonl

        return read_jsonl
    if fmt in (Format.OTLP_PROTO, Format.OTLP_PROTO_STREAM):
        from otel_replay.importers.otlp_proto import read_otlp_proto

        return read_otlp_proto
    from otel_replay.importers._documents import FORMAT_NAMES
    from otel_replay.importers.otlp_json import read_otlp_json  # every JSON document format

    if fmt.value in FORMAT_NAMES:  # a document format given by name: only its row reads
        return partial(read_otlp_json, only=fmt.value)
    return read_otlp_json
