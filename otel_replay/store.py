"""The local store: SQLite with WAL, a schema version, content-addressed deduplicated blobs.

One function opens connections (`Store.open`, every PRAGMA commented), one context manager commits or
rolls back (`Store.transaction`), the schema is one SQL constant. Step inputs, outputs, metadata and the
span tree live in ``blobs`` keyed by the sha256 of their JSON, so the history an agent resends
on every model call is stored once (inputs with ``messages`` keep each message as its own blob, so a
history that grows by one message per turn costs one message per turn). A trajectory's rows are written in the same transaction as its
blobs: a killed import leaves the store with whole trajectories only.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import orjson

from otel_replay.errors import NotFoundError, StoreError
from otel_replay.hashing import canonical_json, digest
from otel_replay.importers._merge import merge_partial, mergeable
from otel_replay.model import SpanNode, Step, StepKind, StepStatus, Trajectory

__all__ = [
    "DEFAULT_STORE",
    "SCHEMA_VERSION",
    "PutResult",
    "Store",
    "TrajectorySummary",
    "default_store_path",
]

SCHEMA_VERSION = 1
DEFAULT_STORE = Path(".agent-replay") / "store.db"

_SCHEMA = """
CREATE TABLE blobs (                     -- a rowid table: new blobs append instead of being
    digest TEXT PRIMARY KEY,             -- inserted at random digest order (measured 1.4x faster)
    data   BLOB NOT NULL                 -- JSON, key order as recorded; digest = its sha256
);
CREATE TABLE trajectories (
    id                    TEXT PRIMARY KEY,
    outcome               REAL,
    n_steps               INTEGER NOT NULL,
    final_hash            TEXT NOT NULL,
    content_digest        TEXT NOT NULL, -- of final hash, outcome and span tree: "the same run?"
    metadata_digest       TEXT NOT NULL REFERENCES blobs(digest),
    spans_digest          TEXT NOT NULL REFERENCES blobs(digest),
    source                TEXT,
    format                TEXT,
    start_time_unix_nano  INTEGER,
    imported_at_unix_nano INTEGER NOT NULL
);
CREATE TABLE steps (
    trajectory_id        TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
    idx                  INTEGER NOT NULL,
    kind                 TEXT NOT NULL,
    name                 TEXT NOT NULL,
    inputs_digest        TEXT NOT NULL REFERENCES blobs(digest),
    inputs_layout        INTEGER NOT NULL, -- 0: the inputs; 1: inputs whose "messages" are digests
    output_digest        TEXT NOT NULL REFERENCES blobs(digest),
    status               TEXT NOT NULL,
    error                TEXT,
    start_time_unix_nano INTEGER,
    end_time_unix_nano   INTEGER,
    span_id              TEXT,
    parent_span_id       TEXT,
    resamplable          INTEGER NOT NULL,
    op_key               TEXT NOT NULL,
    hash                 TEXT NOT NULL,
    PRIMARY KEY (trajectory_id, idx)
) WITHOUT ROWID;
CREATE INDEX steps_by_op_key ON steps(op_key);
"""


def default_store_path() -> Path:
    """``$AGENT_REPLAY_STORE`` if set, else ``./.agent-replay/store.db``."""
    env = os.environ.get("AGENT_REPLAY_STORE")
    return Path(env) if env else DEFAULT_STORE


class PutResult(str, Enum):
    ADDED = "added"
    UNCHANGED = "unchanged"
    REPLACED = "replaced"
    MERGED = "merged"  # another part of a trace already stored from another file


@dataclass(frozen=True, slots=True)
class TrajectorySummary:
    id: str
    n_steps: int
    outcome: float | None
    final_hash: str
    source: str | None
    format: str | None
    start_time_unix_nano: int | None


@dataclass(frozen=True, slots=True)
class _Prepared:
    summary: TrajectorySummary
    content: str
    blobs: dict[str, bytes]
    row: tuple[Any, ...]
    step_rows: list[tuple[Any, ...]]


class Store:
    """A handle on one store file. Use as a context manager, or call `close`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path
        self._known: set[str] = set()  # blobs written in the current transaction

    @classmethod
    def open(cls, path: str | Path | None = None) -> Store:
        """Open (creating if needed) the store at ``path`` (default: `default_store_path`)."""
        path = Path(path) if path is not None else default_store_path()
        db: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, isolation_level=None)  # transaction() issues BEGIN/COMMIT
            db.execute("PRAGMA busy_timeout=10000")  # wait for a concurrent importer, do not fail
            # Look before writing anything: a file that is not ours must be left byte-for-byte alone.
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if version == 0 and tables:
                db.close()
                raise StoreError(f"{path} is an SQLite file but not an agent-replay store")
            if version > SCHEMA_VERSION:
                db.close()
                raise StoreError(
                    f"{path} has schema version {version}, newer than this agent-replay "
                    f"understands ({SCHEMA_VERSION}); upgrade agent-replay"
                )
            if version == 0:
                db.execute("PRAGMA page_size=16384")  # blobs are kilobytes of messages; fewer pages
            db.execute("PRAGMA journal_mode=WAL")  # readers never block an import; atomic commits
            db.execute("PRAGMA synchronous=NORMAL")  # with WAL: survives a killed process
            db.execute("PRAGMA foreign_keys=ON")  # steps never outlive their trajectory
            if version == 0:
                db.executescript(f"BEGIN; {_SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            raise StoreError(f"cannot open store {path}: {exc}") from None
        return cls(db, path)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Commit everything done inside, or nothing if it raises."""
        self._db.execute("BEGIN IMMEDIATE")
        self._known.clear()
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        finally:
            self._known.clear()
        self._db.execute("COMMIT")

    # --- writing -----------------------------------------------------------------------------------

    def _blob(self, value: Any, pending: dict[str, bytes]) -> str:
        """Queue ``value`` as a blob of the trajectory being prepared; return its digest.

        Blobs keep the key order they were recorded with (hashes use canonical JSON, which sorts
        keys): a replayed agent that serialises a served output must see exactly what it saw live.
        """
        data = orjson.dumps(value)
        key = digest(data)
        pending[key] = data
        return key

    def _inputs_blob(self, inputs: dict[str, Any], pending: dict[str, bytes]) -> tuple[str, int]:
        messages = inputs.get("messages")
        if not isinstance(messages, list) or len(messages) < 2:
            return self._blob(inputs, pending), 0
        shell = dict(inputs, messages=[self._blob(m, pending) for m in messages])
        return self._blob(shell, pending), 1

    def _prepare(self, trajectory: Trajectory) -> _Prepared:
        """Everything CPU-bound about storing a trajectory: canonical JSON, digests, rows."""
        meta = dict(trajectory.metadata)
        pending: dict[str, bytes] = {}
        meta_digest = self._blob(meta, pending)
        spans_digest = self._blob([s.to_record() for s in trajectory.spans], pending)
        # What makes a stored run the same: its steps, outcome and span tree (not where it was read)
        content = digest(canonical_json([trajectory.final_hash, trajectory.outcome, spans_digest]))
        step_rows = []
        for step in trajectory.steps:
            inputs_digest, layout = self._inputs_blob(step.inputs, pending)
            step_rows.append(
                (
                    trajectory.id,
                    step.index,
                    step.kind.value,
                    step.name,
                    inputs_digest,
                    layout,
                    self._blob(step.output, pending),
                    step.status.value,
                    step.error,
                    step.start_time_unix_nano,
                    step.end_time_unix_nano,
                    step.span_id,
                    step.parent_span_id,
                    int(step.resamplable),
                    step.op_key,
                    step.hash,
                )
            )
        starts = [s.start_time_unix_nano for s in trajectory.steps if s.start_time_unix_nano]
        summary = TrajectorySummary(
            id=trajectory.id,
            n_steps=len(trajectory.steps),
            outcome=trajectory.outcome,
            final_hash=trajectory.final_hash,
            source=meta.get("source"),
            format=meta.get("format"),
            start_time_unix_nano=min(starts) if starts else None,
        )
        row = (
            summary.id,
            summary.outcome,
            summary.n_steps,
            summary.final_hash,
            content,
            meta_digest,
            spans_digest,
            summary.source,
            summary.format,
            summary.start_time_unix_nano,
            time.time_ns(),
        )
        return _Prepared(summary, content, pending, row, step_rows)

    def _write(self, prepared: _Prepared) -> PutResult:
        """Everything SQLite does to store a prepared trajectory (inside a transaction)."""
        trajectory_id = prepared.summary.id
        existing = self._db.execute(
            "SELECT content_digest FROM trajectories WHERE id = ?", (trajectory_id,)
        ).fetchone()
        if existing is not None and existing[0] == prepared.content:
            return PutResult.UNCHANGED
        known = self._known  # blobs this transaction has already written
        fresh = [(k, v) for k, v in prepared.blobs.items() if k not in known]
        self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", fresh)
        known.update(k for k, _ in fresh)
        if existing is not None:
            self._db.execute("DELETE FROM trajectories WHERE id = ?", (trajectory_id,))
        self._db.execute(
            "INSERT INTO trajectories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", prepared.row
        )
        self._db.executemany(
            "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            prepared.step_rows,
        )
        return PutResult.ADDED if existing is None else PutResult.REPLACED

    def put(self, trajectory: Trajectory) -> PutResult:
        """Store ``trajectory`` (call inside `transaction`).

        Same id and content: nothing changes. Both built from spans (OTLP): a trace id names one
        trace, so the new part is merged in (the Collector spreads traces over rotated files). Same
        steps and outcome in another form: the first copy is kept. Otherwise the new one replaces
        the old.
        """
        return self._store(trajectory)[1]

    def _store(self, trajectory: Trajectory) -> tuple[TrajectorySummary, PutResult]:
        """Add, keep, merge or replace: see `put`."""
        prepared = self._prepare(trajectory)
        row = self._db.execute(
            "SELECT content_digest, format, final_hash, outcome FROM trajectories WHERE id = ?",
            (trajectory.id,),
        ).fetchone()
        if row is None or row[0] == prepared.content:
            return prepared.summary, self._write(prepared)
        if mergeable(row[1], trajectory):
            merged = self._prepare(merge_partial(self.get(trajectory.id), trajectory))
            result = self._write(merged)
            return (
                merged.summary,
                PutResult.UNCHANGED if result is PutResult.UNCHANGED else PutResult.MERGED,
            )
        if (row[2], row[3]) == (trajectory.final_hash, trajectory.outcome):
            # the same run in another dress (a recording exported and imported again): keep the
            # first, richer copy (a recording knows its input and seed)
            return prepared.summary, PutResult.UNCHANGED
        return prepared.summary, self._write(prepared)

    def put_all(
        self, trajectories: Iterable[Trajectory]
    ) -> list[tuple[TrajectorySummary, PutResult]]:
        """Store every trajectory in one transaction: all of them, or (if anything raises) none.

        Returns a summary per trajectory, not the trajectories, so memory stays bounded by one run.
        (A writer thread overlapping SQLite with parsing was measured slower: the sqlite3 module holds
        the GIL while it binds parameters, which is most of the work here.)
        """
        results: list[tuple[TrajectorySummary, PutResult]] = []
        with self.transaction():
            for trajectory in trajectories:
                results.append(self._store(trajectory))
        return results

    # --- reading -----------------------------------------------------------------------------------

    def resolve(self, id_or_prefix: str) -> str:
        """The full id of the one trajectory whose id is, or starts with, ``id_or_prefix``."""
        exact = self._db.execute(
            "SELECT id FROM trajectories WHERE id = ?", (id_or_prefix,)
        ).fetchone()
        if exact:
            return str(exact[0])
        escaped = id_or_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._db.execute(
            "SELECT id FROM trajectories WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
            (escaped + "%",),
        ).fetchall()
        if not rows:
            raise NotFoundError(f"no trajectory id starts with {id_or_prefix!r} in {self.path}")
        if len(rows) > 1:
            shown = ", ".join(r[0] for r in rows[:5])
            raise NotFoundError(
                f"{id_or_prefix!r} is ambiguous: it matches {shown}{', ...' if len(rows) > 5 else ''}"
            )
        return str(rows[0][0])

    def summaries(self) -> list[TrajectorySummary]:
        """Every trajectory, oldest run first."""
        rows = self._db.execute(
            "SELECT id, n_steps, outcome, final_hash, source, format, start_time_unix_nano "
            "FROM trajectories ORDER BY start_time_unix_nano IS NULL, start_time_unix_nano, id"
        ).fetchall()
        return [TrajectorySummary(*row) for row in rows]

    def get(self, id_or_prefix: str) -> Trajectory:
        """Load one trajectory by id or unique id prefix."""
        trajectory_id = self.resolve(id_or_prefix)
        outcome, meta_digest, spans_digest = self._db.execute(
            "SELECT outcome, metadata_digest, spans_digest FROM trajectories WHERE id = ?",
            (trajectory_id,),
        ).fetchone()
        rows = self._db.execute(
            "SELECT s.idx, s.kind, s.name, i.data, o.data, s.status, s.error, "
            "s.start_time_unix_nano, s.end_time_unix_nano, s.span_id, s.parent_span_id, "
            "s.resamplable, s.op_key, s.hash, s.inputs_layout FROM steps s "
            "JOIN blobs i ON i.digest = s.inputs_digest JOIN blobs o ON o.digest = s.output_digest "
            "WHERE s.trajectory_id = ? ORDER BY s.idx",
            (trajectory_id,),
        ).fetchall()
        steps = tuple(
            Step(
                index=r[0],
                kind=StepKind(r[1]),
                name=r[2],
                inputs=self._inputs(r[3], r[14]),
                output=orjson.loads(r[4]),
                status=StepStatus(r[5]),
                error=r[6],
                start_time_unix_nano=r[7],
                end_time_unix_nano=r[8],
                span_id=r[9],
                parent_span_id=r[10],
                resamplable=bool(r[11]),
                op_key=r[12],
                hash=r[13],
            )
            for r in rows
        )
        spans = tuple(
            SpanNode(**dict(s, status=StepStatus(s["status"]))) for s in self._load(spans_digest)
        )
        return Trajectory(
            id=trajectory_id,
            steps=steps,
            outcome=outcome,
            metadata=self._load(meta_digest),
            spans=spans,
        )

    def iter_step_rows(self, ids: Iterable[str] | None = None) -> Iterator[tuple[Any, ...]]:
        """Raw step rows joined with their trajectory (for `steps_frame`), in (trajectory, index) order."""
        query = (
            "SELECT s.trajectory_id, s.idx, s.kind, s.name, s.status, s.error, "
            "s.start_time_unix_nano, s.end_time_unix_nano, s.span_id, s.parent_span_id, "
            "s.resamplable, s.op_key, s.hash, t.outcome, t.source, i.data, s.inputs_layout, "
            "o.data FROM steps s "
            "JOIN trajectories t ON t.id = s.trajectory_id "
            "JOIN blobs i ON i.digest = s.inputs_digest JOIN blobs o ON o.digest = s.output_digest"
        )
        batches = (
            [self._db.execute(query + " ORDER BY s.trajectory_id, s.idx")]
            if ids is None
            else (
                self._db.execute(query + " WHERE s.trajectory_id = ? ORDER BY s.idx", (i,))
                for i in ids
            )
        )
        for cursor in batches:
            for row in cursor.fetchall():
                *head, inputs, layout, output = row
                if layout == 1:
                    inputs = orjson.dumps(self._inputs(inputs, layout))
                yield (*head, inputs, output)

    def counts(self) -> dict[str, int]:
        """Row counts, for tests and ``list`` footers."""
        return {
            table: self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("trajectories", "steps", "blobs")
        }

    def _inputs(self, data: bytes, layout: int) -> dict[str, Any]:
        inputs: dict[str, Any] = orjson.loads(data)
        if layout == 1:
            inputs["messages"] = [self._load(d) for d in inputs["messages"]]
        return inputs

    def _load(self, blob_digest: str) -> Any:
        row = self._db.execute("SELECT data FROM blobs WHERE digest = ?", (blob_digest,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path} is missing blob {blob_digest}")
        return orjson.loads(row[0])
