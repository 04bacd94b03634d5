"""The runs: trajectories, their steps, and the content-addressed blobs they are made of.

Step inputs, outputs, metadata and the span tree live in ``blobs`` keyed by the sha256 of their JSON,
so the history an agent resends on every model call is stored once (inputs with ``messages`` keep each
message as its own blob, so a history that grows by one message per turn costs one message per turn).
A trajectory's rows are written in the same transaction as its blobs: a killed import leaves the store
with whole trajectories only.

This room holds no policy: `Trajectories.put` writes what it is given (replacing a stored run of the
same id), and `content_digest` says what "the same content" means. Whether an arriving run is added,
unchanged, merged or replaced is decided one floor up, in `otel_replay.ingest`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from otel_replay.errors import CanonicalJSONError, NotFoundError, StoreError
from otel_replay.hashing import canonical_json, check_json_value, digest
from otel_replay.model import SpanNode, Step, Trajectory
from otel_replay.replayable import replayability
from otel_replay.store._blobs import read_inputs, stored_json, stored_json_bytes
from otel_replay.store._connection import (
    CONTENT_OP_KEYS,
    OUTCOME_SOURCES,
    REPLAYABILITY,
    TASKS,
    Connected,
    chunks,
    current_op_key,
    outcome_source,
    task_text,
)
from otel_replay.store._query import Order, check_page, parse_filter, parse_sort, regexp


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
    #: the run's replayability verdict (`otel_replay.replayable`); None in a store older than it
    replayability: str | None = None
    #: where the outcome came from (`otel_replay.store._connection.outcome_source`): ``trace``,
    #: ``record``, ``verifier:…``, ``judge:…``, ``attribution:…``; None without an outcome, or in
    #: a store older than it
    outcome_source: str | None = None
    #: what the run was asked, its first user message (`otel_replay.store._connection.task_text`);
    #: None when it recorded none, or in a store older than it
    task: str | None = None


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
        replayability=replayability(trajectory).verdict.value,
        outcome_source=outcome_source(trajectory.outcome, trajectory.metadata),
        task=task_text(trajectory),
    )


_SUMMARY_COLUMNS = (
    "id, n_steps, outcome, final_hash, source, format, start_time_unix_nano, content_digest, "
    "replayability, outcome_source, task"
)
#: The columns a store gained after its first version, each with the version that added it: a
#: store older than that (read as it is) gives NULL for it.
_LATER_COLUMNS = {
    "replayability": REPLAYABILITY,
    "outcome_source": OUTCOME_SOURCES,
    "task": TASKS,
}


def _columns_of(version: int) -> str:
    """The summary columns as a store at ``version`` holds them."""
    return ", ".join(
        f"NULL AS {name}" if version < _LATER_COLUMNS.get(name, 0) else name
        for name in (part.strip() for part in _SUMMARY_COLUMNS.split(","))
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
_RESULT_QUERY = (
    "SELECT s.op_key, s.trajectory_id, o.data AS output, s.status, s.error FROM steps s "
    "JOIN blobs o ON o.digest = s.output_digest"
)


class RecordedResult(NamedTuple):
    """One recorded result of an operation: what it returned (or its error), and in which run."""

    output: Any
    status: str
    error: str | None
    run: str


def _result(row: sqlite3.Row) -> RecordedResult:
    output = stored_json(row["output"], f"a step's output in run {row['trajectory_id']}")
    return RecordedResult(output, row["status"], row["error"], row["trajectory_id"])


class Trajectories(Connected):
    """The runs of a store (`otel_replay.store.Store` is one, with the other rooms)."""

    @property
    def _columns(self) -> str:
        """A run's summary columns as this store holds them."""
        return _columns_of(self._version)

    @property
    def _runs_table(self) -> str:
        """What a filter reads the runs from: the table, in a store older than `REPLAYABILITY`
        or `OUTCOME_SOURCES` or `TASKS` (read as it is) with what it lacks as unknown, so
        ``replayability = partial`` admits none."""
        lacking = [
            f"NULL AS {name}" for name, since in _LATER_COLUMNS.items() if self._version < since
        ]
        if not lacking:
            return "trajectories"
        return f"(SELECT *, {', '.join(lacking)} FROM trajectories) AS trajectories"

    # --- writing -----------------------------------------------------------------------------------

    def put(self, trajectory: Trajectory) -> TrajectorySummary:
        """Store ``trajectory``, replacing a stored run of the same id; a run whose content is
        already stored (`content_digest`) is left as it is. Inside `transaction`, or in one of its own.
        """
        if not self._db.in_transaction:
            with self.transaction():
                return self.put(trajectory)
        try:
            row, steps, blobs = self._rows(trajectory)
        except TypeError:  # orjson: what JSON cannot hold (an integer beyond 64 bits)
            _unstorable(trajectory)
            raise
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

    def set_outcome(self, trajectory_id: str, outcome: float, source: str) -> TrajectorySummary:
        """Give the stored run ``trajectory_id`` the outcome ``outcome``, which ``source`` gave
        (``verifier:…``, ``judge:…``, ``attribution:…``), kept in its metadata as
        ``outcome_source``. Its steps, hashes and identity stay as they are (an outcome is in none
        of them); its content digest takes the outcome in, as a stored run's does. Inside
        `transaction`, or in one of its own."""
        if not self._db.in_transaction:
            with self.transaction():
                return self.set_outcome(trajectory_id, outcome, source)
        if self._version < OUTCOME_SOURCES:
            raise StoreError(f"{self.path} is opened for reading: an outcome cannot be stored")
        row = self._db.execute(
            "SELECT final_hash, metadata_digest, spans_digest FROM trajectories WHERE id = ?",
            (trajectory_id,),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no trajectory {trajectory_id!r} in {self.path}")
        meta = self._load(row["metadata_digest"])
        meta = {**(meta if isinstance(meta, dict) else {}), "outcome_source": source}
        blobs: dict[str, bytes] = {}
        metadata_digest = _put_blob(blobs, orjson.dumps(meta))
        self._db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", list(blobs.items()))
        content = digest(canonical_json([row["final_hash"], outcome, row["spans_digest"]]))
        self._db.execute(
            "UPDATE trajectories SET outcome = ?, outcome_source = ?, content_digest = ?, "
            "metadata_digest = ? WHERE id = ?",
            (outcome, source, content, metadata_digest, trajectory_id),
        )
        summary = self.summary(trajectory_id)
        assert summary is not None
        return summary

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
        last_messages: list[tuple[Any, str]] = []
        for step in trajectory.steps:
            inputs_digest, layout = _inputs_blob(blobs, step.inputs, last_messages)
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
            f"SELECT {self._columns} FROM trajectories WHERE id = ?", (trajectory_id,)
        ).fetchone()
        return None if row is None else _summary(row)

    def summaries(self) -> list[TrajectorySummary]:
        """Every trajectory, oldest run first (for callers that need all of them: a view shows a
        page of `runs`)."""
        rows = self._db.execute(
            f"SELECT {self._columns} FROM trajectories "
            "ORDER BY start_time_unix_nano IS NULL, start_time_unix_nano, id"
        )
        return [_summary(row) for row in rows]

    def runs(
        self,
        where: str | None = None,
        sort: str | None = None,
        *,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        after: str | None = None,
    ) -> Iterator[TrajectorySummary]:
        """The runs ``where`` admits (the filter language of `otel_replay.store._query`), in the
        order ``sort`` names (default newest first), as the rows are read: ``limit`` of them
        (None: all) from ``offset`` on, or after the run ``after`` (an id or unique prefix) in that
        order. ``search``: words the id or source contains (a search box's, never read as
        conditions). A bad filter or order is a `QueryError` before anything is read."""
        chosen, order = parse_filter(where, search), parse_sort(sort)
        self._db.create_function("regexp", 2, regexp, deterministic=True)
        check_page(limit, offset)
        condition, params = chosen.sql, list(chosen.params)
        if after is not None:
            cursor, cursor_params = self._after(order, self.resolve(after))
            condition, params = f"({condition}) AND ({cursor})", params + cursor_params
        query = (
            f"SELECT {self._columns} FROM {self._runs_table} WHERE {condition} ORDER BY {order.sql}"
        )
        if limit is not None or offset:
            query += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None else limit, offset]
        return (_summary(row) for row in self._db.execute(query, params))

    def count_runs(self, where: str | None = None, *, search: str | None = None) -> int:
        """How many runs ``where`` (and ``search``) admit, all without: the "of N" of a page."""
        chosen = parse_filter(where, search)
        self._db.create_function("regexp", 2, regexp, deterministic=True)
        row = self._db.execute(
            f"SELECT count(*) FROM {self._runs_table} WHERE {chosen.sql}", chosen.params
        )
        return int(row.fetchone()[0])

    def _after(self, order: Order, run_id: str) -> tuple[str, list[object]]:
        """The condition "comes after run ``run_id`` in ``order``" (NULLs sort as the smallest,
        so they come first going up and last going down)."""
        if order.column == "id":
            return ("id < ?" if order.descending else "id > ?"), [run_id]
        value = self._db.execute(
            f"SELECT {order.column} FROM trajectories WHERE id = ?", (run_id,)
        ).fetchone()[0]
        column, beyond = order.column, "<" if order.descending else ">"
        past = "id < ?" if order.descending else "id > ?"
        if value is None:
            if order.descending:
                return f"{column} IS NULL AND {past}", [run_id]
            return f"{column} IS NOT NULL OR {past}", [run_id]
        nulls = f" OR {column} IS NULL" if order.descending else ""
        return (
            f"{column} {beyond} ? OR ({column} = ? AND {past}){nulls}",
            [value, value, run_id],
        )

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
                layout = record.pop("inputs_layout")
                if layout == 1 or self._version < CONTENT_OP_KEYS:
                    inputs = read_inputs(self._db, record["inputs"], layout)
                    record["op_key"] = current_op_key(
                        self._version, record["kind"], record["name"], inputs, record["op_key"]
                    )
                    record["inputs"] = orjson.dumps(inputs) if layout == 1 else record["inputs"]
                else:  # handed on as stored: checked to be JSON as every read of a blob is
                    record["inputs"] = stored_json_bytes(record["inputs"], "a step's inputs")
                record["output"] = stored_json_bytes(record["output"], "a step's output")
                yield record

    def results_of(self, op_keys: Iterable[str]) -> dict[str, list[tuple[Any, str, str | None]]]:
        """Every recorded result of the operations ``op_keys`` name, across all stored runs:
        ``op_key → [(output, status, error), ...]``, one entry per recorded step, in store order."""
        return {
            key: [(r.output, r.status, r.error) for r in results]
            for key, results in self.recorded_results(op_keys).items()
        }

    def recorded_results(self, op_keys: Iterable[str]) -> dict[str, list[RecordedResult]]:
        """`results_of` with the run each result was recorded in: one indexed query per key
        (``steps_by_op_key``), results in store order (by run id, then step index)."""
        found: dict[str, list[RecordedResult]] = {}
        for key in dict.fromkeys(op_keys):
            rows = self._db.execute(
                f"{_RESULT_QUERY} WHERE s.op_key = ? ORDER BY s.trajectory_id, s.idx", (key,)
            )
            found[key] = [_result(row) for row in rows]
        return found

    def tool_results(self, names: Collection[str]) -> dict[str, list[RecordedResult]]:
        """Every recorded result of a tool step named one of ``names``, keyed by op_key, each
        key's results in the order `recorded_results` gives them (one scan of the steps: they are
        not indexed by name)."""
        found: dict[str, list[RecordedResult]] = {}
        for chunk in chunks(sorted(names)):
            rows = self._db.execute(
                f"{_RESULT_QUERY} WHERE s.kind = 'tool' AND s.name IN "
                f"({','.join('?' * len(chunk))}) ORDER BY s.trajectory_id, s.idx",
                chunk,
            )
            for row in rows:
                found.setdefault(row["op_key"], []).append(_result(row))
        return found

    def stored(self, ids: Collection[str]) -> set[str]:
        """Which of ``ids`` are stored runs."""
        found: set[str] = set()
        for chunk in chunks(list(ids)):
            rows = self._db.execute(
                f"SELECT id FROM trajectories WHERE id IN ({','.join('?' * len(chunk))})", chunk
            )
            found.update(str(row["id"]) for row in rows)
        return found

    def counts(self) -> dict[str, int]:
        """Row counts, for tests and ``list`` footers."""
        return {
            table: self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("trajectories", "steps", "blobs")
        }

    def _step_record(self, row: sqlite3.Row) -> dict[str, Any]:
        record = dict(row)
        record["inputs"] = read_inputs(self._db, record["inputs"], record.pop("inputs_layout"))
        record["output"] = stored_json(record["output"], "a step's output")
        record["resamplable"] = bool(record["resamplable"])
        record["op_key"] = current_op_key(
            self._version, record["kind"], record["name"], record["inputs"], record["op_key"]
        )
        return record

    def _load(self, blob_digest: str) -> Any:
        row = self._db.execute("SELECT data FROM blobs WHERE digest = ?", (blob_digest,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path} is missing blob {blob_digest}")
        return stored_json(row["data"], f"blob {blob_digest}")


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


def _inputs_blob(
    blobs: dict[str, bytes], inputs: dict[str, Any], last: list[tuple[Any, str]]
) -> tuple[str, int]:
    """Inputs with ``messages`` store each message as its own blob (layout 1); others whole (0).

    ``last`` holds the previous such step's messages with their digests and is replaced by this
    step's. An agent resends its history on every call, so message ``i`` is most often what message
    ``i`` was a step ago; seeing that (`_same`) is many times cheaper than serialising and hashing
    it again, which made storing a run's messages quadratic in its length.
    """
    messages = inputs.get("messages")
    if not isinstance(messages, list) or len(messages) < 2:
        return _put_blob(blobs, orjson.dumps(inputs)), 0
    seen = len(last)
    current: list[tuple[Any, str]] = []
    for i, message in enumerate(messages):
        if i < seen and _same(last[i][0], message):
            current.append((message, last[i][1]))  # its blob is queued already, by that step
        else:
            current.append((message, _put_blob(blobs, orjson.dumps(message))))
    last[:] = current
    shell = dict(inputs, messages=[key for _, key in current])
    return _put_blob(blobs, orjson.dumps(shell)), 1


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` serialise to the same JSON bytes: ``==`` and more, since ``1``,
    ``1.0`` and ``True`` are equal, ``0.0`` and ``-0.0`` too, and dicts are equal in any key order
    (a blob keeps the order it was recorded in)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return len(a) == len(b) and all(
            ka == kb and _same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if kind is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if kind is float:
        return bool(a == b) and repr(a) == repr(b)
    return bool(a == b)


def _unstorable(trajectory: Trajectory) -> None:
    """Raise `CanonicalJSONError` naming the run and the value of it JSON cannot hold (the importers
    refuse such values where they read them: this is the store's own guard)."""
    try:
        check_json_value(trajectory.metadata, "metadata")
        for step in trajectory.steps:
            check_json_value(step.output, f"step {step.index} output")
            check_json_value(step.inputs, f"step {step.index} inputs")
    except CanonicalJSONError as exc:
        raise CanonicalJSONError(f"run {trajectory.id} cannot be stored: {exc}") from None
