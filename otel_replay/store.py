"""The local store: SQLite with WAL, a schema version, content-addressed deduplicated blobs.

One function opens connections (`Store.open`, every PRAGMA commented), one context manager commits or
rolls back (`Store.transaction`), the schema is one SQL constant. Step inputs, outputs, metadata and the
span tree live in ``blobs`` keyed by the sha256 of their canonical JSON, so the history an agent resends
on every model call is stored once. A trajectory's rows are written in the same transaction as its
blobs: a killed import leaves the store with whole trajectories only.
"""

from __future__ import annotations

import dataclasses
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
_NOT_CONTENT = ("source", "format")  # where a trajectory was read from is not what it is

_SCHEMA = """
CREATE TABLE blobs (
    digest TEXT PRIMARY KEY,             -- sha256 of data
    data   BLOB NOT NULL                 -- canonical JSON
) WITHOUT ROWID;
CREATE TABLE trajectories (
    id                    TEXT PRIMARY KEY,
    outcome               REAL,
    n_steps               INTEGER NOT NULL,
    final_hash            TEXT NOT NULL,
    content_digest        TEXT NOT NULL, -- steps, outcome and metadata except source: "same run?"
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


@dataclass(frozen=True, slots=True)
class TrajectorySummary:
    id: str
    n_steps: int
    outcome: float | None
    final_hash: str
    source: str | None
    format: str | None
    start_time_unix_nano: int | None


class Store:
    """A handle on one store file. Use as a context manager, or call `close`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._db = connection
        self.path = path

    @classmethod
    def open(cls, path: str | Path | None = None) -> Store:
        """Open (creating if needed) the store at ``path`` (default: `default_store_path`)."""
        path = Path(path) if path is not None else default_store_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, isolation_level=None)  # explicit BEGIN/COMMIT below
            db.execute(
                "PRAGMA journal_mode=WAL"
            )  # readers never block the importer, commits are atomic
            db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL survives a killed process
            db.execute("PRAGMA foreign_keys=ON")  # steps never outlive their trajectory
            db.execute(
                "PRAGMA busy_timeout=10000"
            )  # wait for a concurrent importer instead of failing
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if tables:
                    raise StoreError(f"{path} is an SQLite file but not an agent-replay store")
                db.executescript(f"BEGIN; {_SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
            elif version > SCHEMA_VERSION:
                raise StoreError(
                    f"{path} has schema version {version}, newer than this agent-replay "
                    f"understands ({SCHEMA_VERSION}); upgrade agent-replay"
                )
        except sqlite3.DatabaseError as exc:
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
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # --- writing -----------------------------------------------------------------------------------

    def _blob(self, value: Any) -> tuple[str, bytes]:
        data = canonical_json(value)
        return digest(data), data

    def put(self, trajectory: Trajectory) -> PutResult:
        """Store ``trajectory`` (call inside `transaction`). Same id and content: nothing changes."""
        meta = dict(trajectory.metadata)
        content_meta = {k: v for k, v in meta.items() if k not in _NOT_CONTENT}
        spans = [dataclasses.asdict(s) for s in trajectory.spans]
        blobs: dict[str, bytes] = {}
        meta_digest, data = self._blob(meta)
        blobs[meta_digest] = data
        spans_digest, data = self._blob(spans)
        blobs[spans_digest] = data
        content = digest(
            canonical_json([trajectory.final_hash, trajectory.outcome, content_meta, spans_digest])
        )
        row = self._db.execute(
            "SELECT content_digest FROM trajectories WHERE id = ?", (trajectory.id,)
        ).fetchone()
        if row is not None and row[0] == content:
            return PutResult.UNCHANGED
        step_rows = []
        for step in trajectory.steps:
            inputs_digest, data = self._blob(step.inputs)
            blobs[inputs_digest] = data
            output_digest, data = self._blob(step.output)
            blobs[output_digest] = data
            step_rows.append(
                (
                    trajectory.id,
                    step.index,
                    step.kind.value,
                    step.name,
                    inputs_digest,
                    output_digest,
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
        self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", blobs.items())
        if row is not None:
            self._db.execute("DELETE FROM trajectories WHERE id = ?", (trajectory.id,))
        starts = [s.start_time_unix_nano for s in trajectory.steps if s.start_time_unix_nano]
        self._db.execute(
            "INSERT INTO trajectories VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                trajectory.id,
                trajectory.outcome,
                len(trajectory.steps),
                trajectory.final_hash,
                content,
                meta_digest,
                spans_digest,
                meta.get("source"),
                meta.get("format"),
                min(starts) if starts else None,
                time.time_ns(),
            ),
        )
        self._db.executemany(
            "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", step_rows
        )
        return PutResult.ADDED if row is None else PutResult.REPLACED

    def put_all(self, trajectories: Iterable[Trajectory]) -> list[tuple[Trajectory, PutResult]]:
        """Store every trajectory in one transaction: all of them, or (if anything raises) none."""
        results = []
        with self.transaction():
            for trajectory in trajectories:
                results.append((trajectory, self.put(trajectory)))
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
            "s.resamplable, s.op_key, s.hash FROM steps s "
            "JOIN blobs i ON i.digest = s.inputs_digest JOIN blobs o ON o.digest = s.output_digest "
            "WHERE s.trajectory_id = ? ORDER BY s.idx",
            (trajectory_id,),
        ).fetchall()
        steps = tuple(
            Step(
                index=r[0],
                kind=StepKind(r[1]),
                name=r[2],
                inputs=orjson.loads(r[3]),
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
            "s.resamplable, s.op_key, s.hash, t.outcome, t.source, i.data, o.data FROM steps s "
            "JOIN trajectories t ON t.id = s.trajectory_id "
            "JOIN blobs i ON i.digest = s.inputs_digest JOIN blobs o ON o.digest = s.output_digest"
        )
        if ids is None:
            yield from self._db.execute(query + " ORDER BY s.trajectory_id, s.idx")
            return
        for trajectory_id in ids:
            yield from self._db.execute(
                query + " WHERE s.trajectory_id = ? ORDER BY s.idx", (trajectory_id,)
            )

    def counts(self) -> dict[str, int]:
        """Row counts, for tests and ``list`` footers."""
        return {
            table: self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("trajectories", "steps", "blobs")
        }

    def _load(self, blob_digest: str) -> Any:
        row = self._db.execute("SELECT data FROM blobs WHERE digest = ?", (blob_digest,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path} is missing blob {blob_digest}")
        return orjson.loads(row[0])
