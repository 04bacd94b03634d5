"""Opening trace files: transparent gzip, a clear error for zstd, byte progress for the progress bar."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from otel_replay.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


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
                yield unzipped, raw  # type: ignore[misc]
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise TraceFormatError(
                f"gzip data is cut off or corrupt ({exc})", path=path, offset=raw.tell()
            ) from None


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` decompressed bytes of a file, for format sniffing."""
    with open_trace_file(path) as (stream, _):
        return stream.read(size)


def first_line(path: Path, limit: int = 64 << 20) -> bytes:
    """The first line that is not blank (stripped), up to ``limit`` bytes read."""
    read = 0
    with open_trace_file(path) as (stream, _):
        while read < limit:
            line = stream.readline(limit - read)
            if not line:
                return b""
            read += len(line)
            if line.strip():
                return line.strip()
    return b""
