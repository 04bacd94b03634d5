"""``blame``: which steps cause a fleet's failures, added up over the runs' stored reports.

Steps are named by what they are across runs (kind, name, and for a tool call its argument
names: `otel_replay.fleet.shape`). For each, over each run's newest report:

* ``runs``: failing runs attributed in which the step occurs;
* ``commitments``: runs whose Point of Commitment it was, and ``share`` of the runs with a verdict
  (``culprit``) it accounts for, with a 95 % Wilson interval;
* ``mean_attribution``: its mean estimate over the runs where it was estimated, with a 95 %
  normal interval across runs (a run's estimate appears once per occurrence of the step);
* ``inconclusive``: runs in which it occurs whose verdict is inconclusive (or no-evidence: too
  many of their rollouts could not be served or crashed; or cannot-tell: it would rest on steps
  resampling could not vary). Those runs blame no step: their
  estimates do not enter the mean and they name no commitment;
* ``repairs``: runs whose repair changes it, and their mean success rate.

The store makes one pass over the rows it keeps with each report (``report_steps``), summing per
step and verdict (`otel_replay.store.Store.blame_sums`; a run has one verdict, so its counts add up
across verdicts), and polars turns the sums into the table. Reading the rows out instead, one Python
object per value, cost 4 s of the 5 a 100,000-report store allows.
"""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from otel_replay.attribution import wilson
from otel_replay.store import Store

IDENTITY = ["kind", "name", "shape"]
_SUMS = {
    "kind": pl.Utf8, "name": pl.Utf8, "shape": pl.Utf8, "verdict": pl.Utf8, "runs": pl.Int64,
    "commitments": pl.Int64, "total": pl.Float64, "squares": pl.Float64, "estimated": pl.Int64,
    "repairs": pl.Int64, "repair_total": pl.Float64, "repair_count": pl.Int64,
}  # fmt: skip
COLUMNS = [
    *IDENTITY, "runs", "commitments", "decided_runs", "share", "share_low", "share_high",
    "mean_attribution", "attribution_low", "attribution_high", "estimated", "inconclusive",
    "repairs", "repair_success",
]  # fmt: skip


def blame(store: Store, runs: Collection[str] | None = None) -> pl.DataFrame:
    """One row per step identity, most blamed first (see the module's notes); ``runs`` limits it
    to those runs."""
    sums = pl.DataFrame(store.blame_sums(runs), schema=_SUMS, orient="row")
    decided = store.decided_runs(runs)
    # an inconclusive run's estimates blame nothing, nor do those of a run without evidence or
    # of one whose verdict would rest on steps that were not varied
    undecided = pl.col("verdict").is_in(["inconclusive", "no-evidence", "cannot-tell"])
    counted = sums.with_columns(
        pl.when(undecided).then(0.0).otherwise(pl.col(c)).alias(c) for c in ("total", "squares")
    ).with_columns(
        estimated=pl.when(undecided).then(0).otherwise("estimated"),
        undecided=pl.when(undecided).then("runs").otherwise(0),
    )
    table = counted.group_by(IDENTITY).agg(
        pl.col("runs", "commitments", "total", "squares", "estimated", "repairs").sum(),
        pl.col("repair_total", "repair_count").sum(),
        inconclusive=pl.col("undecided").sum(),
    )
    n = pl.col("estimated").cast(pl.Float64)
    mean = pl.col("total") / n
    variance = (pl.col("squares") - n * mean * mean) / (n - 1)
    half = 1.96 * variance.clip(lower_bound=0.0).sqrt() / n.sqrt()
    table = table.with_columns(
        mean_attribution=pl.when(n > 0).then(mean),
        attribution_low=pl.when(n > 1).then(mean - half),
        attribution_high=pl.when(n > 1).then(mean + half),
        repair_success=pl.when(pl.col("repair_count") > 0).then(
            pl.col("repair_total") / pl.col("repair_count")
        ),
        decided_runs=pl.lit(decided, dtype=pl.Int64),
    )
    shares = [_share(c, decided) for c in table["commitments"].to_list()]
    table = table.with_columns(
        share=pl.Series([s[0] for s in shares], dtype=pl.Float64),
        share_low=pl.Series([s[1] for s in shares], dtype=pl.Float64),
        share_high=pl.Series([s[2] for s in shares], dtype=pl.Float64),
    )
    return table.sort(
        ["commitments", "mean_attribution", "kind", "name", "shape"],
        descending=[True, True, False, False, False],
        nulls_last=True,
    ).select(COLUMNS)


def _share(commitments: int, decided: int) -> tuple[float | None, float | None, float | None]:
    if decided == 0:
        return None, None, None
    low, high = wilson(int(commitments), decided)
    return commitments / decided, low, high
