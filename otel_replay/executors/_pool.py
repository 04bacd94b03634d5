"""`Processes`: a pool of worker processes forked from a warm server, kept for every map, each
exiting when the process that made the pool is gone."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otel_replay.executors._base import (
    PRELOAD,
    RETRIES,
    Done,
    ExecutorKind,
    Shipping,
    Work,
    WorkerDied,
    batches,
    prepared,
    warm,
)

if TYPE_CHECKING:  # the process pool loads when one is made (12 ms of every command's start)
    from concurrent.futures import Future, ProcessPoolExecutor


#: How long a starting pool process waits for the others before it takes work anyway.
START_WAIT_SECONDS = 30.0


_EVERYONE: Any = None  # in a pool process: the pool's barrier (`_start_together`)
#: How often a pool process looks whether the process that made the pool is still there.
PARENT_CHECK_SECONDS = 1.0


def _start_together(everyone: Any, parent: int, folder: str) -> None:
    """A pool process's initializer: warm, watch ``parent`` (and the fork server, this process's
    own parent), then wait for every other process of the pool to start. A pool starts a process
    for a task only while none is idle, so one that took work at once would leave the pool with
    fewer processes than asked; held here, every submit of the first round starts one (a process
    that never comes only delays the rest `START_WAIT_SECONDS`)."""
    global _EVERYONE
    _EVERYONE = everyone
    warm()
    watch = (parent, os.getppid(), folder)
    threading.Thread(target=_exit_with, args=watch, daemon=True, name="parent").start()
    _together()


def _together() -> None:
    from contextlib import suppress

    with suppress(threading.BrokenBarrierError):
        _EVERYONE.wait(START_WAIT_SECONDS)


def _exit_with(parent: int, server: int, folder: str) -> None:
    """End this process once the process that made the pool is gone (killed, say, so it never shut
    the pool down), removing the folder it shipped work in, which it had no chance to remove. A
    pool process is the fork server's child, so nothing else would end it, and it would wait on
    its queue, holding its memory, for ever. Two signs, looked at every `PARENT_CHECK_SECONDS`:
    this process's parent is no longer the fork server (which exits as soon as the process that
    started it is gone, and whose children the system then adopts), or ``parent`` is gone; a
    process id can be reused, a parent once lost cannot come back. Polling works on Linux and
    macOS alike and costs one system call a second."""
    while True:
        time.sleep(PARENT_CHECK_SECONDS)
        if os.getppid() != server or not _there(parent):
            shutil.rmtree(folder, ignore_errors=True)  # every worker tries: the first one wins
            os._exit(1)


def _there(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # there, under another user (a reused id): the fork server's end settles it
    return True


def _ready() -> int:
    """A pool's first task, one per process (each waits until every process holds one): the
    process's id, to count the workers."""
    _together()
    return os.getpid()


def _run_batch(key: str, path: str, batch: list[Any]) -> list[Any]:
    """A pool task: one batch, the work read from the file it was written to once, the first time
    this process meets it."""
    work, state = prepared(key, lambda: Path(path).read_bytes())
    return [work.run(state, item) for item in batch]


class Processes:
    """A pool of ``workers`` processes, started at once (before the work is known, so they start
    while the run is read) and kept for every map until `close`: forked from a server that has
    imported the package (``forkserver``: no lock or thread of this process is copied into them),
    a piece of work written once to a file each process reads the first time it meets it. A batch
    whose process died is run again in a new pool, up to `RETRIES` times."""

    kind = ExecutorKind.PROCESS
    on_this_machine = True

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._shipping = Shipping()
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._path = ""
        self._start()

    def _start(self) -> ProcessPoolExecutor:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(list(PRELOAD))
            everyone = context.Barrier(self.workers)
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=context,
                initializer=_start_together,
                initargs=(everyone, os.getpid(), self._open_folder()),
            )
            # one quick task per worker makes the pool start every process now, not one per batch
            self._ready = [self._pool.submit(_ready) for _ in range(self.workers)]
        return self._pool

    def _open_folder(self) -> str:
        """The folder work is shipped in (made with the pool: its processes remove it if this
        process dies without removing it itself)."""
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="agent-replay-work-")
        return self._folder.name

    def _ship(self, work: Work) -> tuple[str, str]:
        """``work``'s digest and the file holding it (written once per piece of work)."""
        if self._shipping.of(work):
            old, self._path = self._path, str(Path(self._open_folder()) / self._shipping.key)
            Path(self._path).write_bytes(self._shipping.data)
            if old and old != self._path:
                Path(old).unlink(missing_ok=True)  # a worker still running it has it prepared
        return self._shipping.key, self._path

    def map(
        self,
        work: Work,
        items: Sequence[Any],
        done: Done | None = None,
        batch_size: int | None = None,
    ) -> Iterator[Any]:
        """``work.run`` of each item, in order, in batches (of at most ``batch_size``)."""
        from concurrent.futures.process import BrokenProcessPool

        key, path = self._ship(work)
        pending = batches(items, self.workers, batch_size)
        results: list[list[Any] | None] = [None] * len(pending)
        tries = [0] * len(pending)
        position = 0  # results are handed out in order, as soon as they are there
        while position < len(pending):
            futures: dict[int, Future[list[Any]]] = {}
            try:
                pool = self._start()
                for i, batch in enumerate(pending):  # a pool broken while idle fails right here
                    if results[i] is None:
                        futures[i] = pool.submit(_run_batch, key, path, batch)
                for i in range(position, len(pending)):
                    if results[i] is None:
                        results[i] = futures[i].result()
                    position = i + 1
                    got = results[i]
                    assert got is not None
                    yield from got
                    if done is not None:
                        done(len(got))
                    results[i] = []  # handed out: keep no copy
            except BrokenProcessPool:
                self._stop()  # a worker died: its batch, and those unfinished, run again
                for i in range(position, len(pending)):
                    if results[i] is None:
                        tries[i] += 1
                        if tries[i] > RETRIES:
                            raise WorkerDied(
                                f"a worker process died {tries[i]} times running the same batch "
                                f"of {len(pending[i])} item(s); a resample function may be "
                                "crashing the process (out of memory, a native library)"
                            ) from None
                for i, future in futures.items():
                    finished = future.done() and not future.cancelled()
                    if results[i] is None and finished and future.exception() is None:
                        results[i] = future.result()  # finished before the pool broke: kept

    def worker_ids(self) -> set[int]:
        """The process ids the pool's workers reported when they started (waits for them)."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return {ready.result() for ready in self._ready}
        except BrokenProcessPool:
            return set()

    def _stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def close(self) -> None:
        self._stop()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
