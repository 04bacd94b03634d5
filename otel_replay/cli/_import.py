"""``agent-replay import``: trace files into the store, one transaction per file.

The options live here; the work (`otel_replay.cli._import_run`) loads when the command runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from otel_replay.cli._common import JsonOption, StoreOption, open_store, print_json, user_errors
from otel_replay.errors import ReplayError
from otel_replay.importers import Format
from otel_replay.importers._options import DEFAULT_MAX_RECORD_BYTES

_BYTE_COUNT = re.compile(r"(\d+)\s*(?:([KMG])(?:i?B)?|B)?", re.IGNORECASE)
_BYTE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_MAX_RECORD_CEILING = 1 << 40  # what ReadOptions accepts: no record that large could be held


def byte_count(text: str, option: str = "--max-record-bytes") -> int:
    """A size option: a number of bytes, or with a K, M or G suffix counting 1024s."""
    match = _BYTE_COUNT.fullmatch(text.strip())
    count = int(match[1]) * _BYTE_UNITS[(match[2] or "").upper()] if match else 0
    if not 0 < count <= _MAX_RECORD_CEILING:
        raise ReplayError(
            f"{option} {text} must be a number of bytes from 1 to 1T (K, M and G count "
            "1024s: 64M, 1G)"
        )
    return count


def import_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Trace files or directories.", show_default=False)
    ],
    format: Annotated[Format, typer.Option("--format", help="Input format.")] = Format.AUTO,
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
            help="Largest record (JSON line or document, protobuf message) held in memory, "
            "decompressed; K, M, G suffixes count 1024s. A larger one is an error (or skipped).",
        ),
    ] = f"{DEFAULT_MAX_RECORD_BYTES >> 20}M",
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Import OTLP JSON / JSON Lines / protobuf files or native JSONL into the store."""
    from otel_replay.cli._import_run import expand, import_files, render

    with user_errors():
        limit = byte_count(max_record_bytes)
        files = expand(paths)
        with open_store(store, write=True, create=True) as db:
            results = import_files(db, files, format, outcome_attribute, skip_invalid, limit, json)
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
