"""``agent-replay export``: trajectories as native JSONL, every step as a Parquet table, a recorded
run as a pytest regression test, or the repaired runs' contrastive pairs."""

from __future__ import annotations

import os
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
from otel_replay.export import pytest_module, write_jsonl
from otel_replay.store import Store


class ExportFormat(str, Enum):
    JSONL = "jsonl"
    PARQUET = "parquet"
    PYTEST = "pytest"
    PAIRS = "pairs"


class Expect(str, Enum):
    IDENTICAL = "identical"  # it replays step for step, to the recorded answer
    PASS = "pass"  # tools from the record, the model live: the verifier now scores it a success


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
    agent: Annotated[
        str | None, typer.Option("--agent", help="pytest: the agent the test re-runs.")
    ] = None,
    instrument: Annotated[
        str | None, typer.Option("--instrument", metavar="SDKS", help="pytest: as for record.")
    ] = None,
    verifier: Annotated[
        str | None, typer.Option("--verifier", help="pytest --expect pass: how to score a run.")
    ] = None,
    expect: Annotated[
        Expect, typer.Option("--expect", help="pytest: what the test asserts.")
    ] = Expect.IDENTICAL,
    store: StoreOption = None,
) -> None:
    """Export trajectories (native JSONL, re-importable), all their steps (Parquet), or one
    recorded run as a pytest regression test (with its recording beside it)."""
    with user_errors(), open_store(store) as db:
        if out is not None:
            refuse_store(out, db.path)
        ids = (
            [db.resolve(i) for i in trajectory_ids]
            if trajectory_ids
            else [s.id for s in db.summaries()]
        )
        if format is ExportFormat.PYTEST:
            _pytest(db, ids, out, agent, instrument, verifier, expect)
            return
        if format is ExportFormat.PAIRS:
            _pairs(db, set(ids) if trajectory_ids else None, out)
            return
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


def _pytest(
    db: Store,
    ids: list[str],
    out: Path | None,
    agent: str | None,
    instrument: str | None,
    verifier: str | None,
    expect: Expect,
) -> None:
    """The test file at ``out`` and the run's native JSONL beside it (``out`` with ``.jsonl``)."""
    if len(ids) != 1 or out is None or str(out) == "-" or agent is None:
        raise ReplayError(
            "--format pytest exports one run: give its ID, --agent MODULE:FUNCTION and "
            "--out tests/test_NAME.py"
        )
    if expect is Expect.PASS and verifier is None:
        raise ReplayError("--expect pass needs --verifier MODULE:FUNCTION to say what passing is")
    run = db.get(ids[0])
    recording = out.with_suffix(".jsonl")
    folder = out.resolve().parent
    text = pytest_module(
        run_id=run.id,
        recording=recording.name,
        agent=_beside(agent, folder),
        instrument=[name.strip() for name in (instrument or "").split(",") if name.strip()],
        verifier=_beside(verifier, folder) if verifier else None,
        expect=expect.value,
    )
    with output_file(recording) as handle:
        write_jsonl([run], handle)
    with output_file(out) as handle:
        handle.write(text.encode())
    err_console.print(f"wrote {out} and the recording it replays, {recording}")


def _pairs(db: Store, runs: set[str] | None, out: Path | None) -> None:
    """Each repaired run's contrastive pair, a JSON line each (``prompt``/``chosen``/``rejected``)."""
    import orjson

    from otel_replay.fleet import pairs

    count = 0
    with output_file(out or Path("-")) as handle:
        for pair in pairs(db, runs):
            handle.write(orjson.dumps(pair) + b"\n")
            count += 1
    if count == 0:
        err_console.print("no stored report found a repair: `attribute --repair` searches one")
    elif out is not None and str(out) != "-":
        err_console.print(f"wrote {plural(count, 'pair')} to {out}")


def _beside(spec: str, folder: Path) -> str:
    """A ``file.py:function`` spec relative to the test's folder (module specs as they are)."""
    module, _, name = spec.rpartition(":")
    if not module.endswith(".py"):
        return spec
    return f"{os.path.relpath(Path(module).resolve(), folder)}:{name}"
