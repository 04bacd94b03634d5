"""``blame``: which steps cause a fleet's failures, added up over the runs' stored reports.

Steps are named by what they are across runs (kind, name, and for a tool call its argument
names: `otel_replay.fleet.shape`). For each, over each run's newest report:

* ``runs``: failing runs attributed in which the step occurs;
* ``commitments``: runs whose Point of Commitment it was, and ``share`` of the runs with a verdict
  (``culprit``) it accounts for, with a 95 % Wilson interval;
* ``mean_attribution``: its mean estimate over the runs where it was estimated, with a 95 %
  normal interval across runs (a run's estimate appears once per occurrence of the step);
* ``inconclusive``: runs in which it occurs whose verdict is inconclusive. Those runs blame no
  step: their estimates do not enter the mean and they name no commitment;
* ``repairs``: runs whose repair changes it, and their mean success rate.

polars does the adding up, over the rows the store keeps for each report (``report_steps``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import polars as pl

from otel_replay.attribution import wilson
from otel_replay.store import REPORT_STEP_COLUMNS

_SCHEMA = {
    "trajectory_id": pl.Utf8,
    "config_digest": pl.Utf8,
    "idx": pl.Int64,
    "kind": pl.Utf8,
    "name": pl.Utf8,
    "shape": pl.Utf8,
    "verdict": pl.Utf8,
    "attribution": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "commitment": pl.Int64,
    "repaired": pl.Int64,
    "repair_success": pl.Float64,
}
IDENTITY = ["kind", "name", "shape"]


def rows_frame(rows: Iterable[tuple[Any, ...]]) -> pl.DataFrame:
    """The ``report_steps`` rows as a frame."""
    return pl.DataFrame(list(rows), schema=_SCHEMA, orient="row")


def blame(rows: pl.DataFrame | pl.LazyFrame, runs: Iterable[str] | None = None) -> pl.DataFrame:
    """One row per step identity, most blamed first (see the module's notes); ``runs`` limits it
    to those runs."""
    frame = rows.lazy()
    assert list(frame.collect_schema().names()) == list(REPORT_STEP_COLUMNS)
    if runs is not None:
        frame = frame.filter(pl.col("trajectory_id").is_in(list(runs)))
    decided = (
        frame.filter(pl.col("verdict") == "culprit")
        .select(pl.col("trajectory_id").n_unique())
        .collect()
        .item()
    )
    counted = frame.with_columns(
        estimate=pl.when(pl.col("verdict") != "inconclusive").then(pl.col("attribution")),
    )
    table = (
        counted.group_by(IDENTITY)
        .agg(
            runs=pl.col("trajectory_id").n_unique(),
            commitments=pl.col("commitment").sum(),
            mean_attribution=pl.col("estimate").mean(),
            sd=pl.col("estimate").std(),
            estimated=pl.col("estimate").count(),
            inconclusive=pl.col("trajectory_id")
            .filter(pl.col("verdict") == "inconclusive")
            .n_unique(),
            repairs=pl.col("repaired").sum(),
            repair_success=pl.col("repair_success").mean(),
        )
        .collect()
    )
    half = 1.96 * pl.col("sd") / pl.col("estimated").cast(pl.Float64).sqrt()
    table = table.with_columns(
        attribution_low=pl.when(pl.col("estimated") > 1).then(pl.col("mean_attribution") - half),
        attribution_high=pl.when(pl.col("estimated") > 1).then(pl.col("mean_attribution") + half),
    ).drop("sd")
    shares = [_share(c, decided) for c in table["commitments"].to_list()]
    table = table.with_columns(
        share=pl.Series([s[0] for s in shares], dtype=pl.Float64),
        share_low=pl.Series([s[1] for s in shares], dtype=pl.Float64),
        share_high=pl.Series([s[2] for s in shares], dtype=pl.Float64),
        decided_runs=pl.lit(decided, dtype=pl.Int64),
    )
    return table.sort(
        ["commitments", "mean_attribution", "kind", "name", "shape"],
        descending=[True, True, False, False, False],
        nulls_last=True,
    ).select(
        *IDENTITY, "runs", "commitments", "decided_runs", "share", "share_low", "share_high",
        "mean_attribution", "attribution_low", "attribution_high", "estimated", "inconclusive",
        "repairs", "repair_success",
    )  # fmt: skip


def _share(commitments: int, decided: int) -> tuple[float | None, float | None, float | None]:
    if decided == 0:
        return None, None, None
    low, high = wilson(int(commitments), decided)
    share = commitments / decided
    return share, low, high


def finite(value: Any) -> Any:
    """A float for JSON: NaN and infinities are None."""
    return None if isinstance(value, float) and not math.isfinite(value) else value
