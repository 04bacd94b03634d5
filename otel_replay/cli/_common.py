"""What every command shares: the ``--store`` option, opening the store, rendering user errors, the
agent options."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from otel_replay.errors import ReplayError, SettingError
from otel_replay.store import Store, damaged, default_store_path

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        envvar="AGENT_REPLAY_STORE",
        help="Store file (default $AGENT_REPLAY_STORE, else ./.agent-replay/store.db).",
        show_default=False,
        show_envvar=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
OutOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--out",
        metavar="FILE",
        help="The report: FILE.html a page, else JSON (repeatable).",
    ),
]
#: ``--html FILE``, the page's old option (`otel_replay.cli._renamed`): ``--out FILE.html`` now.
HtmlOption = Annotated[Path | None, typer.Option("--html", hidden=True)]

#: The suffixes of an ``--out`` file that is written as an HTML page.
PAGE_SUFFIXES = (".html", ".htm")
InstrumentOption = Annotated[
    str | None,
    typer.Option(
        "--instrument",
        metavar="SDKS",
        help="Record an unmodified agent (called without ctx) through these SDKs (openai, "
        "anthropic) and, with time, uuid, its clock and fresh ids. Default when a run is run "
        "again: as it was recorded (none: none).",
    ),
]
RedactOption = Annotated[
    list[str] | None,
    typer.Option(
        "--redact",
        metavar="REGEX",
        help="Replace matching text with [REDACTED] in everything stored (repeatable); the "
        "patterns are kept with the run.",
    ),
]
RedactCommonOption = Annotated[
    bool,
    typer.Option(
        "--redact-common",
        help="Also redact common secrets: model providers' API keys, bearer tokens and "
        "Authorization values, AWS, GitHub and Slack credentials, private keys.",
    ),
]


def report_files(out: list[Path] | None, html: Path | None) -> tuple[Path | None, Path | None]:
    """The JSON report's file and the HTML page's that ``--out`` names (each file's format is its
    suffix: ``.html`` or ``.htm`` a page, anything else JSON; ``-`` standard output), with the
    page of the old ``--html``."""
    pages = [path for path in out or () if path.suffix.lower() in PAGE_SUFFIXES]
    reports = [path for path in out or () if path.suffix.lower() not in PAGE_SUFFIXES]
    pages += [html] if html is not None else []
    for kind, paths in (("JSON report", reports), ("HTML page", pages)):
        if len(paths) > 1:
            raise SettingError(
                f"--out {paths[0]} and --out {paths[1]}: one {kind} at most (a .html file is "
                "the page, any other the JSON report)"
            )
    return (reports[0] if reports else None), (pages[0] if pages else None)


def redact_patterns(redact: list[str] | None, common: bool) -> list[str]:
    """The patterns ``--redact`` and ``--redact-common`` ask for, each checked (one that does not
    compile is a `ReplayError` naming it)."""
    from otel_replay.redaction import COMMON_SECRET_PATTERNS, Redactor, with_patterns

    patterns = with_patterns(redact or (), COMMON_SECRET_PATTERNS if common else ())
    Redactor(patterns)
    return patterns


#: The settings the library names (`otel_replay.errors.setting`) whose option here is not the
#: setting's name with dashes.
OPTIONS_NAMED_OTHERWISE = {
    "swap_from": "--from",
    "json_out": "--out",
    "budget_unit": "--budget",
    "output": "--value",  # fork's value at a step (`MoveKind.OUTPUT`)
}

# no emoji codes: a path like ``line100.jsonl:100:`` is text, not an emoji
console = Console(highlight=False, soft_wrap=False, emoji=False)
err_console = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

#: Control characters (all but tab and newline, and the C1 range): a trace's strings must not move
#: the cursor, clear the screen or set the window title.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(value: object) -> str:
    """``value`` as text with every control character written as an escape (``\\x1b``)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def shown(value: object) -> str:
    """A string that came from a trace (or a user), for rich markup: printable, markup as text.
    Everything the CLI shows of a trace passes through here."""
    return escape(printable(value))


def print_error(message: object) -> None:
    """One line on stderr, never markup: a message holding ``[/]`` or ``:100:`` is text."""
    err_console.print(Text.assemble(("error:", "bold red"), " ", printable(message)))


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a `ReplayError` into one line on stderr and exit code 1 — never a traceback."""
    try:
        yield
    except ReplayError as exc:
        print_error(exc)
        raise typer.Exit(1) from None
    except BrokenPipeError as exc:
        if exc.filename is not None:  # a named file's reader (a FIFO): that is an error to say
            print_error(f"{exc.strerror or exc}: {exc.filename}")
        else:
            reader_gone()
        raise typer.Exit(1) from None
    except OSError as exc:
        print_error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else exc)
        raise typer.Exit(1) from None
    except sqlite3.DatabaseError as exc:  # opened fine, then a page or a table turned out bad
        print_error(damaged(str(exc)))  # the store's one message for it, as for a blob not JSON
        raise typer.Exit(1) from None


def reader_gone() -> None:
    """Standard output's reader left (``agent-replay list --json | head``): what it did not read
    is not an error to report. Nothing more goes there, Python's own flush at exit included."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def open_store(path: Path | None, *, write: bool = False, create: bool = False) -> Store:
    """The store at ``path`` (or the default). Commands that only read open it read-only (a store
    on a read-only disk can still be browsed); only commands that add runs (``import``,
    ``record``) create one, and the others say there is none."""
    path = path if path is not None else default_store_path()

    def waiting() -> None:
        err_console.print(
            Text(
                f"waiting for another import to finish (store {printable(path)} is being written)…"
            )
        )

    return Store.open(path, create=create, read_only=not write, on_wait=waiting)


def refuse_store(path: Path, store: Path) -> None:
    """An output path that is the store being read (or its WAL files) would destroy it: refuse."""
    if str(path) == "-":
        return
    target = path.resolve()
    if target in {store.resolve(), Path(f"{store.resolve()}-wal"), Path(f"{store.resolve()}-shm")}:
        raise SettingError(f"{path} is the store being read ({store}); write the output elsewhere")


def load_agent(spec: str, instrument: str | None = None) -> Any:
    """The ``--agent`` function, with ``--instrument``'s SDKs patched first."""
    from otel_replay.resamplers import load_object

    if instrument:
        from otel_replay.replay import instrument as patch

        patch(*(name.strip() for name in instrument.split(",") if name.strip()))
    return load_object(spec, "--agent")


def print_json(value: Any) -> None:
    import orjson

    sys.stdout.write(
        orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    )
    sys.stdout.write("\n")


def display_path(path: str | None, spare: int = 0) -> str:
    """A source path relative to the working directory when it is below it, cut from the left so
    the file's own name always shows: to what a trajectory table leaves it on this terminal, less
    ``spare`` characters for the table's other columns. A source that names a URL (a receiver's
    ``otlp-http http://…``, a ``phoenix://`` project) is no path and is shown as it is: `Path` would
    fold its ``//`` into one slash."""
    width = max(8, console.width - 66 - spare)
    if not path:
        return ""
    shown_path = path
    if "://" not in path:
        with suppress(ValueError):
            shown_path = str(Path(path).resolve().relative_to(Path.cwd()))
    return shown_path if len(shown_path) <= width else "…" + shown_path[-(width - 1) :]


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 step``, ``2 steps`` (``many``: the plural when it is not ``word + "s"``)."""
    return f"{count} {word if count == 1 else many or word + 's'}"


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


@contextmanager
def stop_signals() -> Iterator[Callable[[], None]]:
    """Ctrl-C and SIGTERM (the way service managers stop a process) taken over from here on;
    yields the wait for one of them. Entered before a server says where it listens, so a signal
    sent as soon as that line is read stops it as Ctrl-C does, never by SIGTERM's default."""
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())

    def wait() -> None:
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass

    try:
        yield wait
    finally:
        signal.signal(signal.SIGTERM, previous)
