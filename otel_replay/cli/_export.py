"""``agent-replay export``: trajectories as native JSONL, or every step as a Parquet table."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from otel_replay.cli._common import (
    StoreOption,
    err_console,
    open_store,
    output_file,
    plural,
    refuse_store,
    user_errors,
)
from otel_replay.errors import ReplayError
from otel_replay.export import write_jsonl


class ExportFormat(str, Enum):
    JSONL = "jsonl"
    PARQUET = "parquet"


def export_command(
    trajectory_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="[ID]...", help="Ids or unique prefixes (default: all)."),
    ] = None,
    format: Annotated[
        ExportFormat, typer.Option("--format", help="Output format.")
    ] = ExportFormat.JSONL,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Output file (jsonl default: stdout).")
    ] = None,
    store: StoreOption = None,
) -> None:
    """Export trajectories (native JSONL, re-importable) or all their steps (Parquet)."""
    with user_errors(), open_store(store) as db:
        if out is not None:
            refuse_store(out, db.path)
        ids = (
            [db.resolve(i) for i in trajectory_ids]
            if trajectory_ids
            else [s.id for s in db.summaries()]
        )
        if format is ExportFormat.PARQUET:
            from otel_replay.frame import steps_frame  # polars loads only when asked for

            if out is None:
                raise ReplayError("--format parquet needs --out FILE.parquet (or - for stdout)")
            frame = steps_frame(db, ids)
            with output_file(out) as handle:
                frame.write_parquet(handle)
            err_console.print(
                f"wrote {plural(frame.height, 'step')} of {plural(len(ids), 'trajectory', 'trajectories')} to {out}"
            )
            return
        with output_file(out or Path("-")) as handle:
            count = write_jsonl((db.get(i) for i in ids), handle)
        if out is not None and str(out) != "-":
            err_console.print(f"wrote {plural(count, 'trajectory', 'trajectories')} to {out}")
