"""``agent-replay ui``: the store's runs in the browser, read-only, until Ctrl-C or SIGTERM.

The options live here; the viewer (`otel_replay.viewer`) loads when the command runs.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from otel_replay.cli._common import (
    StoreOption,
    console,
    err_console,
    print_error,
    shown,
    stop_signals,
    user_errors,
)
from otel_replay.store import default_store_path


def ui_command(
    host: Annotated[
        str,
        typer.Option(
            help="Address to listen on (beyond loopback, anyone who reaches it reads the runs)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port (0 picks a free one).")] = 8765,
    store: StoreOption = None,
) -> None:
    """Browse the store in a web browser: the runs (filter, sort), each run's steps and span tree,
    its stored attribution reports, two runs compared. Read-only; opens no browser by itself.
    Runs until Ctrl-C or SIGTERM."""
    from otel_replay.viewer import Viewer

    with user_errors():
        viewer = Viewer(
            store if store is not None else default_store_path(),
            host,
            port,
            on_error=lambda what: print_error(f"a page failed: {what}"),
        )
        viewer.start()
    if not _loopback(host):
        err_console.print(
            f"[yellow]note:[/] listening on {shown(host)}: anyone who can reach this machine on "
            f"port {viewer.port} can read the runs"
        )
    with stop_signals() as wait:
        console.print(f"agent-replay ui: {shown(viewer.url)}/ (Ctrl-C stops it)")
        wait()
    viewer.stop()
    console.print("stopped")


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
