"""`executor`: the executor a command's ``--executor`` names."""

from __future__ import annotations

from otel_replay.errors import SettingError, setting
from otel_replay.executors._base import ExecutorKind
from otel_replay.executors._pool import Processes
from otel_replay.executors._ray import RayExecutor
from otel_replay.executors._threads import Threads


def executor(
    kind: ExecutorKind, workers: int, address: str | None = None
) -> Threads | Processes | RayExecutor:
    """The executor of ``kind`` with ``workers`` workers (``address``: Ray's)."""
    if kind is ExecutorKind.RAY:
        return RayExecutor(workers, address)
    if address is not None:
        raise SettingError(
            f"{setting('ray_address', address, quoted=True)} is for "
            f"{setting('executor', 'ray')}, not {kind.value}"
        )
    return Processes(workers) if kind is ExecutorKind.PROCESS else Threads(workers)
