"""What every command shares: the ``--store`` option, opening the store, rendering user errors."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from otel_replay.errors import ReplayError
from otel_replay.store import Store, default_store_path

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        envvar="AGENT_REPLAY_STORE",
        help="Store file (default ./.agent-replay/store.db).",
        show_default=False,
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print JSON for programs instead of tables.")
]

console = Console(highlight=False, soft_wrap=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def print_error(message: object) -> None:
    """One line on stderr. Trace content is escaped: a message holding ``[/]`` is text, not markup."""
    err_console.print(f"[bold red]error:[/] {escape(str(message))}", highlight=False)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a `ReplayError` into one line on stderr and exit code 1 — never a traceback."""
    try:
        yield
    except ReplayError as exc:
        print_error(exc)
        raise typer.Exit(1) from None
    except OSError as exc:
        print_error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else exc)
        raise typer.Exit(1) from None


def open_store(path: Path | None) -> Store:
    return Store.open(path if path is not None else default_store_path())


def print_json(value: Any) -> None:
    import orjson

    sys.stdout.write(
        orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    )
    sys.stdout.write("\n")


def display_path(path: str | None) -> str:
    """A source path relative to the working directory when it is below it."""
    if not path:
        return ""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def short(value: Any, width: int = 60) -> str:
    """One line of a JSON value for a table cell."""
    import orjson

    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def trajectory_table(title: str, columns: tuple[str, ...]) -> Table:
    """A table of trajectories: the id column never wraps, counts are right-aligned."""
    table = Table(title=title)
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in ("steps", "outcome") else "left",
            no_wrap=column == "trajectory id",
            overflow="ellipsis",
            min_width=32 if column == "trajectory id" else None,
        )
    return table
