"""`Threads`: workers in this process, sharing the work prepared once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from otel_replay.executors._base import Done, ExecutorKind, Work


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
