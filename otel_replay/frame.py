"""All steps of a store as one polars DataFrame, for people who analyse runs in notebooks."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from otel_replay.store import Store

__all__ = ["STEP_SCHEMA", "steps_frame"]

#: Columns of `steps_frame`. ``inputs`` and ``output`` are JSON text (keys in recorded order) (decode with
#: ``pl.col("output").str.json_decode()`` when the shapes agree).
STEP_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "trajectory_id": pl.String,
    "index": pl.Int64,
    "kind": pl.String,
    "name": pl.String,
    "status": pl.String,
    "error": pl.String,
    "start_time_unix_nano": pl.Int64,
    "end_time_unix_nano": pl.Int64,
    "duration_ms": pl.Float64,
    "span_id": pl.String,
    "parent_span_id": pl.String,
    "resamplable": pl.Boolean,
    "op_key": pl.String,
    "hash": pl.String,
    "outcome": pl.Float64,
    "source": pl.String,
    "inputs": pl.String,
    "output": pl.String,
}


def steps_frame(store: Store, ids: Iterable[str] | None = None) -> pl.DataFrame:
    """One row per step (all trajectories, or those in ``ids``), ordered by trajectory then index."""
    columns: dict[str, list[object]] = {name: [] for name in STEP_SCHEMA}
    for row in store.iter_step_rows(ids):
        start, end = row["start_time_unix_nano"], row["end_time_unix_nano"]
        row["duration_ms"] = (end - start) / 1e6 if start and end and end >= start else None
        row["resamplable"] = bool(row["resamplable"])
        row["inputs"] = bytes(row["inputs"]).decode()
        row["output"] = bytes(row["output"]).decode()
        for name, values in columns.items():
            values.append(row[name])
    return pl.DataFrame(columns, schema=STEP_SCHEMA)
