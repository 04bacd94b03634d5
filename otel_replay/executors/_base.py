"""What every executor shares: the kinds, the `Work` protocol, how items are cut into batches, and
a worker's cache of the work it has prepared (a pool process's and a Ray actor's alike)."""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, Protocol

from otel_replay.errors import ReplayError

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


_PREPARED: dict[str, tuple[Work, Any]] = {}  # in a worker process or a Ray worker: work by digest
_PREPARING = threading.Lock()
#: How many pieces of work a worker keeps prepared: a fleet's or an attribution's one, and the one
#: before it (a worker that met a newer piece first still finds the older one's last batches).
_KEPT = 2
#: What a worker process imports before it is handed anything (in the fork server, once for all of
#: them): the modules every rollout and every run of a fleet needs.
PRELOAD = ("otel_replay.attribution._run", "otel_replay.fleet._batch")


def prepared(key: str, load: Callable[[], bytes]) -> tuple[Work, Any]:
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


def warm() -> int:
    """The package imported before any work comes (a no-op where the fork server imported it
    already); the process's id, to count workers."""
    for name in PRELOAD:
        importlib.import_module(name)
    return os.getpid()


class Shipping:
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
