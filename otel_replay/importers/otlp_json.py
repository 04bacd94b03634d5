"""JSON trace files: one document (pretty or not), or JSON Lines as the Collector file exporter writes.

Each document (the whole file, or one line) is read by the row of `otel_replay.importers._documents`
that claims its shape: OTLP requests, and the span lists that are not OTLP (span dumps, flat span
lists, any-agent traces).

In JSON Lines a trace's spans are spread over many lines. Holding the whole file would make memory grow
with the file, so large files, and every gzip file (a small one may inflate to any size), are read
twice: a cheap scan finds the last line each trace id appears on, then the decoding pass hands each trace
to the assembler right after that line. Memory stays bounded by the traces open at any one time and by
``max_record_bytes`` (no line or document is held past it), not by the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from otel_replay.errors import TraceFormatError
from otel_replay.importers._buffer import TraceBuffer, UntracedId
from otel_replay.importers._documents import claiming_row, parse_document, reader_for
from otel_replay.importers._flat import log_record_key
from otel_replay.importers._lookalikes import concatenated_objects
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._source import (
    LongLine,
    bounded_lines,
    first_line,
    is_compressed,
    open_trace_file,
)
from otel_replay.importers._storable import valid_text
from otel_replay.model import Trajectory

#: Files larger than this (on disk) are scanned first so traces can be flushed early; gzip files
#: always are, whatever their size on disk.
TWO_PASS_THRESHOLD_BYTES = 32 * 1024 * 1024

_TRACE_ID = re.compile(rb'"trace_?[iI]d"\s*:\s*"([^"]*)"')


def read_otlp_json(
    path: str | Path, options: ReadOptions | None = None, only: str | None = None
) -> Iterator[Trajectory]:
    """Yield the trajectories of an OTLP JSON or OTLP JSON Lines file (gzip accepted), or of any
    JSON document format of `otel_replay.importers._documents`: only the one named ``only`` (one of
    its ``FORMAT_NAMES``) when given."""
    path = Path(path)
    options = options or ReadOptions()
    first = first_line(path, options.max_record_bytes)
    if isinstance(first, LongLine):
        # too long to hold, let alone parse: a one-line object is read as JSON Lines (the same for a
        # one-line document), so the line is refused, or skipped, and the lines after it still read
        lines = first.head.lstrip().startswith(b"{")
    else:
        lines = first.startswith(b"{") and first.endswith(b"}")
    if lines:
        yield from _read_lines(path, options, only)
    else:
        yield from _read_document(path, options, only)


def _metadata(path: Path, fmt: str) -> dict[str, Any]:
    return {"source": str(path), "format": fmt}


def _read_document(path: Path, options: ReadOptions, only: str | None) -> Iterator[Trajectory]:
    with open_trace_file(path) as (stream, raw):
        data = stream.read(options.max_record_bytes + 1)
        if options.progress:
            options.progress(raw.tell())
    if len(data) > options.max_record_bytes:
        raise options.too_large("a JSON document").located(path=path)
    python = False  # read by Python's decoder, which takes a lone surrogate as text
    try:
        document = parse_document(data, only)
    except orjson.JSONDecodeError as exc:
        try:
            objects = concatenated_objects(data.decode("utf-8", errors="replace"))
        except TraceFormatError as deep:
            raise deep.located(path=path) from None
        # objects back to back (a console exporter's output) are read when they are spans
        if not objects or (claiming_row(objects, only) is None and log_record_key(objects) is None):
            raise TraceFormatError(
                f"malformed JSON: {exc.msg}", path=path, line=exc.lineno
            ) from None
        document, python = objects, True
    except TraceFormatError as exc:
        raise exc.located(path=path) from None
    untraced = UntracedId(data)
    options.report.records += 1
    fmt, decode = reader_for(document, only)
    buffer = TraceBuffer(options, _metadata(path, fmt))

    def invalid(error: TraceFormatError) -> None:
        options.invalid(error.located(path=path))

    try:
        spans = decode(document, invalid)
        for span in valid_text(spans, invalid) if python else spans:
            buffer.add(span, untraced)
    except TraceFormatError as exc:
        raise exc.located(path=path) from None
    yield from buffer.drain()


def _one_object(line: bytes) -> Any:
    """The one JSON object of ``line`` by Python's decoder (NaN and Infinity accepted), or None."""
    objects = concatenated_objects(line.decode("utf-8", errors="replace"))
    return objects[0] if objects and len(objects) == 1 else None


def _last_lines(path: Path, limit: int) -> dict[bytes, int]:
    """Scan pass: the last line number on which each raw trace id string appears."""
    last: dict[bytes, int] = {}
    with open_trace_file(path) as (stream, _):
        for number, line in enumerate(bounded_lines(stream, limit), start=1):
            if isinstance(line, LongLine):
                continue  # the decoding pass refuses or skips it
            for raw_id in _TRACE_ID.findall(line):
                last[raw_id] = number
    return last


def _read_lines(path: Path, options: ReadOptions, only: str | None) -> Iterator[Trajectory]:
    limit = options.max_record_bytes
    two_pass = is_compressed(path) or path.stat().st_size > TWO_PASS_THRESHOLD_BYTES
    last_line = _last_lines(path, limit) if two_pass else {}
    metadata = _metadata(path, "otlp-jsonl")  # or the format of the first record's lines
    buffer = TraceBuffer(options, metadata)
    order = 0
    records_before = options.report.records
    first_number = 0  # the first line that is not blank
    unclaimed: TraceFormatError | None = None  # the first line's refusal, while it may be the file
    with open_trace_file(path) as (stream, raw):
        for number, line in enumerate(bounded_lines(stream, limit), start=1):
            if options.progress and number % 64 == 0:
                options.progress(raw.tell())
            if isinstance(line, LongLine):
                options.invalid(options.too_large("a JSON line").located(path=path, line=number))
                continue
            if not line.strip():
                continue
            first_number = first_number or number
            if unclaimed is not None:  # the file has a second record: the first is one line of it
                options.invalid(unclaimed.located(path=path, line=first_number))
                unclaimed = None
            python = False  # read by Python's decoder, which takes a lone surrogate as text
            try:
                document = parse_document(line, only)
            except TraceFormatError as exc:
                options.invalid(exc.located(path=path, line=number))
                continue
            except orjson.JSONDecodeError as exc:
                if not line.endswith(b"\n") and number == first_number:
                    # A file of one line is not being written: its line is the whole document, read
                    # as a pretty document is (Python's decoder, which accepts NaN), or refused.
                    try:
                        document = _one_object(line)
                    except TraceFormatError as error:
                        options.invalid(error.located(path=path, line=number))
                        continue
                    if document is None:
                        options.invalid(
                            TraceFormatError(f"malformed JSON: {exc.msg}", path=path, line=number)
                        )
                        continue
                    python = True
                elif not line.endswith(b"\n"):
                    # The Collector may still be writing: a cut-off last line is normal, not an error.
                    options.report.warnings.append(
                        f"{path}:{number}: incomplete last line ignored ({len(line)} bytes)"
                    )
                    continue
                else:
                    options.invalid(
                        TraceFormatError(f"malformed JSON: {exc.msg}", path=path, line=number)
                    )
                    continue
            fmt, decode = reader_for(document, only)
            if options.report.records == records_before:
                metadata["format"] = "otlp-jsonl" if fmt == "otlp-json" else fmt
            options.report.records += 1
            touched: set[str] = set()
            untraced = UntracedId(line)

            def invalid(error: TraceFormatError, line: int = number) -> None:
                options.invalid(error.located(path=path, line=line))

            try:
                decoded = decode(document, invalid)
                spans = list(valid_text(decoded, invalid) if python else decoded)
            except TraceFormatError as exc:
                if number == first_number and claiming_row(document, only) is None:
                    unclaimed = exc  # a line, or the whole file when no other record follows
                else:
                    options.invalid(exc.located(path=path, line=number))
                continue
            for k, span in enumerate(spans):
                span.order = order + k  # numbered across the file's lines
                key = buffer.add(span, untraced, line=number)
                if key is not None:
                    touched.add(key)
            order += len(spans)
            if two_pass:
                for key in sorted(touched):
                    if _last_seen(last_line, key, number) <= number:
                        yield buffer.pop(key)
        if options.progress:
            options.progress(raw.tell())
    if unclaimed is not None:  # a file of one document no reader claims: refused as a file
        options.invalid(unclaimed.located(path=path))
    yield from buffer.drain()


def _last_seen(last_line: dict[bytes, int], trajectory_id: str, number: int) -> int:
    """The last line of a trace, by any spelling of its id the scan saw (hex is case-insensitive)."""
    if trajectory_id.startswith("untraced-"):
        return number
    raw = trajectory_id.encode()
    found = max(last_line.get(raw, 0), last_line.get(raw.upper(), 0))
    # Spellings the scan cannot map back (base64, 0x, UUID) keep the trace until the end of the file.
    return found if found else 1 << 62
