"""Opening a store: its one schema and the migrations that build it, the connection and its PRAGMAs,
waiting for another writer, and SQLite's errors in the user's words.

The schema is `MIGRATIONS`, numbered from 1: a store at ``PRAGMA user_version`` N has had the first N
applied, and `SCHEMA_VERSION` is how many there are. A new store is created at the latest version;
a writing open of an older one applies the rest in one transaction under the write lock, so a store
is at its old version or the latest, never between. A reading open changes nothing, and reads an older
store as it is: a table its version lacks reads as empty (`Connected._has`). A migration is SQL, or a
function of the connection when it recomputes what SQL cannot (version 3's op_keys); one that
changes a table says how a reading open reads the older form. Every migration can run again over a
store that already has it (one whose ``user_version`` was set back): tables and indexes are
created ``IF NOT EXISTS``, a column is added only when missing, and a recomputation makes the
values it made before. A store of a newer version than
`SCHEMA_VERSION` is refused, naming both versions, and left as it is.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from otel_replay.errors import StoreError
from otel_replay.hashing import op_key
from otel_replay.model import Step, Trajectory
from otel_replay.replayable import replayability
from otel_replay.store._blobs import read_inputs, stored_json
from otel_replay.transcript import task

T = TypeVar("T")
_Self = TypeVar("_Self", bound="Connected")

DEFAULT_STORE = Path(".agent-replay") / "store.db"


#: Which op_keys a store of each version holds: from version 3 on, a model call's is the content
#: of its inputs (`otel_replay.hashing.op_key`); before, its inputs with their ids as recorded.
CONTENT_OP_KEYS = 3


def _content_op_keys(db: sqlite3.Connection) -> None:
    """3: a model call's op_key compares its conversation up to a renaming of its ids (response and
    tool-call ids a server makes afresh are correlation data), so each model call's is made again.
    Tools' and other steps' keys, and every Merkle hash, stay as they are. A reading open of an
    older store makes model calls' keys afresh as it reads them (`current_op_key`)."""
    rows = db.execute(
        "SELECT s.trajectory_id, s.idx, s.name, s.op_key, i.data, s.inputs_layout FROM steps s "
        "JOIN blobs i ON i.digest = s.inputs_digest WHERE s.kind = 'llm'"
    ).fetchall()
    changed = []
    for trajectory_id, index, name, stored, data, layout in rows:
        key = op_key("llm", name, read_inputs(db, data, layout))
        if key != stored:
            changed.append((key, trajectory_id, index))
    db.executemany("UPDATE steps SET op_key = ? WHERE trajectory_id = ? AND idx = ?", changed)


def current_op_key(version: int, kind: str, name: str, inputs: dict[str, Any], key: str) -> str:
    """The op_key a step row of a store at ``version`` means today: its own, or (a model call in a
    store older than `CONTENT_OP_KEYS`, read as it is) made afresh from its inputs."""
    if version >= CONTENT_OP_KEYS or kind != "llm":
        return key
    return op_key(kind, name, inputs)


#: From this version on, each run's row holds its replayability verdict (`otel_replay.replayable`);
#: a reading open of an older store reads it as unknown (None).
REPLAYABILITY = 5


def _replayability_column(db: sqlite3.Connection) -> None:
    """5: each run's replayability verdict in its row, so ``list`` shows it without reading a
    step. The runs already stored are judged here, once (a run's steps, one query each). A store
    may have the column already (a newer one whose version was set back), hence the look."""
    _add_column(db, "replayability")
    verdicts = [(replayability(run).verdict.value, run.id) for run in _stored_runs(db)]
    db.executemany("UPDATE trajectories SET replayability = ? WHERE id = ?", verdicts)


#: From this version on, each run's row holds its task (`task_text`); a reading open of an older
#: store reads it as unknown (None).
TASKS = 7
#: How much of a run's task its row keeps (what ``list`` shows and ``--where task~…`` searches).
TASK_LENGTH = 1000


def task_text(run: Trajectory) -> str | None:
    """What the run was asked (`otel_replay.transcript.task`: its first user message), its first
    `TASK_LENGTH` characters, as the run's row keeps it; None when the run recorded none."""
    asked = task(run.steps, run.metadata)
    return None if asked is None else asked[:TASK_LENGTH]


def _task_column(db: sqlite3.Connection) -> None:
    """7: each run's task (its first user message) in its row, so ``list`` and the viewer show it
    and a filter searches it without reading a step. The runs already stored are read here, once."""
    _add_column(db, "task")
    tasks = [(task_text(run), run.id) for run in _stored_runs(db)]
    db.executemany("UPDATE trajectories SET task = ? WHERE id = ?", tasks)


def _add_column(db: sqlite3.Connection, name: str) -> None:
    """The runs' table given the text column ``name``, unless it has it (a newer store whose
    version was set back)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(trajectories)")}
    if name not in columns:
        db.execute(f"ALTER TABLE trajectories ADD COLUMN {name} TEXT")


def _stored_runs(db: sqlite3.Connection) -> Iterator[Trajectory]:
    """Every stored run, its steps and metadata (no span tree), one query for each run's steps."""
    runs = db.execute(
        "SELECT t.id, m.data FROM trajectories t JOIN blobs m ON m.digest = t.metadata_digest"
    ).fetchall()
    for run_id, metadata in runs:
        rows = db.execute(
            "SELECT s.kind, s.name, i.data, s.inputs_layout, o.data, s.status, s.error "
            "FROM steps s JOIN blobs i ON i.digest = s.inputs_digest "
            "JOIN blobs o ON o.digest = s.output_digest WHERE s.trajectory_id = ? ORDER BY s.idx",
            (run_id,),
        )
        steps = [
            Step.from_record(
                {
                    "kind": kind,
                    "name": name,
                    "inputs": read_inputs(db, inputs, layout),
                    "output": stored_json(output, f"a step's output in run {run_id}"),
                    "status": status,
                    "error": error,
                }
            )
            for kind, name, inputs, layout, output, status, error in rows
        ]
        meta = stored_json(metadata, f"the metadata of run {run_id}")
        yield Trajectory.build(run_id, steps, metadata=meta if isinstance(meta, dict) else {})


#: From this version on, each run's row says where its outcome came from (`outcome_source`); a
#: reading open of an older store reads it as unknown (None).
OUTCOME_SOURCES = 6


def outcome_source(outcome: float | None, metadata: Mapping[str, Any]) -> str | None:
    """Where a run's outcome came from: what its metadata says (``outcome_source``: a verifier or
    judge that scored it, an attribution), else, for a run that has one, the trace it was read
    from (``trace``: a root span's score or error status) or its recording (``record``)."""
    if outcome is None:
        return None
    said = metadata.get("outcome_source")
    if isinstance(said, str) and said:
        return said
    made = metadata.get("source")
    if made in _MADE_HERE:  # a run agent-replay made, scored by the verifier it was made with
        return str(made)
    fmt = metadata.get("format")
    return "trace" if isinstance(fmt, str) and fmt != "jsonl" else "record"


#: The ``source`` of the runs agent-replay makes itself (`otel_replay.replay`).
_MADE_HERE = frozenset({"record", "fork", "resume"})  # as `replay._made.MADE_HERE`


def _outcome_source_column(db: sqlite3.Connection) -> None:
    """6: each run's row says where its outcome came from, so ``list`` shows it without reading
    the run. The runs stored before are read once: a run with an outcome got it from its trace or
    its recording (nothing scored a stored run before this version)."""
    _add_column(db, "outcome_source")
    runs = db.execute(
        "SELECT t.id, t.outcome, m.data FROM trajectories t "
        "JOIN blobs m ON m.digest = t.metadata_digest WHERE t.outcome IS NOT NULL"
    ).fetchall()
    sources = []
    for run_id, outcome, metadata in runs:
        meta = stored_json(metadata, f"the metadata of run {run_id}")
        sources.append((outcome_source(outcome, meta if isinstance(meta, dict) else {}), run_id))
    db.executemany("UPDATE trajectories SET outcome_source = ? WHERE id = ?", sources)


#: The schema, one migration per version: migration N takes a store from version N-1 to N.
MIGRATIONS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    # 1: runs, their steps and the blobs they are made of
    """
CREATE TABLE IF NOT EXISTS blobs (       -- a rowid table: new blobs append instead of being
    digest TEXT PRIMARY KEY,             -- inserted at random digest order (measured 1.4x faster)
    data   BLOB NOT NULL                 -- JSON, key order as recorded; digest = its sha256
);
CREATE TABLE IF NOT EXISTS trajectories (
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
CREATE TABLE IF NOT EXISTS steps (
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
CREATE INDEX IF NOT EXISTS steps_by_op_key ON steps(op_key);
""",
    # 2: spans the receiver holds for traces whose root span has not come (`PendingSpans`), and
    # attribution reports kept for their run (`Reports`). Stores of version 1 may have these
    # tables already (they were created when first used), hence IF NOT EXISTS.
    """
CREATE TABLE IF NOT EXISTS pending_spans (
    trace_id              TEXT NOT NULL,
    received_at_unix_nano INTEGER NOT NULL,
    span                  BLOB NOT NULL  -- one decoded span (otel_replay.importers.span_bytes)
);
CREATE INDEX IF NOT EXISTS pending_by_trace ON pending_spans(trace_id);
CREATE TABLE IF NOT EXISTS reports (
    trajectory_id        TEXT NOT NULL,
    config_digest        TEXT NOT NULL,  -- the question asked (otel_replay.attribution.config_digest)
    created_at_unix_nano INTEGER NOT NULL,
    verdict              TEXT,
    report               BLOB NOT NULL,  -- the report's JSON as written (report.dumps_report)
    PRIMARY KEY (trajectory_id, config_digest)
);
CREATE TABLE IF NOT EXISTS report_steps (  -- what blame reads across runs (REPORT_STEP_COLUMNS)
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
""",
    _content_op_keys,
    # 4: the orders and filters the paged views read (`otel_replay.store._query`): a page of the
    # newest 50 of 100,000 runs walks an index instead of sorting every row, and each index holds
    # the other two numbers too, so counting the runs a filter on them admits reads the index
    # alone (measured 3 ms against 141 ms fetching each run's row from a 591 MB store). Only
    # indexes: a reading open of an older store reads the same rows, by scanning.
    """
CREATE INDEX IF NOT EXISTS trajectories_by_start ON trajectories(start_time_unix_nano, id, n_steps, outcome);
CREATE INDEX IF NOT EXISTS trajectories_by_steps ON trajectories(n_steps, id, outcome, start_time_unix_nano);
CREATE INDEX IF NOT EXISTS trajectories_by_outcome ON trajectories(outcome, id, n_steps, start_time_unix_nano);
""",
    _replayability_column,
    _outcome_source_column,
    _task_column,
)
SCHEMA_VERSION = len(MIGRATIONS)

#: The most blob digests `Connected.transaction` remembers as stored between commits (about 12 MB).
_KNOWN_BLOBS = 100_000

#: How long one attempt to take the write lock waits inside SQLite before the store looks again.
BUSY_TIMEOUT_MS = 1000
#: After this long waiting for another writer, the store says so (``on_wait``) and keeps waiting.
WAIT_NOTICE_SECONDS = 3.0


def default_store_path() -> Path:
    """``$AGENT_REPLAY_STORE`` if set, else ``./.agent-replay/store.db``."""
    env = os.environ.get("AGENT_REPLAY_STORE")
    return Path(env) if env else DEFAULT_STORE


def connect(
    path: Path, *, create: bool, read_only: bool, on_wait: Callable[[], None] | None
) -> tuple[sqlite3.Connection, frozenset[str]]:
    """A connection to the store at ``path``, at `SCHEMA_VERSION` unless ``read_only``, and the
    tables the store has. Without ``create`` (and always when ``read_only``) a missing store is a
    `StoreError` saying how to make one; every failure is a `StoreError`."""
    if (read_only or not create) and not path.exists():
        raise StoreError(
            f"there is no store at {path}; `agent-replay import TRACES --store {path}` makes one"
        )
    db: sqlite3.Connection | None = None
    try:
        db = _connect_read_only(path) if read_only else _connect(path)
        version = _patiently(partial(_prepare, db, path, read_only), on_wait)
        if version < SCHEMA_VERSION and not read_only:
            with write_lock(db, on_wait):
                _migrate(db, path)
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return db, frozenset(str(row[0]) for row in rows)
    except (sqlite3.DatabaseError, StoreError) as exc:
        if db is not None:
            db.close()
        if isinstance(exc, StoreError):
            raise
        raise translated(path, exc) or StoreError(f"cannot open store {path}: {exc}") from None


def _statements(script: str) -> Iterator[str]:
    """The SQL statements of ``script``, comments and all."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            yield statement
            statement = ""


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """Apply the migrations the store has not had (inside the write lock). Two processes opening
    the same older (or new) store at once both saw its old version, so it is read again here, under
    the lock, and only the first migrates."""
    version = _check_version(db.execute("PRAGMA user_version").fetchone()[0], path)
    for migration in MIGRATIONS[version:]:
        if callable(migration):
            migration(db)
            continue
        for statement in _statements(migration):
            db.execute(statement)
    if version < SCHEMA_VERSION:
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _check_version(version: int, path: Path) -> int:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has schema version {version}, newer than this agent-replay "
            f"understands ({SCHEMA_VERSION}); upgrade agent-replay"
        )
    return version


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
    _check_version(version, path)
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


@contextmanager
def write_lock(db: sqlite3.Connection, on_wait: Callable[[], None] | None) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, waiting as long as it takes for another writer (the
    ``on_wait`` notice is given once), and rolling back only what is still open: after a full
    disk SQLite has already rolled the transaction back itself."""
    _patiently(lambda: db.execute("BEGIN IMMEDIATE"), on_wait)
    try:
        yield
        db.execute("COMMIT")  # a write refused here (a file-size limit) rolls back too
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    # a new store gets the mode any file the user writes gets (0666 less the umask; SQLite alone
    # would cap it at 0644), and its -wal and -shm files take the store's
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    # write_lock() issues BEGIN/COMMIT; a handle may be used from any thread, one at a time (a
    # recording's tools run on a framework's worker threads: `replay/_durable.py`)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row  # rows are read by column name, never by position
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # then `_patiently` looks again
    return db


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes. A WAL store needs its ``-shm`` file even to be read; where
    that cannot be made (a read-only disk or folder) and no ``-wal`` holds unmerged commits, the
    file alone is the whole store and is opened as immutable."""
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
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
        db = sqlite3.connect(
            uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False
        )
    db.row_factory = sqlite3.Row
    db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return db


_SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL = 8, 10, 13  # the module names them from 3.11
#: The most SQLite writes past a file's end at once: a WAL frame (a 24-byte header and a page of
#: the largest size).
_LARGEST_WRITE = 24 + 65536


def _cannot_write(path: Path) -> bool:
    """A store that exists but whose file or folder this process may not write (a WAL store
    writes beside itself)."""
    return path.exists() and not (
        os.access(path, os.W_OK) and os.access(path.parent.resolve(), os.W_OK)
    )


def translated(path: Path, exc: sqlite3.DatabaseError) -> StoreError | None:
    """SQLite's words for what went wrong, in the user's: the full disk, the read-only file."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code (Python 3.11+)
    if code == _SQLITE_FULL or "disk is full" in str(exc):
        device = os.path.dirname(os.path.abspath(path)) or "."
        return _refused(
            f"no space left on the disk holding {device} (writing {path})",
            "the store is as it was",
            "free some space",
        )
    if code == _SQLITE_IOERR and (limit := _size_limit_reached(path)) is not None:
        return _refused(
            f"the file-size limit of this process (RLIMIT_FSIZE, `ulimit -f`: {limit} bytes) "
            f"stopped the writing of store {path}",
            "the store holds what it held before",
            "raise the limit",
        )
    if code == _SQLITE_READONLY or "readonly" in str(exc) or _cannot_write(path):
        return StoreError(
            f"store {path} is read-only here; commands that add runs (import, record, fork) "
            "need a store they can write"
        )
    return None


def _refused(what: str, kept: str, fix: str) -> StoreError:
    """A write the store refused (SQLite rolled it back): what stopped it, what the store keeps,
    what to do."""
    message = f"{what}; nothing was written, {kept}: {fix} and run the command again"
    return StoreError(message, refused=what, fix=fix)


def _size_limit_reached(path: Path) -> int | None:
    """The process's file-size limit in bytes when one of the store's files has grown to it (SQLite
    says only ``disk I/O error`` for the ``EFBIG`` it met); None when there is no limit or no file
    is near it."""
    try:
        import resource
    except ImportError:  # not POSIX: no such limit
        return None
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    for suffix in ("", "-wal", "-journal"):
        with contextlib.suppress(OSError):
            if os.path.getsize(f"{path}{suffix}") + _LARGEST_WRITE > limit:
                return limit
    return None


def chunks(values: list[str], size: int = 500) -> Iterator[list[str]]:
    """``values`` in chunks SQLite's limit on bound parameters admits."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


class Connected:
    """What every room of `otel_replay.store.Store` shares: one connection to one store file, its
    transactions, and the tables the store has. Use as a context manager, or call `close`."""

    def __init__(
        self,
        connection: sqlite3.Connection,
        path: Path,
        tables: frozenset[str],
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        self._db = connection
        self.path = path
        self._on_wait = on_wait
        self._tables = tables
        self._version = int(connection.execute("PRAGMA user_version").fetchone()[0])
        self._known: set[str] = set()  # blobs known to be stored (see `transaction`)

    def close(self) -> None:
        self._db.close()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _has(self, table: str) -> bool:
        """Whether the store has ``table``: always, but in an older store opened for reading."""
        return table in self._tables

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Commit everything done inside, or nothing if it raises. The blobs known to be stored
        outlive a commit (blobs are never deleted), so a receiver committing request after request
        does not look them up again; a rollback forgets them."""
        try:
            with write_lock(self._db, self._on_wait):
                yield
        except BaseException as exc:
            self._known.clear()
            if not isinstance(exc, sqlite3.DatabaseError):
                raise
            error = translated(self.path, exc)
            if error is None:
                raise  # a damaged store: the caller names the recovery
            raise error from None
        if len(self._known) > _KNOWN_BLOBS:
            self._known.clear()
