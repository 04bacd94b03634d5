"""Opening trace files: transparent gzip, a clear error for zstd, byte progress for the progress bar,
and lines read with a bound, so no line, however long it inflates to, is ever held whole."""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, NamedTuple

from otel_replay.errors import TraceFormatError
from otel_replay.importers._options import DEFAULT_MAX_RECORD_BYTES

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: Decompressed bytes a gzip file is read by. Python 3.11's gzip reads 8 KiB at a time under
#: `readline`: 1 MiB lines of a file inflating to 200 MiB took 0.4-0.7 s that way and 0.27 s through
#: 128 KiB reads (2 cores, Python 3.11; Python 3.12 reads 128 KiB itself).
_GZIP_BUFFER_BYTES = 128 << 10
#: How much of a line past the limit is read at a time while stepping over it.
_CHUNK_BYTES = 1 << 20
#: How much of a line past the limit is kept, to tell what it is.
_HEAD_BYTES = 4096


@contextmanager
def open_trace_file(path: Path) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Yield ``(stream, raw)``: ``stream`` gives the decompressed bytes; ``raw.tell()`` is progress."""
    with open(path, "rb") as raw:
        head = raw.read(8)
        raw.seek(0)
        if head.startswith(ZSTD_MAGIC) or head[4:8] == ZSTD_MAGIC:
            raise TraceFormatError(
                "zstd-compressed Collector output is not supported; decompress it first "
                "(zstd -d FILE) and import the result",
                path=path,
            )
        if not head.startswith(GZIP_MAGIC):
            yield raw, raw
            return
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                yield io.BufferedReader(unzipped, _GZIP_BUFFER_BYTES), raw
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise TraceFormatError(
                f"gzip data is cut off or corrupt ({exc})", path=path, offset=raw.tell()
            ) from None


def is_compressed(path: Path) -> bool:
    """Whether ``path`` is gzip: its size on disk then says nothing about how much it holds."""
    with open(path, "rb") as raw:
        return raw.read(2) == GZIP_MAGIC


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` decompressed bytes of a file, for format sniffing."""
    with open_trace_file(path) as (stream, _):
        return stream.read(size)


class LongLine(NamedTuple):
    """A line longer than the record limit, never held whole: only its first bytes are kept."""

    head: bytes


def bounded_lines(stream: BinaryIO, limit: int) -> Iterator[bytes | LongLine]:
    """Each line of ``stream``, line ending kept, or a `LongLine` for one whose content (without its
    line ending) is longer than ``limit`` bytes. No more than ``limit + 1`` bytes of a line are ever
    read at once: when the consumer asks for the next line, the rest of a long one is read past in
    1 MiB chunks, none kept."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):  # limit+1 bytes ending in \n: it fits
            yield line
            continue
        yield LongLine(line[:_HEAD_BYTES])
        del line
        while chunk := stream.readline(_CHUNK_BYTES):
            if chunk.endswith(b"\n"):
                break


def first_line(path: Path, limit: int = DEFAULT_MAX_RECORD_BYTES) -> bytes | LongLine:
    """The first line that is not blank, stripped; a `LongLine` if it is longer than ``limit``."""
    with open_trace_file(path) as (stream, _):
        for line in bounded_lines(stream, limit):
            if isinstance(line, LongLine):
                return line
            if line.strip():
                return line.strip()
    return b""
