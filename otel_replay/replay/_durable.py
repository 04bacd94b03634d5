"""The durable ledger of `record` and `resume`: a run kept in the store as it is made."""

from __future__ import annotations

from otel_replay.errors import ReplayError
from otel_replay.model import Trajectory
from otel_replay.store import Store


class DurableLedger:
    """A recording's run so far, kept in the store after each step (one transaction each), and
    replaced by the finished run at the end. Used in ``with``: a recording stopped by a mistake of
    the user's (an output that is not JSON, a missing resample function) takes its partial run
    away again, so the store is as it was; only a killed process leaves one.

    ``keep`` is the ``ledger=`` of `record` and `resume`; ``finish`` stores what they returned::

        with DurableLedger(db) as ledger:
            recording = record(agent, ledger=ledger.keep)
            ledger.finish(recording.trajectory)
    """

    def __init__(self, db: Store) -> None:
        self.db = db
        self.partial: str | None = None

    def __enter__(self) -> DurableLedger:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is not None and issubclass(kind, ReplayError) and self.partial is not None:
            self.db.delete(self.partial)

    def keep(self, run: Trajectory) -> None:
        """Store the run so far (it replaces the last one kept: the partial run's id is fixed)."""
        self.db.put(run)
        self.partial = run.id

    def finish(self, run: Trajectory) -> None:
        """Store the finished run and, in the same transaction, remove the partial one."""
        with self.db.transaction():
            self.db.put(run)
            if self.partial is not None and self.partial != run.id:
                self.db.delete(self.partial)
        self.partial = None
