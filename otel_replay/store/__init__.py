"""The local store: SQLite with WAL, one schema under ``PRAGMA user_version``, content-addressed
deduplicated blobs.

`Store` is one handle on one store file, made of a room per client, each a module of its own:
`_trajectories` (the runs: put, get, summaries, steps, recorded results), `_pending` (the spans the
receiver holds for traces whose root has not come) and `_reports` (attribution reports kept for
their run, and the sums ``blame`` adds up). `_connection` opens connections (a reason beside every
PRAGMA), owns the schema and its numbered migrations, waits for another writer and commits or
rolls back (`Store.transaction`); rows are read by column name.

The store holds no policy: `Store.put` writes what it is given (replacing a stored run of the same
id), and `content_digest` says what "the same content" means. Whether an arriving run is added,
unchanged, merged or replaced is decided one floor up, in `otel_replay.ingest`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports
from otel_replay.store._connection import connect
from otel_replay.store._connection import default_store_path as default_store_path
from otel_replay.store._pending import PendingSpans
from otel_replay.store._query import QueryTimeout as QueryTimeout
from otel_replay.store._reports import Reports
from otel_replay.store._trajectories import Trajectories

if TYPE_CHECKING:  # lent to the other floors: __inside__
    from otel_replay.store._blobs import damaged as damaged
    from otel_replay.store._connection import outcome_source as outcome_source
    from otel_replay.store._query import MAX_ROWS as MAX_ROWS
    from otel_replay.store._query import SORTS as SORTS
    from otel_replay.store._query import QueryError as QueryError
    from otel_replay.store._query import check_page as check_page
    from otel_replay.store._query import parse_filter as parse_filter
    from otel_replay.store._query import parse_sort as parse_sort
    from otel_replay.store._trajectories import RecordedResult as RecordedResult
    from otel_replay.store._trajectories import TrajectorySummary as TrajectorySummary
    from otel_replay.store._trajectories import summarize as summarize

__all__ = [
    "Store",
]

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "MAX_ROWS",
    "SORTS",
    "QueryError",
    "QueryTimeout",
    "RecordedResult",
    "TrajectorySummary",
    "check_page",
    "damaged",
    "default_store_path",
    "outcome_source",
    "parse_filter",
    "parse_sort",
    "summarize",
]

# what is lent and not imported above loads on first use, as a lazy package's exports do
__getattr__, __dir__ = lazy_exports(__name__, [n for n in __inside__ if n not in globals()])


class Store(Trajectories, PendingSpans, Reports):
    """A handle on one store file: its runs, the receiver's waiting spans and the kept reports.
    Use as a context manager, or call `close`."""

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        create: bool = True,
        read_only: bool = False,
        on_wait: Callable[[], None] | None = None,
    ) -> Store:
        """Open the store at ``path`` (default: `default_store_path`), creating it when ``create``;
        without, a missing store is a `StoreError` saying how to make one. A store of an older
        schema version is migrated to `SCHEMA_VERSION`, in one transaction.

        ``read_only`` opens it for reading only, so a store on a read-only disk or in a folder the
        user may not write can still be listed and shown; such an open never changes the file, and
        reads an older store as it is (what its version lacks reads as empty). ``on_wait`` is
        called once when a write has waited `WAIT_NOTICE_SECONDS` for another writer; the write
        then goes on waiting.
        """
        path = Path(path) if path is not None else default_store_path()
        db, tables = connect(path, create=create, read_only=read_only, on_wait=on_wait)
        return cls(db, path, tables, on_wait)

    @contextmanager
    def time_limit(self, seconds: float) -> Iterator[None]:
        """Queries made inside take ``seconds`` in all: SQLite interrupts one still running then
        (its progress handler, which runs while the query does, whatever the query), and it
        raises `QueryTimeout`. A reader's bound on one question (a viewer's page)."""
        deadline = time.monotonic() + seconds
        self._db.set_progress_handler(lambda: time.monotonic() > deadline, 1_000)
        try:
            yield
        except sqlite3.OperationalError:
            if time.monotonic() <= deadline:
                raise
            raise QueryTimeout(
                f"the store did not answer within {seconds:g} s (a narrower filter answers sooner)"
            ) from None
        finally:
            self._db.set_progress_handler(None, 0)
