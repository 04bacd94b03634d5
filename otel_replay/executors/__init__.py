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
  kept: one per CPU of a cluster (up to ``workers``), one per core of this machine for a local
  Ray (each running its share of ``workers`` on threads); a piece of work is put in Ray's object store once and fetched
  once per actor; Ray restarts an actor that died and retries its call (`RETRIES`). Ray is an
  optional extra (``pip install 'otel-replay[ray]'``), imported only here, only when chosen.

Batches are sized so that a worker gets about `BATCHES_PER_WORKER` of them: few enough that a task's
overhead (about half a millisecond on Ray, one pickle round trip on a process pool) is small beside
rollouts that wait on a model, many enough that an unlucky slow batch does not leave workers idle.

Rooms: `_base` (the kinds, `Work`, batches, a worker's cache of prepared work), `_threads`, `_pool`
and `_ray` (an executor each), `_choose` (the one ``--executor`` names).
"""

from __future__ import annotations

from otel_replay.executors._base import ExecutorKind as ExecutorKind
from otel_replay.executors._choose import executor as executor
from otel_replay.executors._pool import Processes
from otel_replay.executors._ray import RayExecutor
from otel_replay.executors._threads import Threads

__all__ = [
    "Processes",
    "RayExecutor",
    "Threads",
]

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "ExecutorKind",
    "executor",
]
