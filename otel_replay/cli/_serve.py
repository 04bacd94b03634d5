"""``agent-replay serve``: an OTLP/HTTP receiver into the store, until Ctrl-C or SIGTERM.

The options live here; the receiver (`otel_replay.receiver`) loads when the command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from otel_replay.cli._common import (
    RedactCommonOption,
    RedactOption,
    StoreOption,
    console,
    err_console,
    open_store,
    redact_patterns,
    shown,
    stop_signals,
    user_errors,
)
from otel_replay.cli._import import byte_count
from otel_replay.errors import SettingError
from otel_replay.store import default_store_path

if TYPE_CHECKING:
    from otel_replay.ingest import Ingested


def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(help="Port (4318 is OTLP/HTTP's; 0 picks a free one).")
    ] = 4318,
    flush_after: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help="Store a trace whose root span has not come after it has been quiet this long "
            "(a later part merges into it).",
        ),
    ] = 30.0,
    max_body_bytes: Annotated[
        str,
        typer.Option(
            "--max-body-bytes",
            metavar="BYTES",
            help="Largest request body, decompressed; larger ones get 413. K, M, G count 1024s.",
        ),
    ] = "64M",
    outcome_attribute: Annotated[
        str | None,
        typer.Option(
            help="Root-span attribute holding the run's score (1.0 success … 0.0 failure), as "
            "for import."
        ),
    ] = None,
    redact: RedactOption = None,
    redact_common: RedactCommonOption = False,
    store: StoreOption = None,
) -> None:
    """Receive traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip or not) into the
    store: point OTEL_EXPORTER_OTLP_ENDPOINT at it. Runs until Ctrl-C or SIGTERM."""
    from otel_replay.receiver import Receiver

    with user_errors():
        if not flush_after > 0:
            raise SettingError(f"--flush-after {flush_after:g} must be above 0 seconds")
        patterns = redact_patterns(redact, redact_common)
        receiver = Receiver(
            lambda: open_store(store, write=True, create=True),
            host,
            port,
            flush_after=flush_after,
            max_body_bytes=byte_count(max_body_bytes, "--max-body-bytes"),
            on_stored=_stored,
            on_request=_refused,
            on_trouble=_trouble,
        )
        receiver.intake.redacting(patterns)  # before any request is taken
        receiver.intake.scoring(outcome_attribute)
        receiver.start()
    where = store if store is not None else default_store_path()
    with stop_signals() as wait:
        console.print(
            f"receiving OTLP/HTTP traces at {receiver.url}/v1/traces into {shown(str(where))} "
            "(Ctrl-C stops)"
        )
        wait()
    with user_errors():
        stored = receiver.stop()
    waiting = (
        f"; {len(stored.runs)} trace(s) still waiting for a root span stored" if stored.runs else ""
    )
    console.print(f"stopped{waiting}")


def _stored(run: Ingested) -> None:
    summary = run.summary
    outcome = "" if summary.outcome is None else f", outcome {summary.outcome:g}"
    err_console.print(
        f"{run.result.value} {shown(summary.id)} ({summary.n_steps} steps{outcome})",
        highlight=False,
    )


def _trouble(what: str) -> None:
    err_console.print(f"[yellow]{shown(what)}[/]", highlight=False)


def _refused(status: int, what: str) -> None:
    if status != 200:
        err_console.print(f"[yellow]refused a request ({status}):[/] {shown(what)}")
