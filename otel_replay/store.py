"""The local store: SQLite with WAL, a schema version, content-addressed deduplicated blobs.

One function opens connections (`Store.open`, every PRAGMA commented), one context manager commits or
rolls back (`Store.transaction`), the schema is one SQL constant, and rows are read by column name.
Step inputs, outputs, metadata and the span tree live in ``blobs`` keyed by the sha256 of their JSON,
so the history an agent resends on every model call is stored once (inputs with ``messages`` keep each
message as its own blob, so a history that grows by one message per turn costs one message per turn).
A trajectory's rows are written in the same transaction as its blobs: a killed import leaves the store
with whole trajectories only.

The store holds no policy: `Store.put` writes what it is given (replacing a stored run of the same
id), and `content_digest` says what "the same content" means. Whether an arriving run is added,
unchanged, merged or replaced is decided one floor up, in `otel_replay.ingest`.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import orjson

from otel_replay.errors import NotFoundError, StoreError
from otel_replay.hashing import canonical_json, digest
from otel_replay.model import SpanNode, Step, Trajectory

__all__ = [
    "DEFAULT_STORE",
    "REPORT_STEP_COLUMNS",
    "SCHEMA_VERSION",
    "Store",
    "TrajectorySummary",
    "content_digest",
    "default_store_path",
    "summarize",
]

SCHEMA_VERSION = 1
T = TypeVar("T")
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

#: Spans the receiver holds for traces whose root span has not arrived (`Store.keep_pending`). Created
#: by the receiver when it starts, so a store no receiver wrote to is as it always was (and stores
#: of older versions gain the table without a new schema version).
_PENDING = """
CREATE TABLE IF NOT EXISTS pending_spans (
    trace_id              TEXT NOT NULL,
    received_at_unix_nano INTEGER NOT NULL,
    span                  BLOB NOT NULL  -- one decoded span (otel_replay.importers.span_bytes)
);
CREATE INDEX IF NOT EXISTS pending_by_trace ON pending_spans(trace_id);
"""

#: Attribution reports kept for their run (`Store.keep_report`), one per run and configuration: the
#: same question asked again replaces its answer. Created by the first report kept, like
#: `_PENDING`. ``report`` is the report's JSON as written (``otel_replay.report.dumps_report``);
#: ``report_steps`` holds one row per step of each report, what ``blame`` reads across runs
#: (its columns are `REPORT_STEP_COLUMNS`, made by ``otel_replay.fleet``).
_REPORTS = """
CREATE TABLE IF NOT EXISTS reports (
    trajectory_id        TEXT NOT NULL,
    config_digest        TEXT NOT NULL,  -- the question asked (otel_replay.attribution.config_digest)
    created_at_unix_nano INTEGER NOT NULL,
    verdict              TEXT,
    report               BLOB NOT NULL,
    PRIMARY KEY (trajectory_id, config_digest)
);
CREATE TABLE IF NOT EXISTS report_steps (
    trajectory_id  TEXT NOT NULL,
    config_digest  TEXT NOT NULL,
    idx            INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    name           TEXT NOT NULL,
    shape          TEXT NOT NULL,  -- a tool call's argument names, sorted and comma-joined
    verdict        TEXT,
    attribution    REAL,
    ci_low         REAL,
    ci_high        REAL,
    commitment     INTEGER NOT NULL,  -- 1: this step is the report's Point of Commitment
    repaired       INTEGER NOT NULL,  -- 1: the report's repair changes this step
    repair_success REAL,
    newest         INTEGER NOT NULL,  -- 1: of the run's newest report (what blame adds up)
    PRIMARY KEY (trajectory_id, config_digest, idx)
) WITHOUT ROWID;
"""
#: The columns of a ``report_steps`` row as `Store.keep_report` is given it, in order (the store
#: adds ``newest``).
REPORT_STEP_COLUMNS = (
    "trajectory_id",
    "config_digest",
    "idx",
    "kind",
    "name",
    "shape",
    "verdict",
    "attribution",
    "ci_low",
    "ci_high",
    "commitment",
    "repaired",
    "repair_success",
)

#: The most blob digests `Store.transaction` remembers as stored between commits (about 12 MB).
_KNOWN_BLOBS = 100_000

#: How long one attempt to take the write lock waits inside SQLite before the store looks again.
BUSY_TIMEOUT_MS = 1000
#: After this long waiting for another writer, the store says so (``on_wait``) and keeps waiting.
WAIT_NOTICE_SECONDS = 3.0


def _create_schema(db: sqlite3.Connection) -> None:
    """Create the tables once, under the write lock: two processes opening a new store at the same
    moment both see an empty file, so the check is repeated here and only the first creates."""
    if db.execute("PRAGMA user_version").fetchone()[0] == 0:
        statement = ""
        for line in _SCHEMA.splitlines(keepends=True):  # statements, comments and all
            statement += line
            if sqlite3.complete_statement(statement):
                db.execute(statement)
                statement = ""
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _prepare(db: sqlite3.Connection, path: Path, read_only: bool) -> int:
    """Check the file is a store this version reads, set the connection up; its schema version.
    Looks before writing anything: a file that is not ours is left byte-for-byte alone."""
    # one statement, one snapshot: read apart, another process creating the store between the two
    # reads would show tables without their version, "not an agent-replay store"
    row = db.execute(
        "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)"
    ).fetchone()
    version, tables = int(row[0]), int(row[1])
    if version == 0 and tables:
        raise StoreError(f"{path} is an SQLite file but not an agent-replay store")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has schema version {version}, newer than this agent-replay "
            f"understands ({SCHEMA_VERSION}); upgrade agent-replay"
        )
    if version == 0 and read_only:
        raise StoreError(f"{path} is empty: there is no store there yet")
    if not read_only:
        if version == 0:
            db.execute("PRAGMA page_size=16384")  # blobs are kilobytes of messages
        db.execute("PRAGMA journal_mode=WAL")  # readers never block an import; atomic commits
        db.execute("PRAGMA synchronous=NORMAL")  # with WAL: survives a killed process
        db.execute("PRAGMA foreign_keys=ON")  # steps never outlive their trajectory
    return version


def _patiently(action: Callable[[], T], on_wait: Callable[[], None] | None) -> T:
    """``action()``, again and again while another process holds the store's lock: as long as it
    takes (the other writer finishes, or was killed and its lock went with it). ``on_wait`` is
    called once, after `WAIT_NOTICE_SECONDS`."""
    started = time.monotonic()
    noticed = False
    while True:
        attempt = time.monotonic()
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
        if time.monotonic() - attempt < 0.1:  # busy without waiting (WAL recovery): pause
            time.sleep(0.1)
        waited = time.monotonic() - started
        if not noticed and on_wait is not None and waited >= WAIT_NOTICE_SECONDS:
            on_wait()
            noticed = True


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None)  # transaction() issues BEGIN/COMMIT
    db.row_factory = sqlite3.Row  # rows are read by column name, never by position
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # then `Store._begin` looks again
    return db


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes. A WAL store needs its ``-shm`` file even to be read; where
    that cannot be made (a read-only disk or folder) and no ``-wal`` holds unmerged commits, the
    file alone is the whole store and is opened as immutable."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    db = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        db.execute("PRAGMA user_version").fetchone()
    except sqlite3.OperationalError:
        db.close()
        if Path(f"{path}-wal").exists():
            raise StoreError(
                f"cannot read store {path}: it is read-only here and its write-ahead log "
                f"({path}-wal) holds commits not yet merged; open it once where it can be "
                "written (any agent-replay command), or copy the store and its -wal file "
                "somewhere writable"
            ) from None
        db = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return db


_SQLITE_READONLY, _SQLITE_FULL = 8, 13  # SQLite's result codes; the module names them from 3.11


def _cannot_write(path: Path) -> bool:
    """A store that exists but whose file or folder this process may not write (a WAL store
    writes beside itself)."""
    return path.exists() and not (
        os.access(path, os.W_OK) and os.access(path.parent.resolve(), os.W_OK)
    )


def _translated(path: Path, exc: sqlite3.DatabaseError) -> StoreError | None:
    """SQLite's words for what went wrong, in the user's: the full disk, the read-only file."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code (Python 3.11+)
    if code == _SQLITE_FULL or "disk is full" in str(exc):
        device = os.path.dirname(os.path.abspath(path)) or "."
        return StoreError(
            f"no space left on the disk holding {device} (writing {path}); nothing was written, "
            "the store is as it was: free some space and run the command again"
        )
    if code == _SQLITE_READONLY or "readonly" in str(exc) or _cannot_write(path):
        return StoreError(
            f"store {path} is read-only here; commands that add runs (import, record, fork) "
            "need a store they can write"
        )
    return None


def default_store_path() -> Path:
    """``$AGENT_REPLAY_STORE`` if set, else ``./.agent-replay/store.db``."""
    env = os.environ.get("AGENT_REPLAY_STORE")
    return Path(env) if env else DEFAULT_STORE


@dataclass(frozen=True, slots=True)
class TrajectorySummary:
    """One stored run, without its steps (the columns of ``trajectories``, by name)."""

    id: str
    n_steps: int
    outcome: float | None
    final_hash: str
    source: str | None
    format: str | None
    start_time_unix_nano: int | None
    content_digest: str  # see `content_digest`


def summarize(trajectory: Trajectory) -> TrajectorySummary:
    """The summary `Store.put` would store for ``trajectory`` (without storing it)."""
    return _summarize(trajectory, digest(_spans_blob(trajectory)))


def content_digest(trajectory: Trajectory) -> str:
    """What makes two stored runs the same: their steps (the final hash), outcome and span tree —
    not where or in which format they were read."""
    return summarize(trajectory).content_digest


def _spans_blob(trajectory: Trajectory) -> bytes:
    return orjson.dumps([s.to_record() for s in trajectory.spans])


def _summarize(trajectory: Trajectory, spans_digest: str) -> TrajectorySummary:
    starts = [s.start_time_unix_nano for s in trajectory.steps if s.start_time_unix_nano]
    return TrajectorySummary(
        id=trajectory.id,
        n_steps=len(trajectory.steps),
        outcome=trajectory.outcome,
        final_hash=trajectory.final_hash,
        source=trajectory.metadata.get("source"),
        format=trajectory.metadata.get("format"),
        start_time_unix_nano=min(starts) if starts else None,
        content_digest=digest(
            canonical_json([trajectory.final_hash, trajectory.outcome, spans_digest])
        ),
    )


_SUMMARY_COLUMNS = (
    "id, n_steps, outcome, final_hash, source, format, start_time_unix_nano, content_digest"
)
# A step row, named as `Step.to_record` names its fields; inputs and output are blob data.
_STEP_QUERY = (
    'SELECT s.idx AS "index", s.kind, s.name, i.data AS inputs, s.inputs_layout, '
    "o.data AS output, s.status, s.error, s.start_time_unix_nano, s.end_time_unix_nano, "
    "s.span_id, s.parent_span_id, s.resamplable, s.op_key, s.hash"
)
_STEP_JOINS = (
    "JOIN blobs i ON i.digest = s.inputs_digest JOIN blobs o ON o.digest = s.output_digest"
)


class Store:
    """A handle on one store file. Use as a context manager, or call `close`."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        self._db = connection
        self.path = path
        self._on_wait = on_wait
        self._known: set[str] = set()  # blobs known to be stored (see `transaction`)

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
        without, a missing store is a `StoreError` saying how to make one.

        ``read_only`` opens it for reading only, so a store on a read-only disk or in a folder the
        user may not write can still be listed and shown. ``on_wait`` is called once when a write
        has waited `WAIT_NOTICE_SECONDS` for another writer; the write then goes on waiting.
        """
        path = Path(path) if path is not None else default_store_path()
        if (read_only or not create) and not path.exists():
            raise StoreError(
                f"there is no store at {path}; `agent-replay import TRACES --store {path}` makes one"
            )
        db: sqlite3.Connection | None = None
        try:
            db = _connect_read_only(path) if read_only else _connect(path)
            version = _patiently(partial(_prepare, db, path, read_only), on_wait)
            store = cls(db, path, on_wait)
            if version == 0:
                with store._write_lock():
                    _create_schema(db)
        except (sqlite3.DatabaseError, StoreError) as exc:
            if db is not None:
                db.close()
            if isinstance(exc, StoreError):
                raise
            raise _translated(path, exc) or StoreError(f"cannot open store {path}: {exc}") from None
        return store

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Commit everything done inside, or nothing if it raises. The blobs known to be stored
        outlive a commit (blobs are never deleted), so a receiver committing request after request
        does not look them up again; a rollback forgets them."""
        try:
            with self._write_lock():
                yield
        except BaseException as exc:
            self._known.clear()
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            translated = _translated(self.path, exc)
            if translated is None:
                raise  # a damaged store: the caller names the recovery
            raise translated from None
        if len(self._known) > _KNOWN_BLOBS:
            self._known.clear()

    @contextmanager
    def _write_lock(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, waiting as long as it takes for another writer (the
        ``on_wait`` notice is given once), and rolling back only what is still open: after a full
        disk SQLite has already rolled the transaction back itself."""
        self._begin()
        try:
            yield
        except BaseException:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _begin(self) -> None:
        _patiently(lambda: self._db.execute("BEGIN IMMEDIATE"), self._on_wait)

    # --- writing -----------------------------------------------------------------------------------

    def put(self, trajectory: Trajectory) -> TrajectorySummary:
        """Store ``trajectory``, replacing a stored run of the same id; a run whose content is
        already stored (`content_digest`) is left as it is. Inside `transaction`, or in one of its own.
        """
        if not self._db.in_transaction:
            with self.transaction():
                return self.put(trajectory)
        row, steps, blobs = self._rows(trajectory)
        stored = self.summary(trajectory.id)
        if stored is not None and stored.content_digest == row["content_digest"]:
            return stored
        known = self._known  # blobs already stored
        fresh = [(k, v) for k, v in blobs.items() if k not in known]
        self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", fresh)
        known.update(k for k, _ in fresh)
        if stored is not None:
            self._db.execute("DELETE FROM trajectories WHERE id = ?", (trajectory.id,))
        self._db.execute(_insert("trajectories", row), row)
        if steps:
            self._db.executemany(_insert("steps", steps[0]), steps)
        return _summary(row)

    def delete(self, trajectory_id: str) -> None:
        """Remove a run (its steps go with it; blobs stay, shared and content-addressed). Inside
        `transaction`, or in one of its own."""
        if not self._db.in_transaction:
            with self.transaction():
                return self.delete(trajectory_id)
        self._db.execute("DELETE FROM trajectories WHERE id = ?", (trajectory_id,))

    def put_all(self, trajectories: Iterable[Trajectory]) -> list[TrajectorySummary]:
        """Store every trajectory in one transaction: all of them, or (if anything raises) none.

        Returns a summary per trajectory, not the trajectories, so memory stays bounded by one run.
        """
        with self.transaction():
            return [self.put(trajectory) for trajectory in trajectories]

    def _rows(
        self, trajectory: Trajectory
    ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, bytes]]:
        """Everything CPU-bound about storing a trajectory: its row, its step rows, its blobs.

        (A writer thread overlapping SQLite with this was measured slower: the sqlite3 module holds
        the GIL while it binds parameters, which is most of the work here.)
        """
        blobs: dict[str, bytes] = {}
        meta = dict(trajectory.metadata)
        spans_digest = _put_blob(blobs, _spans_blob(trajectory))
        steps = []
        for step in trajectory.steps:
            inputs_digest, layout = _inputs_blob(blobs, step.inputs)
            steps.append(
                {
                    "trajectory_id": trajectory.id,
                    "idx": step.index,
                    "kind": step.kind.value,
                    "name": step.name,
                    "inputs_digest": inputs_digest,
                    "inputs_layout": layout,
                    "output_digest": _put_blob(blobs, orjson.dumps(step.output)),
                    "status": step.status.value,
                    "error": step.error,
                    "start_time_unix_nano": step.start_time_unix_nano,
                    "end_time_unix_nano": step.end_time_unix_nano,
                    "span_id": step.span_id,
                    "parent_span_id": step.parent_span_id,
                    "resamplable": int(step.resamplable),
                    "op_key": step.op_key,
                    "hash": step.hash,
                }
            )
        summary = _summarize(trajectory, spans_digest)
        row = {
            **{name: getattr(summary, name) for name in _SUMMARY_FIELDS},
            "metadata_digest": _put_blob(blobs, orjson.dumps(meta)),
            "spans_digest": spans_digest,
            "imported_at_unix_nano": time.time_ns(),
        }
        return row, steps, blobs

    # --- reading -----------------------------------------------------------------------------------

    def resolve(self, id_or_prefix: str) -> str:
        """The full id of the one trajectory whose id is, or starts with, ``id_or_prefix``."""
        if self.summary(id_or_prefix) is not None:
            return id_or_prefix
        escaped = id_or_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        ids = [
            row["id"]
            for row in self._db.execute(
                "SELECT id FROM trajectories WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 6",
                (escaped + "%",),
            )
        ]
        if not ids:
            raise NotFoundError(f"no trajectory id starts with {id_or_prefix!r} in {self.path}")
        if len(ids) > 1:
            shown = ", ".join(ids[:5])
            raise NotFoundError(
                f"{id_or_prefix!r} is ambiguous: it matches {shown}{', ...' if len(ids) > 5 else ''}"
            )
        return str(ids[0])

    def summary(self, trajectory_id: str) -> TrajectorySummary | None:
        """The stored run with exactly this id, without its steps; None if there is none."""
        row = self._db.execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM trajectories WHERE id = ?", (trajectory_id,)
        ).fetchone()
        return None if row is None else _summary(row)

    def summaries(self) -> list[TrajectorySummary]:
        """Every trajectory, oldest run first."""
        rows = self._db.execute(
            f"SELECT {_SUMMARY_COLUMNS} FROM trajectories "
            "ORDER BY start_time_unix_nano IS NULL, start_time_unix_nano, id"
        )
        return [_summary(row) for row in rows]

    def get(self, id_or_prefix: str) -> Trajectory:
        """Load one trajectory by id or unique id prefix."""
        trajectory_id = self.resolve(id_or_prefix)
        head = self._db.execute(
            "SELECT outcome, metadata_digest, spans_digest FROM trajectories WHERE id = ?",
            (trajectory_id,),
        ).fetchone()
        rows = self._db.execute(
            f"{_STEP_QUERY} FROM steps s {_STEP_JOINS} WHERE s.trajectory_id = ? ORDER BY s.idx",
            (trajectory_id,),
        )
        steps = tuple(Step.from_record(self._step_record(row)) for row in rows)
        return Trajectory(
            id=trajectory_id,
            steps=steps,
            outcome=head["outcome"],
            metadata=self._load(head["metadata_digest"]),
            spans=tuple(SpanNode.from_record(s) for s in self._load(head["spans_digest"])),
        )

    def iter_step_rows(self, ids: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Step rows with their trajectory's ``trajectory_id``, ``outcome`` and ``source``, keyed as
        `Step.to_record` names fields (``inputs`` and ``output`` as JSON bytes), in (trajectory,
        index) order: for `steps_frame`, without building `Step` objects."""
        query = (
            f"{_STEP_QUERY}, s.trajectory_id, t.outcome AS outcome, t.source AS source "
            f"FROM steps s JOIN trajectories t ON t.id = s.trajectory_id {_STEP_JOINS}"
        )
        cursors = (
            [self._db.execute(query + " ORDER BY s.trajectory_id, s.idx")]
            if ids is None
            else (
                self._db.execute(query + " WHERE s.trajectory_id = ? ORDER BY s.idx", (i,))
                for i in ids
            )
        )
        for cursor in cursors:
            for row in cursor:
                record = dict(row)
                if record.pop("inputs_layout") == 1:
                    record["inputs"] = orjson.dumps(self._inputs(record["inputs"], 1))
                yield record

    def results_of(self, op_keys: Iterable[str]) -> dict[str, list[tuple[Any, str, str | None]]]:
        """Every recorded result of the operations ``op_keys`` name, across all stored runs:
        ``op_key → [(output, status, error), ...]``, one entry per recorded step, in store order."""
        found: dict[str, list[tuple[Any, str, str | None]]] = {}
        for key in dict.fromkeys(op_keys):
            rows = self._db.execute(
                "SELECT o.data AS output, s.status, s.error FROM steps s "
                "JOIN blobs o ON o.digest = s.output_digest WHERE s.op_key = ? "
                "ORDER BY s.trajectory_id, s.idx",
                (key,),
            )
            found[key] = [(orjson.loads(r["output"]), r["status"], r["error"]) for r in rows]
        return found

    # --- spans waiting for the rest of their trace (the receiver) -------------------------------

    def prepare_pending(self) -> None:
        """Create the table of waiting spans if the store has none (inside `transaction`)."""
        for statement in _PENDING.split(";"):
            if statement.strip():
                self._db.execute(statement)

    def keep_pending(self, trace_id: str, spans: Iterable[bytes], received_ns: int) -> None:
        """Keep spans of ``trace_id`` until its run is built (inside `transaction`)."""
        self._db.executemany(
            "INSERT INTO pending_spans (trace_id, received_at_unix_nano, span) VALUES (?, ?, ?)",
            ((trace_id, received_ns, span) for span in spans),
        )

    def pending(self, trace_ids: Collection[str]) -> dict[str, list[bytes]]:
        """The spans kept for each of ``trace_ids`` that has any, in the order they arrived."""
        kept: dict[str, list[bytes]] = {}
        for chunk in _chunks(list(trace_ids)):
            rows = self._db.execute(
                "SELECT trace_id, span FROM pending_spans WHERE trace_id IN "
                f"({','.join('?' * len(chunk))}) ORDER BY rowid",
                chunk,
            )
            for row in rows:
                kept.setdefault(str(row["trace_id"]), []).append(bytes(row["span"]))
        return kept

    def stored(self, ids: Collection[str]) -> set[str]:
        """Which of ``ids`` are stored runs."""
        found: set[str] = set()
        for chunk in _chunks(list(ids)):
            rows = self._db.execute(
                f"SELECT id FROM trajectories WHERE id IN ({','.join('?' * len(chunk))})", chunk
            )
            found.update(str(row["id"]) for row in rows)
        return found

    def drop_pending(self, trace_id: str) -> None:
        """Forget the spans kept for ``trace_id`` (inside `transaction`): its run is stored."""
        self._db.execute("DELETE FROM pending_spans WHERE trace_id = ?", (trace_id,))

    def pending_traces(self, quiet_since_ns: int | None = None) -> list[str]:
        """Traces with spans kept, oldest first; with ``quiet_since_ns``, only those that received
        nothing since."""
        rows = self._db.execute(
            "SELECT trace_id, max(received_at_unix_nano) AS last FROM pending_spans "
            "GROUP BY trace_id HAVING ? IS NULL OR last < ? ORDER BY min(rowid)",
            (quiet_since_ns, quiet_since_ns),
        )
        return [str(row["trace_id"]) for row in rows]

    # --- attribution reports ------------------------------------------------------------------------

    def keep_report(
        self,
        trajectory_id: str,
        config_digest: str,
        report: bytes,
        verdict: str | None,
        steps: Iterable[Sequence[Any]] = (),
    ) -> None:
        """Keep an attribution report (its JSON bytes) beside its run, replacing the one kept for
        the same run and question (``config_digest``), with its rows for ``report_steps`` (values
        in `REPORT_STEP_COLUMNS` order): a report with rows is the one ``blame`` adds up for the
        run from now on; one without (a swap question's) leaves that as it was. Inside
        `transaction`, or in one of its own."""
        if not self._db.in_transaction:
            with self.transaction():
                return self.keep_report(trajectory_id, config_digest, report, verdict, steps)
        self.prepare_reports()
        rows = [tuple(row) for row in steps]
        key = (trajectory_id, config_digest)
        self._db.execute(
            "DELETE FROM report_steps WHERE trajectory_id = ? AND config_digest = ?", key
        )
        if rows:
            self._db.execute("UPDATE report_steps SET newest = 0 WHERE trajectory_id = ?", key[:1])
        self._db.execute(
            "INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?, ?)",
            (*key, time.time_ns(), verdict, report),
        )
        marks = ", ".join("?" * len(REPORT_STEP_COLUMNS))
        self._db.executemany(f"INSERT INTO report_steps VALUES ({marks}, 1)", rows)

    def prepare_reports(self) -> None:
        """Create the report tables if the store has none (inside `transaction`)."""
        for statement in _REPORTS.split(";"):
            if statement.strip():
                self._db.execute(statement)

    def reported(self, config_digest: str) -> set[str]:
        """The runs that have a report for the question ``config_digest``."""
        if not self._has_table("reports"):
            return set()
        rows = self._db.execute(
            "SELECT trajectory_id FROM reports WHERE config_digest = ?", (config_digest,)
        )
        return {str(row[0]) for row in rows}

    def blame_sums(self, runs: Collection[str] | None = None) -> list[dict[str, Any]]:
        """What ``blame`` adds up, one pass over each run's newest report rows (of ``runs``, or
        of all): per step (kind, name, shape) and verdict, the runs, commitments, the sum, sum of
        squares and count of the estimates, repairs and their success rates' sum and count."""
        if not self._has_table("report_steps"):
            return []
        among = "" if runs is None else " AND trajectory_id IN (SELECT value FROM json_each(?))"
        rows = self._db.execute(
            "SELECT kind, name, shape, verdict, count(DISTINCT trajectory_id) AS runs,"
            " sum(commitment) AS commitments, sum(attribution) AS total,"
            " sum(attribution * attribution) AS squares, count(attribution) AS estimated,"
            " sum(repaired) AS repairs, sum(repair_success) AS repair_total,"
            " count(repair_success) AS repair_count"
            f" FROM report_steps WHERE newest = 1{among} GROUP BY 1, 2, 3, 4",
            () if runs is None else (orjson.dumps(list(runs)).decode(),),
        )
        return [dict(row) for row in rows]

    def decided_runs(self, runs: Collection[str] | None = None) -> int:
        """Runs (of ``runs``, or all) whose newest report named a culprit."""
        if not self._has_table("report_steps"):
            return 0
        among = "" if runs is None else " AND trajectory_id IN (SELECT value FROM json_each(?))"
        row = self._db.execute(
            "SELECT count(DISTINCT trajectory_id) FROM report_steps"
            f" WHERE newest = 1 AND verdict = 'culprit'{among}",
            () if runs is None else (orjson.dumps(list(runs)).decode(),),
        ).fetchone()
        return int(row[0])

    def newest_reports(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each run's newest report: its run id and the report (parsed)."""
        if not self._has_table("reports"):
            return
        rows = self._db.execute(
            "SELECT trajectory_id, report FROM ("
            "  SELECT trajectory_id, report, row_number() OVER (PARTITION BY trajectory_id"
            "         ORDER BY created_at_unix_nano DESC) AS newest FROM reports"
            ") WHERE newest = 1 ORDER BY trajectory_id"
        )
        for row in rows:
            yield str(row[0]), orjson.loads(row[1])

    def reports(self, trajectory_id: str) -> list[dict[str, Any]]:
        """The reports kept for a run, newest first: ``config_digest``, ``created_at_unix_nano``,
        ``verdict`` and ``report`` (parsed). A store no report was kept in has none."""
        if not self._has_table("reports"):
            return []
        rows = self._db.execute(
            "SELECT config_digest, created_at_unix_nano, verdict, report FROM reports "
            "WHERE trajectory_id = ? ORDER BY created_at_unix_nano DESC",
            (trajectory_id,),
        )
        return [{**dict(row), "report": orjson.loads(row["report"])} for row in rows]

    def report_counts(self) -> dict[str, int]:
        """How many reports are kept for each run that has any."""
        if not self._has_table("reports"):
            return {}
        rows = self._db.execute("SELECT trajectory_id, count(*) FROM reports GROUP BY 1")
        return {str(row[0]): int(row[1]) for row in rows}

    def _has_table(self, name: str) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def counts(self) -> dict[str, int]:
        """Row counts, for tests and ``list`` footers."""
        return {
            table: self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("trajectories", "steps", "blobs")
        }

    def _step_record(self, row: sqlite3.Row) -> dict[str, Any]:
        record = dict(row)
        record["inputs"] = self._inputs(record["inputs"], record.pop("inputs_layout"))
        record["output"] = orjson.loads(record["output"])
        record["resamplable"] = bool(record["resamplable"])
        return record

    def _inputs(self, data: bytes, layout: int) -> dict[str, Any]:
        inputs: dict[str, Any] = orjson.loads(data)
        if layout == 1:
            inputs["messages"] = [self._load(d) for d in inputs["messages"]]
        return inputs

    def _load(self, blob_digest: str) -> Any:
        row = self._db.execute("SELECT data FROM blobs WHERE digest = ?", (blob_digest,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path} is missing blob {blob_digest}")
        return orjson.loads(row["data"])


def _chunks(values: list[str], size: int = 500) -> Iterator[list[str]]:
    """``values`` in chunks SQLite's limit on bound parameters admits."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _summary(row: sqlite3.Row | dict[str, Any]) -> TrajectorySummary:
    return TrajectorySummary(**{name: row[name] for name in _SUMMARY_FIELDS})


_SUMMARY_FIELDS = tuple(name.strip() for name in _SUMMARY_COLUMNS.split(","))


def _insert(table: str, row: dict[str, Any]) -> str:
    """``INSERT INTO table (a, b) VALUES (:a, :b)`` for a row keyed by column name."""
    return (
        f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + name for name in row)})"
    )


def _put_blob(blobs: dict[str, bytes], data: bytes) -> str:
    """Queue JSON ``data`` as a blob; return its digest.

    Blobs keep the key order they were recorded with (hashes use canonical JSON, which sorts keys):
    a replayed agent that serialises a served output must see exactly what it saw live.
    """
    key = digest(data)
    blobs[key] = data
    return key


def _inputs_blob(blobs: dict[str, bytes], inputs: dict[str, Any]) -> tuple[str, int]:
    """Inputs with ``messages`` store each message as its own blob (layout 1); others whole (0)."""
    messages = inputs.get("messages")
    if not isinstance(messages, list) or len(messages) < 2:
        return _put_blob(blobs, orjson.dumps(inputs)), 0
    shell = dict(inputs, messages=[_put_blob(blobs, orjson.dumps(m)) for m in messages])
    return _put_blob(blobs, orjson.dumps(shell)), 1
