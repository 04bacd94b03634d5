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


def read_head(path: Path, size: int = 4096, line_limit: int = 64 << 20) -> tuple[bytes, bytes]:
    """The first ``size`` decompressed bytes of a file and its first line (up to ``line_limit``
    bytes), for format sniffing."""
    with open_trace_file(path) as (stream, _):
        head = stream.read(size)
        stream.seek(0)
        return head, stream.readline(line_limit)
