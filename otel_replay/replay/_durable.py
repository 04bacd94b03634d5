"""The durable ledger of `record` and `resume`: a run kept in the store as it is made."""

from __future__ import annotations

import dataclasses
import shlex
import threading

from otel_replay.errors import RecorderError, ReplayError, StoreError
from otel_replay.model import Trajectory
from otel_replay.store import Store


class DurableLedger:
    """A recording's run so far, kept in the store after each step (one transaction each), and
    replaced by the finished run at the end. Used in ``with``: a recording stopped by a mistake of
    the user's (an output that is not JSON, a missing resample function) takes its partial run
    away again, so the store is as it was; only a killed process leaves one, or a store that
    stops taking writes (a full disk, a file-size limit): its `StoreError` then says what is kept.
    A recording whose own bookkeeping failed (`RecorderError`) leaves its partial run marked so
    (``recorder_error`` in its metadata, no outcome): never an outcome of the agent's.

    Any thread may hand it the run so far (a framework's worker thread that ran a tool): it is
    the one writer of the recording, one write at a time, in the order the steps completed.

    ``keep`` is the ``ledger=`` of `record` and `resume`; ``finish`` stores what they returned::

        with DurableLedger(db) as ledger:
            recording = record(agent, ledger=ledger.keep)
            ledger.finish(recording.trajectory)
    """

    def __init__(self, db: Store) -> None:
        self.db = db
        self.partial: str | None = None
        self.kept_steps = 0  # how many steps the partial run kept has
        self.agent = ""  # its agent's spec, as `record` was given it
        self.last: Trajectory | None = None  # the partial run last kept
        self._lock = threading.Lock()

    def __enter__(self) -> DurableLedger:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, *rest: object
    ) -> None:
        if kind is None or self.partial is None or not issubclass(kind, ReplayError):
            return
        if issubclass(kind, StoreError):  # a store refusing writes would refuse this too
            return
        if issubclass(kind, RecorderError) and self.last is not None and exc is not None:
            marked = {**self.last.metadata, "recorder_error": str(exc)}
            with self.db.transaction():  # a run's metadata alone is no new content to `put`
                self.db.delete(self.partial)
                self.db.put(dataclasses.replace(self.last, metadata=marked))
            return
        self.db.delete(self.partial)

    def keep(self, run: Trajectory) -> None:
        """Store the run so far (it replaces the last one kept: the partial run's id is fixed).
        A store that refuses it keeps the last run kept, and the error says so."""
        with self._lock:
            try:
                self.db.put(run)
            except StoreError as exc:
                raise self._kept(exc) from None
            self.partial, self.kept_steps, self.last = run.id, len(run.steps), run
            self.agent = str(run.metadata.get("agent") or "")

    def _kept(self, exc: StoreError) -> StoreError:
        """``exc``, saying what of the run the store holds."""
        if self.partial is None or exc.refused is None:
            return exc  # nothing of the run stored yet: the store is as it was, as ``exc`` says
        steps = "its first step" if self.kept_steps == 1 else f"its first {self.kept_steps} steps"
        agent = f" --agent {shlex.quote(self.agent)}" if self.agent else ""
        return StoreError(
            f"{exc.refused}; the run so far ({steps}) is kept as run {self.partial}: "
            f"{exc.fix}, then `agent-replay resume {self.partial}{agent}` continues it",
            refused=exc.refused,
            fix=exc.fix,
        )

    def finish(self, run: Trajectory) -> None:
        """Store the finished run and, in the same transaction, remove the partial one."""
        try:
            with self.db.transaction():
                # the partial run goes first: one of the same id (a resumed run's) holds the same
                # steps, and `put` would leave its metadata (ended early, no answer) in place
                if self.partial is not None:
                    self.db.delete(self.partial)
                self.db.put(run)
        except StoreError as exc:
            raise self._kept(exc) from None
        self.partial = None
