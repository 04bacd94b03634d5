"""`RayExecutor`: actors on a Ray cluster, or on a local Ray started for the run. Ray is an
optional extra, imported here only when this executor is made."""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Iterator, Sequence
from typing import Any

from otel_replay._extras import install_command
from otel_replay.errors import ExecutorError, MissingExtraError, setting
from otel_replay.executors._base import (
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


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtraError(
            f"{setting('executor', 'ray')} needs Ray: {install_command('ray')}"
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
        self.pid = warm()

    def ready(self) -> int:
        return self.pid

    def run(self, key: str, shipped: list[Any], batch: list[Any]) -> list[Any]:
        # ``shipped`` holds the object's reference in a list, so Ray does not fetch it per call
        work, state = prepared(key, lambda: _ray().get(shipped[0]))
        return [work.run(state, item) for item in batch]


#: How many batches each Ray actor is given ahead, so it never waits for the next one.
IN_FLIGHT = 2


class RayExecutor:
    """Actors on Ray: ``address`` is a cluster's (``auto``, ``host:port``, ``ray://host:port``), or
    None to start a local Ray for the run (stopped by `close`). Actors are started at once
    (importing the package while the run is read) and kept until `close`: on a cluster one per
    CPU (up to ``workers``); on a local Ray one per core of this machine at most, each running ``workers`` ÷ cores
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
                raise ExecutorError(_unreachable(address, exc)) from None
        # a Ray started here for the run is this machine's; a cluster's workers may be anywhere
        self.on_this_machine = address is None and self._started_here
        threads = math.ceil(workers / processes)
        if not self.on_this_machine:
            cpus = int(ray.cluster_resources().get("CPU", workers))
            processes = max(1, min(workers, cpus))  # a shared cluster: no more than asked
            threads = 1
        self.workers = processes * threads
        actor = ray.remote(
            num_cpus=1, max_concurrency=threads, max_restarts=RETRIES, max_task_retries=RETRIES
        )(RayWorker)
        self._actors = [actor.remote() for _ in range(processes)]
        self._slots = self._actors * threads  # each slot runs one batch at a time
        self._shipping = Shipping()
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
        raise ExecutorError(_unreachable(address, exc)) from None


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
