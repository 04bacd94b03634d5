"""Output files written so that no kill or full disk leaves one half-written: the one way every
command (and the pytest plugin's cassettes) writes a file.

What a path names decides how it is written:

* a regular file, or nothing yet: a temporary file beside it, flushed to disk, renamed over it,
  the folder flushed too; a file that was there keeps its mode and (where this process may give
  it) its owner and group, a new one gets ``0o666`` less the umask, as ``open(path, "w")`` does;
* a symbolic link: the file it finally names, written as above (a dangling link's target is
  made); the link stays a link;
* a device, a FIFO, or an open descriptor (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``):
  written in place, never created, truncated or replaced (a descriptor is appended to, as the
  command's own output would be);
* a folder or a socket: refused.

Every failure to write is an `~otel_replay.errors.OutputError`: ``cannot write FILE: REASON``.
"""

from __future__ import annotations

import errno
import io
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

from otel_replay.errors import OutputError

#: The folders whose entries are a process's open descriptors (``/dev/fd`` resolves to one).
_DESCRIPTORS = re.compile(r"/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/fd")
#: Links followed before a path is given up on (the kernel's own limit, ``ELOOP``).
_MOST_LINKS = 40


@contextmanager
def output_file(path: Path) -> Iterator[IO[bytes]]:
    """A binary handle writing ``path`` as the module docstring says: a regular file is whole or
    untouched (nothing is left if writing raises). ``-`` is standard output.

    Raises:
        OutputError: ``path`` is a folder or a socket, or writing, flushing or renaming failed
            (a full disk, a file-size limit): the message names the file and the reason.
    """
    if str(path) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = _final_target(path)
    kind = _kind(path if target is None else target, path)
    if target is None or kind in ("device", "fifo"):
        with _in_place(path, append=target is None) as out:
            yield out
        return
    with _replaced(target, path) as out:
        yield out


def write_output(path: Path, data: bytes) -> None:
    """`output_file` for data in hand."""
    with output_file(path) as out:
        out.write(data)


def _final_target(path: Path) -> Path | None:
    """The path ``path`` finally names, its symbolic links followed (a dangling link's target
    included: writing makes it); None when it names an open descriptor. Resolved by hand, not
    with `os.path.realpath`: a descriptor's link reads ``pipe:[…]`` or the name of the file it
    has open, and an output that is a descriptor must be written through it, not that name."""
    current = Path(os.getcwd(), path)  # not `abspath`: ``link/..`` is the kernel's to resolve
    for _ in range(_MOST_LINKS):
        folder = Path(os.path.realpath(current.parent))
        if _DESCRIPTORS.fullmatch(str(folder)):
            return None
        current = folder / current.name
        if not current.is_symlink():
            return current
        current = folder / os.readlink(current)  # relative to the link's folder, or absolute
    raise OutputError(path, os.strerror(errno.ELOOP), errno=errno.ELOOP)


def _kind(target: Path, path: Path) -> str | None:
    """``"file"``, ``"device"`` or ``"fifo"`` for what ``target`` is (None: nothing yet);
    a folder or a socket, and anything the kernel will not say, is an `OutputError`."""
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise OutputError.of(path, exc) from None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISFIFO(mode):
        return "fifo"
    what = "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "no file"
    raise OutputError(path, f"it is {what}; name a file to write")


class _Named(io.FileIO):
    """A file whose failed writes say which file (`OutputError`); a reader that left a pipe is
    `BrokenPipeError` still, which the commands treat as the end of output."""

    def __init__(self, descriptor: int, path: Path) -> None:
        super().__init__(descriptor, "wb")
        self.shown = path

    def write(self, data: object, /) -> int:
        try:
            return super().write(data)  # type: ignore[arg-type]
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError.of(self.shown, exc) from None


@contextmanager
def _failures_named(path: Path) -> Iterator[None]:
    """Any `OSError` inside said as an `OutputError` naming ``path``."""
    try:
        yield
    except OutputError:
        raise
    except OSError as exc:
        raise OutputError.of(path, exc) from None


@contextmanager
def _in_place(path: Path, *, append: bool) -> Iterator[IO[bytes]]:
    """``path`` opened as it is (no ``O_CREAT``, no ``O_TRUNC``, no rename): a device, a FIFO (this
    waits for its reader, as a shell's ``>`` does), or a descriptor, appended to."""
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    with _failures_named(path):
        out = io.BufferedWriter(_Named(os.open(path, flags), path))
    try:
        yield out  # an error of the caller's own passes as it is; writes through ``out`` are named
        with _failures_named(path):
            out.close()
    finally:
        _abandon(out)


@contextmanager
def _replaced(target: Path, path: Path) -> Iterator[IO[bytes]]:
    """``target`` (a regular file, or nothing yet) written into a temporary file beside it,
    flushed, given the old file's mode and owner, renamed over it, and the folder flushed so the
    rename outlives a power cut. ``path`` is the name the user gave, for messages."""
    with _failures_named(path):
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = _temporary_beside(target)
    out = io.BufferedWriter(raw := _Named(handle, path))
    try:
        with _failures_named(path):
            _keep_mode_and_owner(handle, target)
        yield out
        with _failures_named(path):
            out.flush()
            os.fsync(raw.fileno())
            out.close()
            os.replace(temporary, target)
    except BaseException:
        _abandon(out)
        Path(temporary).unlink(missing_ok=True)
        raise
    with _failures_named(path):
        _flush_folder(target.parent)


def _abandon(out: io.BufferedIOBase) -> None:
    """``out`` closed after a failure: what it still buffers may not be written (the disk that
    refused it refuses it again), and that second failure is not the one to report. (A buffered
    writer closes its file even when that last flush fails.)"""
    with suppress(OSError):
        out.close()


def _keep_mode_and_owner(handle: int, target: Path) -> None:
    """Give the new file ``target``'s owner, group and mode (in that order: a change of owner
    clears the set-id bits the mode then restores). Owner and group only where allowed: a user
    may not give a file away, and the file is written all the same."""
    try:
        kept = target.stat()
    except FileNotFoundError:
        return  # a new file: 0o666 less the umask, from `_temporary_beside`
    with suppress(PermissionError):
        os.fchown(handle, kept.st_uid, kept.st_gid)
    os.fchmod(handle, stat.S_IMODE(kept.st_mode))


def _flush_folder(folder: Path) -> None:
    """The folder's entries to disk (the rename); a filesystem that cannot flush a folder
    (``EINVAL``) keeps what it keeps."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(descriptor)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(descriptor)


def _temporary_beside(path: Path) -> tuple[int, str]:
    """A new file beside ``path``, open for writing: its descriptor and name. Created with mode
    ``0o666`` for the kernel to take the umask off (``tempfile.mkstemp`` makes every file 0600,
    which the rename would give the output)."""
    while True:
        name = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue
