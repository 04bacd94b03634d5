"""What ``agent-replay import`` does: find the files, import each in one transaction, show the result."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from otel_replay._web import shown_url
from otel_replay.cli._common import (
    console,
    display_path,
    err_console,
    plural,
    print_error,
    printable,
    shown,
    trajectory_table,
)
from otel_replay.errors import NotFoundError, ReplayError, TraceFormatError, quoting_through
from otel_replay.importers import Format, ReadOptions, read_path
from otel_replay.ingest import IngestResult, ingest
from otel_replay.model import Trajectory, is_failure
from otel_replay.redaction import Redactor
from otel_replay.store import Store

_PROGRESS_MIN_BYTES = 4 * 1024 * 1024
#: Seconds between the lines a platform import prints of its pages when stderr is no terminal.
_SAID_SECONDS = 5.0
_SKIP_FILES = {".md", ".txt", ".py", ".yaml", ".yml", ".toml", ".db", ".db-wal", ".db-shm"}
_TABLE_ROWS = 40
_LESS = ("partial", "not-replayable")


@dataclass
class FileResult:
    path: Path | str  # a file, or a platform's address (phoenix://HOST:PORT/PROJECT)
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def expand(paths: list[Path]) -> list[Path]:
    """Files as given; directories become their trace-like files, subfolders included (hidden files
    and folders left out), sorted. Finding none is a mistake worth a message."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
                and p.suffix not in _SKIP_FILES
            )
        else:
            files.append(path)
    if not files:
        shown_paths = ", ".join(str(p) for p in paths)
        raise NotFoundError(
            f"no trace files in {shown_paths} (folders are searched with subfolders)"
        )
    return files


def import_file(
    store: Store, path: Path, fmt: Format, options: ReadOptions, redact: Sequence[str] = ()
) -> FileResult:
    """Import one file in one transaction; on error nothing of it is kept. ``redact``: patterns
    applied to every run before it is stored (`otel_replay.ingest`), and to what an error quotes
    of the file."""
    with quoting_through(Redactor(redact).text):
        return _imported(store, path, read_path(path, fmt, options), options, redact)


def import_platforms(
    db: Store,
    urls: list[str],
    since_ns: int | None,
    outcome_attribute: str | None,
    skip_invalid: bool,
    max_record_bytes: int,
    redact: Sequence[str] = (),
) -> list[FileResult]:
    """Each platform address (``phoenix://HOST:PORT/PROJECT``, ``mlflow://HOST:PORT/EXPERIMENT``)
    in its own transaction: a server that cannot be reached, refuses the key or has no such
    project stops the import with its error, and nothing of that address is kept. What a platform
    says of its pages goes to standard error."""
    from otel_replay.platforms.schemes import platform_of

    results: list[FileResult] = []
    for url in urls:
        options = ReadOptions(
            outcome_attribute=outcome_attribute,
            skip_invalid=skip_invalid,
            max_record_bytes=max_record_bytes,
        )
        try:
            platform = platform_of(url)
            assert platform is not None  # platform_addresses chose them
            with err_console.status(Text(printable(f"reading {url}"))) as status:  # a terminal only
                said = _said(status)
                with quoting_through(Redactor(redact).text):
                    traces = platform.read(url, since_ns, options, said)
                    results.append(_imported(db, url, traces, options, redact))
        except KeyboardInterrupt:
            print_error(f"interrupted while reading {shown_url(url)}: nothing from it was imported")
            raise typer.Exit(1) from None
        except ReplayError as exc:
            print_error(Redactor(redact).text(str(exc)))  # it may quote what the server sent
            imported = sum(1 for r in results if r.rows)
            if imported:  # the error says what failed; this, what the store keeps
                earlier = plural(imported, "earlier address", "earlier addresses")
                note = f"nothing from {url} was imported; {earlier} imported"
                err_console.print(printable(note), markup=False)
            raise typer.Exit(1) from None
    return results


def _said(status: Any) -> Callable[[str], None]:
    """What a platform says of its pages: the terminal's status line, or where standard error is
    no terminal a line of its own every `_SAID_SECONDS` (a quick import says nothing; a long one
    shows in a log that it is moving, and Ctrl-C stops it with the store as it was)."""
    last = [time.monotonic()]

    def said(line: str) -> None:
        if err_console.is_terminal:
            status.update(Text(printable(line)))
        elif time.monotonic() - last[0] >= _SAID_SECONDS:
            last[0] = time.monotonic()
            err_console.print(printable(line), markup=False)

    return said


def _imported(
    store: Store,
    source: Path | str,
    trajectories: Iterator[Trajectory],
    options: ReadOptions,
    redact: Sequence[str] = (),
) -> FileResult:
    result = FileResult(source)
    for ingested in ingest(store, trajectories, redact=redact):
        summary = ingested.summary
        result.rows.append(
            {
                "id": summary.id,
                "steps": summary.n_steps,
                "outcome": summary.outcome,
                "source": str(source),
                "format": summary.format,
                "result": ingested.result.value,
                "final_hash": summary.final_hash,
                "replayability": summary.replayability,
            }
        )
    result.skipped = [str(e) for e in options.report.skipped]
    result.warnings = list(options.report.warnings)
    result.warnings += [
        f"{edited}; it is imported with the hashes of its content as it is now "
        "(--strict refuses it)"
        for edited in options.report.edited
    ]
    missing = options.missing_outcome()
    if missing is not None:
        result.warnings.append(f"{source}: {missing}")
    # what the messages quote of the traces is redacted as the runs are
    scrub = Redactor(redact)
    result.skipped = [scrub.text(line) for line in result.skipped]
    result.warnings = [scrub.text(line) for line in result.warnings]
    return result


def import_files(
    db: Store,
    files: list[Path],
    fmt: Format,
    outcome_attribute: str | None,
    skip_invalid: bool,
    max_record_bytes: int,
    quiet: bool,
    *,
    strict: bool = False,
    redact: Sequence[str] = (),
) -> list[FileResult]:
    """Each file in its own transaction, under one progress bar. A file that cannot be read stops
    the import with its error and a note of what earlier files brought in; with ``skip_invalid``
    it is listed as skipped and the import goes on. ``strict``: a native JSONL run edited after
    export is such an error (with ``skip_invalid``, that run is skipped)."""
    results: list[FileResult] = []
    total = sum(p.stat().st_size for p in files)
    with _progress(total, quiet) as progress:
        task = progress.add_task("importing", total=total)
        done = 0
        for path in files:
            progress.update(task, description=path.name)

            def advance(n: int, base: int = done) -> None:
                progress.update(task, completed=base + n)

            options = ReadOptions(
                outcome_attribute=outcome_attribute,
                skip_invalid=skip_invalid,
                progress=advance,
                max_record_bytes=max_record_bytes,
                strict=strict,
            )
            try:
                results.append(import_file(db, path, fmt, options, redact))
            except TraceFormatError as exc:
                if not skip_invalid:
                    _stop(progress, results, path, exc, redact)
                skipped = [Redactor(redact).text(str(exc))]  # the whole file, listed
                results.append(FileResult(path, skipped=skipped))
            except ReplayError as exc:
                _stop(progress, results, path, exc, redact)
            done += path.stat().st_size
    return results


def _stop(
    progress: Progress,
    results: list[FileResult],
    path: Path,
    exc: ReplayError,
    redact: Sequence[str],
) -> NoReturn:
    """The first file that cannot be imported ends the import, saying what earlier files brought;
    what its error quotes of the file is redacted with ``redact``."""
    progress.stop()
    imported = sum(1 for r in results if r.rows)
    were = "was" if imported == 1 else "were"
    note = f"; {plural(imported, 'earlier file')} {were} imported" if imported else ""
    print_error(Redactor(redact).text(str(exc)))
    err_console.print(printable(f"nothing from {path} was imported{note}"), markup=False)
    raise typer.Exit(1)


def _progress(total: int, quiet: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=quiet or total < _PROGRESS_MIN_BYTES,
    )


def render(results: list[FileResult]) -> None:
    rows = [row for r in results for row in r.rows]
    sources = "file" if all(isinstance(r.path, Path) for r in results) else "source"
    unplayable = [row for row in rows if row["replayability"] != "replayable"]
    # the verdict gets a column only when a run lacks something: the file's name keeps its room
    verdicts = ("replayability",) if unplayable else ()
    table = trajectory_table(
        f"imported {plural(len(rows), 'trajectory', 'trajectories')} from "
        f"{plural(len(results), sources)}",
        ("trajectory id", "steps", "outcome", *verdicts, "source", "result"),
    )
    for row in rows[:_TABLE_ROWS]:
        outcome = "—" if row["outcome"] is None else f"{row['outcome']:g}"
        style = "red" if is_failure(row["outcome"]) else None
        verdict = (row["replayability"] or "?",) if unplayable else ()
        cells = (
            row["id"], str(row["steps"]), outcome, *verdict, display_path(row["source"]),
            row["result"],
        )  # fmt: skip
        table.add_row(*map(shown, cells), style=style)
    if len(rows) > _TABLE_ROWS:
        table.caption = f"… and {len(rows) - _TABLE_ROWS} more (agent-replay list shows all)"
    console.print(table)
    counts = {r.value: sum(1 for row in rows if row["result"] == r.value) for r in IngestResult}
    console.print(", ".join(f"{n} {what}" for what, n in counts.items()))
    if unplayable:
        said = {v: sum(1 for row in unplayable if row["replayability"] == v) for v in _LESS}
        console.print(
            ", ".join(f"{n} {v}" for v, n in said.items() if n)
            + " (agent-replay show ID says what each lacks)",
            highlight=False,
        )
    for r in results:
        if r.skipped:
            err_console.print(
                f"[yellow]skipped {plural(len(r.skipped), 'invalid record')} in "
                f"{shown(str(r.path))}:[/]"
            )
            for reason in r.skipped[:10]:
                err_console.print(printable(f"  {reason}"), markup=False)
            if len(r.skipped) > 10:
                err_console.print(f"  … and {len(r.skipped) - 10} more")
        for warning in r.warnings:
            err_console.print(f"[yellow]warning:[/] {shown(warning)}")
