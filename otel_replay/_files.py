"""Output files written so that no kill or full disk leaves one half-written: the one way every
command (and the pytest plugin's cassettes) writes a file."""

from __future__ import annotations

import os
import secrets
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO


@contextmanager
def output_file(path: Path) -> Iterator[IO[bytes]]:
    """A file to write the way no kill or full disk can leave it half-written: into a temporary
    file beside it, flushed to disk, then renamed over it (nothing is left if writing raises).
    It ends with the mode a plain ``open(path, "w")`` gives: a file that was there keeps its own,
    a new one ``0o666`` less the umask. ``-`` is standard output."""
    if str(path) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = _temporary_beside(path)
    try:
        with os.fdopen(handle, "wb") as out:
            with suppress(FileNotFoundError):
                if stat.S_ISREG((kept := path.stat()).st_mode):
                    os.chmod(temporary, stat.S_IMODE(kept.st_mode))
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _temporary_beside(path: Path) -> tuple[int, str]:
    """A new file beside ``path``, open for writing: its descriptor and name. Created with mode
    ``0o666`` for the kernel to take the umask off (``tempfile.mkstemp`` makes every file 0600,
    which the rename would give the output)."""
    while True:
        name = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name
        except FileExistsError:
            continue


def write_output(path: Path, data: bytes) -> None:
    """`output_file` for data in hand."""
    with output_file(path) as out:
        out.write(data)
