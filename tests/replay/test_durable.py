"""`DurableLedger`, the durable ledger of `record` and `resume`, used from Python: each step kept as
it completes, the partial run replaced by the finished one, and taken away again when a mistake of
the user's stops the recording."""

from __future__ import annotations

from pathlib import Path

import pytest

from otel_replay.errors import ReplayError
from otel_replay.replay import record
from otel_replay.replay._durable import DurableLedger
from otel_replay.replay._resume import ended_early
from otel_replay.store import Store
from tests.replay.resume_agents import counting


def _ids(db: Store) -> list[str]:
    return [summary.id for summary in db.summaries()]


def test_the_finished_run_replaces_the_partial_one(store_path: Path) -> None:
    kept: list[list[str]] = []
    with Store.open(store_path) as db, DurableLedger(db) as ledger:

        def keep(run: object) -> None:
            ledger.keep(run)  # type: ignore[arg-type]
            kept.append(_ids(db))

        done = record(counting, ledger=keep)
        ledger.finish(done.trajectory)
        assert _ids(db) == [done.trajectory.id]
    assert len(kept) == 6 and all(ids == kept[0] for ids in kept)  # one partial run, kept anew
    assert kept[0][0].startswith("partial-") and kept[0][0] != done.trajectory.id


def test_a_mistake_of_the_users_takes_the_partial_run_away(store_path: Path) -> None:
    with Store.open(store_path) as db:
        with pytest.raises(ReplayError, match="not JSON"), DurableLedger(db) as ledger:
            record(counting, ledger=ledger.keep)  # its steps kept as they came
            assert ledger.partial is not None and _ids(db) == [ledger.partial]
            raise ReplayError("step 6's output is not JSON")
        assert _ids(db) == []


def test_anything_else_leaves_the_partial_run_to_resume(store_path: Path) -> None:
    with Store.open(store_path) as db:
        with pytest.raises(KeyboardInterrupt), DurableLedger(db) as ledger:
            record(counting, ledger=ledger.keep)
            raise KeyboardInterrupt
        (left,) = _ids(db)
        assert ended_early(db.get(left)) == "the recording stopped before the agent returned"
