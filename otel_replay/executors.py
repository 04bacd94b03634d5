"""Where work runs: threads, a process pool or a Ray cluster, behind one interface.

A piece of `Work` is shipped to each worker once (`Work.prepare` builds what every item needs: the
user's code loaded, the trajectory read, the driver made) and then items are run there in batches,
``work.run(state, item)`` each, results coming back in item order whatever order they finish in. Work
that is a pure function of its item (a rollout is a function of its seed, plan and index) gives the
same results on any executor and any number of workers, and a batch run again after its worker died
gives the same results too, which is why retrying is safe:

* `Threads`: in this process, ``workers`` threads; the work is prepared once and shared.
* `Processes`: a pool of ``workers`` processes started fresh (``spawn``: no lock or thread of this
  process is copied into them); the work is pickled once and prepared once per process; a batch
  whose process died is run again in a new pool, up to `RETRIES` times.
* `RayExecutor`: tasks on a Ray cluster (``address``: ``auto``, ``ray://host:port``; none: a local
  Ray started for the run), each task a batch; the work is put in Ray's object store once and
  prepared once per worker process; Ray retries the task of a worker that died (`RETRIES`). Ray is
  an optional extra (``pip install 'otel-replay[ray]'``), imported only here, only when chosen.

Batches are sized so that a worker gets about `BATCHES_PER_WORKER` of them: few enough that a task's
overhead (about half a millisecond on Ray, one pickle round trip on a process pool) is small beside
rollouts that wait on a model, many enough that an unlucky slow batch does not leave workers idle.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import pickle
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
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


def _prepared(key: str, shipped: bytes) -> tuple[Work, Any]:
    """The work ``shipped`` is, prepared once in this process (later batches find it here)."""
    found = _PREPARED.get(key)
    if found is None:
        work: Work = pickle.loads(shipped)
        found = (work, work.prepare())
        _PREPARED.clear()  # one piece of work at a time per worker: the last one's state goes
        _PREPARED[key] = found
    return found


def _install(key: str, shipped: bytes) -> None:
    """A pool process's initializer: the work arrives once, with the process."""
    _prepared(key, shipped)


def _run_batch(key: str, batch: list[Any]) -> list[Any]:
    work, state = _PREPARED[key]
    return [work.run(state, item) for item in batch]


def _shipped(work: Work) -> tuple[str, bytes]:
    data = pickle.dumps(work, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.sha256(data).hexdigest(), data


class Processes:
    """A pool of ``workers`` fresh processes; a batch whose process died runs again."""

    kind = ExecutorKind.PROCESS
    on_this_machine = True

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._key: str | None = None

    def _start(self, key: str, data: bytes) -> ProcessPoolExecutor:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None or self._key != key:
            self.close()
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_install,
                initargs=(key, data),
            )
            self._key = key
        return self._pool

    def map(
        self,
        work: Work,
        items: Sequence[Any],
        done: Done | None = None,
        batch_size: int | None = None,
    ) -> Iterator[Any]:
        """``work.run`` of each item, in order, in batches (of at most ``batch_size``)."""
        from concurrent.futures.process import BrokenProcessPool

        key, data = _shipped(work)
        pending = batches(items, self.workers, batch_size)
        results: list[list[Any] | None] = [None] * len(pending)
        tries = [0] * len(pending)
        position = 0  # results are handed out in order, as soon as they are there
        while position < len(pending):
            futures: dict[int, Future[list[Any]]] = {}
            try:
                pool = self._start(key, data)
                for i, batch in enumerate(pending):  # a pool broken while idle fails right here
                    if results[i] is None:
                        futures[i] = pool.submit(_run_batch, key, batch)
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
                self.close()  # a worker died: its batch, and those unfinished, run again
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

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._key = None


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


def _ray_batch(key: str, shipped: bytes, batch: list[Any]) -> list[Any]:
    """A Ray task: one batch, the work prepared once per worker process."""
    work, state = _prepared(key, shipped)
    return [work.run(state, item) for item in batch]


class RayExecutor:
    """Tasks on Ray: ``address`` is a cluster's (``auto``, ``ray://host:port``), or None to start a
    local Ray for the run with ``workers`` CPUs (stopped by `close`)."""

    kind = ExecutorKind.RAY

    def __init__(self, workers: int = 2, address: str | None = None) -> None:
        ray = _ray()
        self.workers = workers
        self._started_here = not ray.is_initialized()
        if self._started_here:
            try:
                if address is None:
                    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
                else:
                    ray.init(address=address, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ReplayError(
                    f"cannot start or reach Ray at {address or 'local'}: {exc}"
                ) from None
        if address is not None or not self._started_here:
            self.workers = max(workers, int(ray.cluster_resources().get("CPU", workers)))
        # a Ray started here for the run is this machine's; a cluster's workers may be anywhere
        self.on_this_machine = address is None and self._started_here
        self._task = ray.remote(max_retries=RETRIES, retry_exceptions=False)(_ray_batch)

    def map(
        self,
        work: Work,
        items: Sequence[Any],
        done: Done | None = None,
        batch_size: int | None = None,
    ) -> Iterator[Any]:
        """``work.run`` of each item, in order, a task per batch (of at most ``batch_size``)."""
        ray = _ray()
        key, data = _shipped(work)
        shipped = ray.put(data)  # once: every task reads the same object
        refs = [
            self._task.remote(key, shipped, batch)
            for batch in batches(items, self.workers, batch_size)
        ]
        for ref in refs:
            try:
                got = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                raise exc.as_instanceof_cause() from None
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
                raise WorkerDied(
                    f"a Ray worker died {RETRIES + 1} times running a batch: {exc}"
                ) from None
            yield from got
            if done is not None:
                done(len(got))

    def close(self) -> None:
        if self._started_here:
            _ray().shutdown()
            self._started_here = False


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
