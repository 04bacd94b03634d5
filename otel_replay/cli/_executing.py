"""Where ``attribute``'s work runs (``--executor``, ``--ray-address``, ``--workers``), opened for one
command and closed after it (a local Ray started for the run is stopped)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from otel_replay.executors import ExecutorKind, Processes, RayExecutor, Threads, executor


@dataclass(frozen=True, slots=True)
class Running:
    """The command line's choice of executor, and whether answered runs are done again."""

    kind: ExecutorKind = ExecutorKind.THREADS
    ray_address: str | None = None
    force: bool = False


@contextmanager
def executing(running: Running, workers: int) -> Iterator[Threads | Processes | RayExecutor]:
    opened = executor(running.kind, workers, running.ray_address)
    try:
        yield opened
    finally:
        opened.close()
