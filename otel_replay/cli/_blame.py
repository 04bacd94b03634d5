"""``agent-replay blame``: the steps that cause a fleet's failures, over the stored reports."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from otel_replay._files import write_output
from otel_replay.cli._common import (
    JsonOption,
    StoreOption,
    console,
    err_console,
    open_store,
    plural,
    print_json,
    refuse_store,
    shown,
    user_errors,
)
from otel_replay.errors import NotFoundError, SettingError


def blame_command(
    where: Annotated[
        str | None, typer.Option(help="Only runs matching this (as for attribute --where).")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only runs started since (24h, 2026-03-14).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Also write the table: FILE.parquet or FILE.csv.")
    ] = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Add up the stored attribution reports by step (kind, name, argument names): how often each
    step was the Point of Commitment, its mean attribution, inconclusive runs, repairs."""
    from otel_replay.fleet import Selection, blame

    with user_errors(), open_store(store) as db:
        if out is not None:
            refuse_store(out, db.path)
            if out.suffix not in (".parquet", ".csv"):
                raise SettingError(f"--out {out}: blame writes .parquet or .csv files")
        chosen = Selection(where=where, since=since) if where or since else None
        runs = chosen.runs(db) if chosen is not None else None
        table = blame(db, runs)
        if table.height == 0:
            raise NotFoundError("no stored report to add up: `agent-replay attribute` keeps them")
        if out is not None:
            written = io.BytesIO()  # in memory first: see export's Parquet (a failure said once)
            table.write_parquet(written) if out.suffix == ".parquet" else table.write_csv(written)
            write_output(out, written.getvalue())
            err_console.print(f"wrote {plural(table.height, 'step')} to {shown(str(out))}")
    _show(table.to_dicts(), json)


def _show(rows: list[dict[str, Any]], json: bool) -> None:
    if json:  # orjson writes NaN and the infinities as null
        print_json(rows)
        return
    decided = rows[0]["decided_runs"]
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"blame over {plural(decided, 'decided run')}",
        pad_edge=False,
        caption="PoC: runs whose Point of Commitment it was; share of the decided runs and mean "
        "attribution with 95% intervals; undec.: its runs with an inconclusive verdict",
    )
    table.add_column("step", overflow="fold", min_width=14)
    for column in ("runs", "PoC", "share", "mean", "undec.", "repairs"):
        table.add_column(column)
    for row in rows:
        shape = f"({row['shape']})" if row["shape"] else ""
        share = "" if row["share"] is None else f"{row['share']:.0%}"
        if row["share_low"] is not None:
            share += f" ({row['share_low']:.0%}–{row['share_high']:.0%})"
        mean = "" if row["mean_attribution"] is None else f"{row['mean_attribution']:+.2f}"
        if row["attribution_high"] is not None:
            mean += f" ±{(row['attribution_high'] - row['attribution_low']) / 2:.2f}"
        table.add_row(
            shown(f"{row['kind']} {row['name']}{shape}"),
            str(row["runs"]),
            str(row["commitments"]),
            share,
            mean,
            str(row["inconclusive"]),
            f"{row['repairs']} ({row['repair_success']:.0%})" if row["repairs"] else "",
        )
    console.print(table)
