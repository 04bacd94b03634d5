"""``agent-replay export``: trajectories as native JSONL, as OTLP traces (JSON Lines or protobuf),
every step as a Parquet table, a recorded run as a pytest regression test, or the repaired runs'
contrastive pairs."""

from __future__ import annotations

import io
import shlex
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from otel_replay._files import output_file, write_output
from otel_replay.cli._common import (
    StoreOption,
    err_console,
    load_agent,
    open_store,
    plural,
    refuse_store,
    user_errors,
)
from otel_replay.cli._remembered import sdks_for, spec_given
from otel_replay.errors import NotFoundError, SettingError, UnreplayableError
from otel_replay.export import (
    agent_for_test,
    check_testable,
    pytest_module,
    write_jsonl,
    write_otlp,
)
from otel_replay.store import Store

if TYPE_CHECKING:
    from otel_replay.fleet import Unpaired


class ExportFormat(str, Enum):
    JSONL = "jsonl"
    PARQUET = "parquet"
    PYTEST = "pytest"
    PAIRS = "pairs"
    OTLP_JSON = "otlp-json"
    OTLP_PROTO = "otlp-proto"


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
        str | None,
        typer.Option(
            "--instrument",
            metavar="SDKS",
            help="pytest: as for record (default: the SDKs the run was recorded through; none: "
            "none).",
        ),
    ] = None,
    verifier: Annotated[
        str | None,
        typer.Option(
            "--verifier",
            help="pytest --expect pass: how to score a run (default: the verifier it was scored "
            "with).",
        ),
    ] = None,
    expect: Annotated[
        Expect, typer.Option("--expect", help="pytest: what the test asserts.")
    ] = Expect.IDENTICAL,
    with_verdict: Annotated[
        bool,
        typer.Option(
            "--with-verdict",
            help="otlp-json, otlp-proto: each run's newest kept attribution report as attributes "
            "of its root span and its culprit step's span.",
        ),
    ] = False,
    store: StoreOption = None,
) -> None:
    """Export trajectories (native JSONL or OTLP traces, both re-importable), all their steps
    (Parquet), or one recorded run as a pytest regression test (with its recording beside it)."""
    with user_errors(), open_store(store) as db:
        if out is not None:
            refuse_store(out, db.path)
        _check_verdict(format, with_verdict)
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
        if format in (ExportFormat.OTLP_JSON, ExportFormat.OTLP_PROTO):
            _otlp(db, ids, out, format is ExportFormat.OTLP_PROTO, with_verdict)
            return
        if format is ExportFormat.PARQUET:
            from otel_replay.frame import steps_frame  # polars loads only when asked for

            if out is None:
                raise SettingError("--format parquet needs --out FILE.parquet (or - for stdout)")
            frame = steps_frame(db, ids)
            # into memory first: polars writing a file itself says a failure as its own traceback
            # (``ComputeError: parquet: ... underlying IO error``), output_file names the file
            parquet = io.BytesIO()
            frame.write_parquet(parquet)
            write_output(out, parquet.getvalue())
            err_console.print(
                f"wrote {plural(frame.height, 'step')} of {plural(len(ids), 'trajectory', 'trajectories')} to {out}"
            )
            return
        with output_file(out or Path("-")) as handle:
            count = write_jsonl((db.get(i) for i in ids), handle)
        if out is not None and str(out) != "-":
            err_console.print(f"wrote {plural(count, 'trajectory', 'trajectories')} to {out}")


def _check_verdict(format: ExportFormat, with_verdict: bool) -> None:
    if with_verdict and format not in (ExportFormat.OTLP_JSON, ExportFormat.OTLP_PROTO):
        raise SettingError(
            f"--with-verdict writes attributes on OTLP spans: --format {format.value} has none "
            "(use --format otlp-json or otlp-proto)"
        )


def _otlp(db: Store, ids: list[str], out: Path | None, proto: bool, verdicts: bool) -> None:
    """The runs as OTLP traces: JSON Lines (default: stdout), or protobuf (needs --out)."""
    if proto and out is None:
        raise SettingError("--format otlp-proto needs --out FILE.otlp.pb (or - for stdout)")
    written, reported = write_otlp(db, ids, out or Path("-"), proto=proto, verdicts=verdicts)
    if verdicts and reported < written:
        err_console.print(
            f"{plural(written - reported, 'run')} of {written} had no kept attribution report"
        )
    if out is not None and str(out) != "-":
        err_console.print(f"wrote {plural(written, 'OTLP trace')} to {out}")


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
        raise SettingError(
            "--format pytest exports one run: give its ID, --agent MODULE:FUNCTION and "
            "--out tests/test_NAME.py"
        )
    from otel_replay.replay import recorded_answer, recorded_verifier

    run = db.get(ids[0])
    scorer, answer = None, None
    if expect is Expect.PASS:  # --verifier, else the one the run was scored with
        scorer = spec_given(verifier) or (recorded_verifier(run) if verifier is None else None)
        answer = recorded_answer(run) if verifier is None and scorer is None else None
        if scorer is None and answer is None:
            raise SettingError(
                "--expect pass needs --verifier MODULE:FUNCTION to say what passing is (run "
                f"{run.id} was not scored by one)"
            )
    try:
        check_testable(run, agent, None if "input" in run.metadata else load_agent(agent))
    except UnreplayableError as exc:  # the command names the command that makes such a run
        raise UnreplayableError(
            f"{exc}: agent-replay record --agent {shlex.quote(agent)} --input JSON"
        ) from None
    recording = out.with_suffix(".jsonl")
    folder = out.resolve().parent
    text = pytest_module(
        run_id=run.id,
        recording=recording.name,
        agent=agent_for_test(agent, folder),
        instrument=sdks_for(run, instrument),
        verifier=agent_for_test(scorer, folder) if scorer else None,
        answer=answer,
        expect=expect.value,
    )
    with output_file(recording) as handle:
        write_jsonl([run], handle)
    with output_file(out) as handle:
        handle.write(text.encode())
    err_console.print(f"wrote {out} and the recording it replays, {recording}")


def _pairs(db: Store, runs: set[str] | None, out: Path | None) -> None:
    """Each repaired run's contrastive pair, a JSON line each (``prompt``/``chosen``/``rejected``).
    No pair at all is an error naming the runs and why each has none, and nothing is written."""
    import orjson

    from otel_replay.fleet import pairs, unpaired

    found = list(pairs(db, runs))
    if not found:
        raise NotFoundError(f"no pair to export: {_why_none(unpaired(db, runs), runs is None)}")
    with output_file(out or Path("-")) as handle:
        for pair in found:
            handle.write(orjson.dumps(pair) + b"\n")
    if runs is not None:  # runs asked for by name: say which of them gave no pair
        for missing in unpaired(db, runs):
            err_console.print(Text(f"no pair for {missing.run_id}: {missing.reason}"))
    if out is not None and str(out) != "-":
        err_console.print(f"wrote {plural(len(found), 'pair')} to {out}")


#: How many runs of a reason the error names (the rest are counted).
_NAMED_AT_MOST = 3


def _why_none(missing: list[Unpaired], everything: bool) -> str:
    """Why no run gave a pair: the runs of each reason, the first few named."""
    if not missing:
        return "the store holds no run"
    by_reason: dict[str, list[str]] = {}
    for run in missing:
        by_reason.setdefault(run.reason, []).append(run.run_id)
    said = []
    for reason, runs in by_reason.items():
        named = ", ".join(runs[:_NAMED_AT_MOST]) + (", …" if len(runs) > _NAMED_AT_MOST else "")
        said.append(f"{runs[0] if len(runs) == 1 else f'{len(runs)} runs ({named})'}: {reason}")
    head = "no run in the store has a repair" if everything else "no run asked for has a repair"
    return f"{head}; " + "; ".join(said)
