"""``agent-replay import``: trace files into the store, one transaction per file.

The options live here; the work (`otel_replay.cli._import_run`) loads when the command runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from otel_replay.cli._common import (
    JsonOption,
    RedactCommonOption,
    RedactOption,
    StoreOption,
    open_store,
    print_json,
    redact_patterns,
    user_errors,
)
from otel_replay.errors import SettingError
from otel_replay.importers import DEFAULT_MAX_RECORD_BYTES, Format

_BYTE_COUNT = re.compile(r"(\d+)\s*(?:([KMG])(?:i?B)?|B)?", re.IGNORECASE)
_BYTE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_MAX_RECORD_CEILING = 1 << 40  # what ReadOptions accepts: no record that large could be held


def byte_count(text: str, option: str = "--max-record-bytes") -> int:
    """A size option: a number of bytes, or with a K, M or G suffix counting 1024s."""
    match = _BYTE_COUNT.fullmatch(text.strip())
    count = int(match[1]) * _BYTE_UNITS[(match[2] or "").upper()] if match else 0
    if not 0 < count <= _MAX_RECORD_CEILING:
        raise SettingError(
            f"{option} {text} must be a number of bytes from 1 to 1T (K, M and G count "
            "1024s: 64M, 1G)"
        )
    return count


def platform_addresses(paths: list[str], since: str | None) -> tuple[list[str], list[Path]]:
    """The platform addresses among ``paths`` (each checked), and the files and folders."""
    from otel_replay.platforms.schemes import platform_of, sources

    urls = [p for p in paths if platform_of(p) is not None]
    other = next((p for p in paths if "://" in p and platform_of(p) is None), None)
    if other is not None:  # read as a path, its // would fold into one slash
        raise SettingError(
            f"{other} is a URL: import reads trace files and folders, and {sources()}; "
            "agent-replay serve receives traces sent over HTTP"
        )
    for url in urls:
        platform = platform_of(url)
        assert platform is not None
        platform.check(url, True)
    if since is not None and not urls:
        raise SettingError(
            "--since chooses traces on a platform (phoenix://, mlflow://, jaeger://); files "
            "import whole"
        )
    return urls, [Path(p) for p in paths if platform_of(p) is None]


def import_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATHS...",
            help="Trace files or directories, a Phoenix project (phoenix://HOST:PORT/PROJECT), "
            "an MLflow experiment (mlflow://HOST:PORT/EXPERIMENT) or a Jaeger service "
            "(jaeger://HOST:PORT/SERVICE).",
            show_default=False,
        ),
    ],
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            metavar="FORMAT",  # the choices, in the help: as a metavar they break mid-word
            help=f"Input format: {', '.join(f.value for f in Format)}.",
        ),
    ] = Format.AUTO,
    outcome_attribute: Annotated[
        str | None,
        typer.Option(
            help="Root-span attribute holding the run's score (1.0 success … 0.0 failure)."
        ),
    ] = None,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Import what is valid; report what was skipped.")
    ] = False,
    max_record_bytes: Annotated[
        str,
        typer.Option(
            "--max-record-bytes",
            metavar="BYTES",
            help="Largest record (JSON line or document, protobuf message, a platform's page) held "
            "in memory, decompressed; K, M, G suffixes count 1024s. A larger one is an error (or "
            "skipped).",
        ),
    ] = f"{DEFAULT_MAX_RECORD_BYTES >> 20}M",
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Refuse a native JSONL run edited after export (its steps no longer match the "
            "hashes it was written with); without it, such a run imports with a warning.",
        ),
    ] = False,
    since: Annotated[
        str | None,
        typer.Option(
            help="phoenix://, mlflow://, jaeger:// only: the traces with a span started (MLflow: "
            "that ended) since: 2026-03-14T15:00, or an age (24h, 7d); each comes back whole.",
        ),
    ] = None,
    redact: RedactOption = None,
    redact_common: RedactCommonOption = False,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Import trace files (OTLP, Jaeger, Zipkin, MLflow, LangSmith, Datadog, Langfuse, native
    JSONL) into the store; or the traces of a Phoenix project, an MLflow experiment or a Jaeger
    service (phoenix://, mlflow://, jaeger://HOST:PORT/NAME)."""
    from otel_replay.cli._import_run import expand, import_files, import_platforms, render
    from otel_replay.fleet import parse_since

    with user_errors():
        limit = byte_count(max_record_bytes)
        patterns = redact_patterns(redact, redact_common)
        urls, files = platform_addresses(paths, since)
        since_ns = None if since is None else parse_since(since)
        files = expand(files) if files or not urls else []
        with open_store(store, write=True, create=True) as db:
            results = import_platforms(
                db, urls, since_ns, outcome_attribute, skip_invalid, limit, patterns
            )
            results += import_files(
                db, files, format, outcome_attribute, skip_invalid, limit, json, strict=strict,
                redact=patterns,
            )  # fmt: skip
    if json:
        print_json(
            [
                {
                    "path": str(r.path),
                    "trajectories": r.rows,
                    "skipped": r.skipped,
                    "warnings": r.warnings,
                }
                for r in results
            ]
        )
    else:
        render(results)
