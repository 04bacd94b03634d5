"""Where work runs: threads, a process pool or a Ray cluster, behind one interface.

A piece of `Work` is shipped to each worker once (`Work.prepare` builds what every item needs: the
user's code loaded, the trajectory read, the driver made) and then items are run there in batches,
``work.run(state, item)`` each, results coming back in item order whatever order they finish in. Work
that is a pure function of its item (a rollout is a function of its seed, plan and index) gives the
same results on any executor and any number of workers, and a batch run again after its worker died
gives the same results too, which is why retrying is safe:

* `Threads`: in this process, ``workers`` threads; the work is prepared once and shared.
* `Processes`: a pool of ``workers`` processes, started with the executor (so they start while the
  run is read) and kept for every map until it closes: forked from a server process that imported
  the package once (``forkserver``: no lock or thread of this process is copied into them); a
  piece of work is pickled once, written once to a file, read once per process; a batch whose
  process died is run again in a new pool, up to `RETRIES` times.
* `RayExecutor`: actors on a Ray cluster (``address``: ``auto``, ``host:port``,
  ``ray://host:port``; none: a local Ray started for the run), started with the executor and
  kept: one per CPU of a cluster, one per core of this machine for a local Ray (each running its
  share of ``workers`` on threads); a piece of work is put in Ray's object store once and fetched
  once per actor; Ray restarts an actor that died and retries its call (`RETRIES`). Ray is an
  optional extra (``pip install 'otel-replay[ray]'``), imported only here, only when chosen.

Batches are sized so that a worker gets about `BATCHES_PER_WORKER` of them: few enough that a task's
overhead (about half a millisecond on Ray, one pickle round trip on a process pool) is small beside
rollouts that wait on a model, many enough that an unlucky slow batch does not leave workers idle.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import pickle
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from otel_replay.errors import ReplayError, setting

if TYPE_CHECKING:  # the process pool loads when one is made (12 ms of every command's start)
    from concurrent.futures import Future, ProcessPoolExecutor

__all__ = [
    "BATCHES_PER_WORKER",
    "RETRIES",
    "ExecutorKind",
    "Processes",
    "RayExecutor",
    "Threads",
    "Work",
    "WorkerDied",
    "batches",
    "executor",
]

#: How many batches each worker is given, about (see the module's notes).
BATCHES_PER_WORKER = 4
#: How many times a batch whose worker died is run again before the run stops.
RETRIES = 3


class ExecutorKind(str, Enum):
    THREADS = "threads"
    PROCESS = "process"
    RAY = "ray"


class WorkerDied(ReplayError):
    """A batch's worker died every time it was run (`RETRIES` + 1 times)."""


class Work(Protocol):
    """What an executor runs: picklable, prepared once per worker, then run item by item."""

    def prepare(self) -> Any: ...

    def run(self, state: Any, item: Any) -> Any: ...


#: ``done(items)``: called as results come back (in item order), with how many came this time.
Done = Callable[[int], None]


def batches(items: Sequence[Any], workers: int, largest: int | None = None) -> list[list[Any]]:
    """``items`` in consecutive batches, about `BATCHES_PER_WORKER` per worker, their sizes
    differing by one at most (so no batch is left to run alone at the end), at most ``largest``
    items each."""
    if not items:
        return []
    count = min(len(items), workers * BATCHES_PER_WORKER)
    if largest is not None:
        count = max(count, math.ceil(len(items) / largest))
    size, extra = divmod(len(items), count)
    cut, start = [], 0
    for number in range(count):
        end = start + size + (number < extra)
        cut.append(list(items[start:end]))
        start = end
    return cut


class Threads:
    """``workers`` threads in this process (the work is prepared once and shared by them)."""

    kind = ExecutorKind.THREADS
    #: Whether every worker runs on this machine, so it can read the files this process reads.
    on_this_machine = True

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def map(
        self,
        work: Work,
        items: Sequence[Any],
        done: Done | None = None,
        batch_size: int | None = None,
    ) -> Iterator[Any]:
        """``work.run`` of each item, in order (``batch_size``: no batches on threads)."""
        state = work.prepare()
        if self.workers == 1:
            for item in items:
                yield work.run(state, item)
                if done is not None:
                    done(1)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.workers, thread_name_prefix="rollout") as pool:
            for result in pool.map(lambda item: work.run(state, item), items):
                yield result
                if done is not None:
                    done(1)

    def close(self) -> None:
        return None


# --- processes -----------------------------------------------------------------------------------

_PREPARED: dict[str, tuple[Work, Any]] = {}  # in a worker process or a Ray worker: work by digest
_PREPARING = threading.Lock()
#: How many pieces of work a worker keeps prepared: a fleet's or an attribution's one, and the one
#: before it (a worker that met a newer piece first still finds the older one's last batches).
_KEPT = 2
#: What a worker process imports before it is handed anything (in the fork server, once for all of
#: them): the modules every rollout and every run of a fleet needs.
PRELOAD = ("otel_replay.attribution._run", "otel_replay.fleet._batch")


def _prepared(key: str, load: Callable[[], bytes]) -> tuple[Work, Any]:
    """The work ``load`` gives, prepared once in this process (later batches find it here; a Ray
    actor's batches running at once on its threads wait for the first to prepare it)."""
    with _PREPARING:
        return _prepared_now(key, load)


def _prepared_now(key: str, load: Callable[[], bytes]) -> tuple[Work, Any]:
    found = _PREPARED.get(key)
    if found is None:
        work: Work = pickle.loads(load())
        found = (work, work.prepare())
        while len(_PREPARED) >= _KEPT:  # the oldest goes: its state is not needed again
            del _PREPARED[next(iter(_PREPARED))]
        _PREPARED[key] = found
    return found


#: How long a starting pool process waits for the others before it takes work anyway.
START_WAIT_SECONDS = 30.0


def _warm() -> int:
    """The package imported before any work comes (a no-op where the fork server imported it
    already); the process's id, to count workers."""
    for name in PRELOAD:
        importlib.import_module(name)
    return os.getpid()


_EVERYONE: Any = None  # in a pool process: the pool's barrier (`_start_together`)
#: How often a pool process looks whether the process that made the pool is still there.
PARENT_CHECK_SECONDS = 1.0


def _start_together(everyone: Any, parent: int) -> None:
    """A pool process's initializer: warm, watch ``parent``, then wait for every other process of
    the pool to start. A pool starts a process for a task only while none is idle, so one that
    took work at once would leave the pool with fewer processes than asked; held here, every
    submit of the first round starts one (a process that never comes only delays the rest
    `START_WAIT_SECONDS`)."""
    global _EVERYONE
    _EVERYONE = everyone
    _warm()
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="parent").start()
    _together()


def _together() -> None:
    from contextlib import suppress

    with suppress(threading.BrokenBarrierError):
        _EVERYONE.wait(START_WAIT_SECONDS)


def _exit_with(parent: int) -> None:
    """End this process once ``parent`` is gone (killed, say, so it never shut the pool down): a
    pool process is the fork server's child, so nothing else would end it, and it would wait on
    its queue, holding its memory, for ever."""
    while True:
        time.sleep(PARENT_CHECK_SECONDS)
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:
            continue  # there, under another user: not ours to judge


def _ready() -> int:
    """A pool's first task, one per process (each waits until every process holds one): the
    process's id, to count the workers."""
    _together()
    return os.getpid()


def _run_batch(key: str, path: str, batch: list[Any]) -> list[Any]:
    """A pool task: one batch, the work read from the file it was written to once, the first time
    this process meets it."""
    work, state = _prepared(key, lambda: Path(path).read_bytes())
    return [work.run(state, item) for item in batch]


class _Shipping:
    """The last piece of work shipped, pickled once however many maps run it (an attribution
    maps the same work once per plan): its digest and bytes."""

    def __init__(self) -> None:
        self.work: Work | None = None
        self.key = ""
        self.data = b""

    def of(self, work: Work) -> bool:
        """Make ``work`` the one shipped; whether it is new (pickled just now)."""
        if work is self.work:
            return False
        self.data = pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL)
        self.key = hashlib.sha256(self.data).hexdigest()
        self.work = work
        return True


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
        self._shipping = _Shipping()
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
                initargs=(everyone, os.getpid()),
            )
            # one quick task per worker makes the pool start every process now, not one per batch
            self._ready = [self._pool.submit(_ready) for _ in range(self.workers)]
        return self._pool

    def _ship(self, work: Work) -> tuple[str, str]:
        """``work``'s digest and the file holding it (written once per piece of work)."""
        if self._shipping.of(work):
            if self._folder is None:
                self._folder = tempfile.TemporaryDirectory(prefix="agent-replay-work-")
            old, self._path = self._path, str(Path(self._folder.name) / self._shipping.key)
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


# --- Ray -----------------------------------------------------------------------------------------


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ReplayError(
            f"{setting('executor', 'ray')} needs Ray: pip install 'otel-replay[ray]'"
        ) from None
    _messages_to_stderr()
    return ray


def _messages_to_stderr() -> None:
    """Ray prints its cluster's warnings (a raylet starting many workers, say) on standard output,
    from a thread of its own, at any moment; standard output is the command's (``--json`` prints
    one document there and nothing else), so they are sent to standard error. Ray offers no
    setting for this: its printing function is wrapped, and left alone if it is not found."""
    try:
        worker = importlib.import_module("ray._private.worker")
    except ImportError:
        return
    original = getattr(worker, "print_to_stdstream", None)
    if original is None or getattr(original, "to_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.to_stderr = True  # type: ignore[attr-defined]
    setattr(worker, "print_to_stdstream", to_stderr)  # noqa: B010 (a module, typed as such)


class RayWorker:
    """A Ray actor: one worker process for the executor's life, the package imported when it
    starts, each piece of work fetched from the object store and prepared the first time a batch
    of it comes (a restarted actor, after its process died, fetches it again)."""

    def __init__(self) -> None:
        self.pid = _warm()

    def ready(self) -> int:
        return self.pid

    def run(self, key: str, shipped: list[Any], batch: list[Any]) -> list[Any]:
        # ``shipped`` holds the object's reference in a list, so Ray does not fetch it per call
        work, state = _prepared(key, lambda: _ray().get(shipped[0]))
        return [work.run(state, item) for item in batch]


#: How many batches each Ray actor is given ahead, so it never waits for the next one.
IN_FLIGHT = 2


class RayExecutor:
    """Actors on Ray: ``address`` is a cluster's (``auto``, ``host:port``, ``ray://host:port``), or
    None to start a local Ray for the run (stopped by `close`). Actors are started at once
    (importing the package while the run is read) and kept until `close`: on a cluster one per
    CPU; on a local Ray one per core of this machine at most, each running ``workers`` ÷ cores
    batches at once on its threads (more processes than cores would only start slower: each is a
    Python importing Ray). Each piece of work is put in the object store once and fetched once per
    actor; batches go to whichever actor's slot is free, `IN_FLIGHT` ahead."""

    kind = ExecutorKind.RAY

    def __init__(self, workers: int = 2, address: str | None = None) -> None:
        ray = self._ray = _ray()
        self.workers = workers
        self._started_here = not ray.is_initialized()
        processes = max(1, min(workers, os.cpu_count() or 1))
        if self._started_here:
            if address is not None:
                _answering(address)
            try:
                if address is None:
                    ray.init(num_cpus=processes, include_dashboard=False, log_to_driver=False)
                else:
                    ray.init(address=address, log_to_driver=False)
            except Exception as exc:  # Ray raises what its layers meet: a refused socket, a timeout
                raise ReplayError(_unreachable(address, exc)) from None
        # a Ray started here for the run is this machine's; a cluster's workers may be anywhere
        self.on_this_machine = address is None and self._started_here
        threads = math.ceil(workers / processes)
        if not self.on_this_machine:
            processes = max(1, int(ray.cluster_resources().get("CPU", workers)))
            threads = 1
        self.workers = processes * threads
        actor = ray.remote(
            num_cpus=1, max_concurrency=threads, max_restarts=RETRIES, max_task_retries=RETRIES
        )(RayWorker)
        self._actors = [actor.remote() for _ in range(processes)]
        self._slots = self._actors * threads  # each slot runs one batch at a time
        self._shipping = _Shipping()
        self._shipped: list[Any] = []

    def worker_ids(self) -> set[int]:
        """The process ids of the actors (waits for them to start)."""
        return set(self._ray.get([a.ready.remote() for a in self._actors]))

    def map(
        self,
        work: Work,
        items: Sequence[Any],
        done: Done | None = None,
        batch_size: int | None = None,
    ) -> Iterator[Any]:
        """``work.run`` of each item, in order, a call per batch (of at most ``batch_size``) to
        whichever actor is free."""
        ray = self._ray
        if self._shipping.of(work):
            self._shipped = [ray.put(self._shipping.data)]  # once: every actor reads this object
        key = self._shipping.key
        pending = batches(items, len(self._slots), batch_size)
        results: list[list[Any] | None] = [None] * len(pending)
        running: dict[Any, tuple[int, Any]] = {}  # a call's reference: its batch, its actor
        given = position = 0

        def give(actor: Any) -> None:
            nonlocal given
            ref = actor.run.remote(key, self._shipped, pending[given])
            running[ref] = (given, actor)
            given += 1

        for actor in self._slots * IN_FLIGHT:
            if given < len(pending):
                give(actor)
        while position < len(pending):
            ready, _ = ray.wait(list(running), num_returns=1)
            number, actor = running.pop(ready[0])
            results[number] = self._got(ready[0])
            if given < len(pending):
                give(actor)
            while position < len(pending) and results[position] is not None:
                got = results[position]
                assert got is not None
                results[position] = []  # handed out: keep no copy
                position += 1
                yield from got
                if done is not None:
                    done(len(got))

    def _got(self, ref: Any) -> list[Any]:
        ray = self._ray
        try:
            got: list[Any] = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:
            raise exc.as_instanceof_cause() from None
        except (ray.exceptions.RayActorError, ray.exceptions.NodeDiedError) as exc:
            raise WorkerDied(
                f"a Ray worker died {RETRIES + 1} times running a batch: {exc}"
            ) from None
        return got

    def close(self) -> None:
        for actor in self._actors:  # a cluster's CPUs go back to it
            self._ray.kill(actor)
        self._actors = self._slots = []
        if self._started_here:
            self._ray.shutdown()
            self._started_here = False


#: How long a cluster's address is given to answer before the run stops (Ray itself would keep
#: trying for minutes).
REACH_SECONDS = 5.0


def _answering(address: str) -> None:
    """Stop at once, with the address, when nothing answers there (``auto`` is Ray's to find)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto" or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), REACH_SECONDS).close()
    except OSError as exc:
        raise ReplayError(_unreachable(address, exc)) from None


def _unreachable(address: str | None, exc: Exception) -> str:
    """Why Ray could not be started or reached, in one line, with what to do."""
    text = str(exc).strip()
    reason = text.splitlines()[0] if text else type(exc).__name__
    if address is None:
        return f"cannot start a local Ray: {reason}"
    return (
        f"cannot reach a Ray cluster at {setting('ray_address', address, quoted=True)}: {reason} "
        "(start one with `ray start --head` and give the address it prints; a cluster with "
        "token authentication also needs RAY_AUTH_MODE=token here)"
    )


def executor(
    kind: ExecutorKind, workers: int, address: str | None = None
) -> Threads | Processes | RayExecutor:
    """The executor of ``kind`` with ``workers`` workers (``address``: Ray's)."""
    if kind is ExecutorKind.RAY:
        return RayExecutor(workers, address)
    if address is not None:
        raise ReplayError(
            f"{setting('ray_address', address, quoted=True)} is for "
            f"{setting('executor', 'ray')}, not {kind.value}"
        )
    return Processes(workers) if kind is ExecutorKind.PROCESS else Threads(workers)
