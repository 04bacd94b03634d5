"""The ``agent-replay`` command: thin Typer commands that render what the library computes.

Exit codes: 0 done; 1 a user mistake or a failed run, said in one line on stderr; 2 a usage error
(an unknown command or option), also one line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer
    from click import exceptions as click_exceptions  # type: ignore[no-redef,import-not-found,unused-ignore]

from otel_replay.cli._commands import EXAMPLE, LazyGroup

__all__ = [
    "app",
    "main",
]

#: The inside API: nothing lent; the CLI is the top floor.
__inside__: list[str] = []

app = typer.Typer(
    name="agent-replay",
    cls=LazyGroup,  # the commands (otel_replay.cli._commands.COMMANDS) are built when they run
    help="Import agent traces from OpenTelemetry; replay, fork and attribute their failures.",
    epilog=f"Example: {EXAMPLE}",
    no_args_is_help=True,
    # rich, as Typer's default, said here on purpose: the help texts are plain sentences, so
    # rich's markup changes nothing in them (tests/test_cli_help.py checks), and markdown would
    # reflow option lists and take a * or _ in a regular expression for emphasis
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,  # traces hold prompts and keys
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from otel_replay import __version__

        print(f"agent-replay {__version__}")
        raise typer.Exit()


@app.callback()
def _everywhere(
    ctx: typer.Context,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="Store file for the command that follows (the same as its own --store).",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="The configuration file (default: agent-replay.toml, or the tool.agent-replay "
            "table of pyproject.toml, in this folder or the nearest one above it; none: none).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Import agent traces from OpenTelemetry; replay, fork and attribute their failures."""
    # what every command shares (rich, the store) loads when one runs, not for `--help`
    from otel_replay.cli._common import OPTIONS_NAMED_OTHERWISE
    from otel_replay.errors import settings_as_options

    # the library names settings as Python callers pass them; here, as this command's options
    ctx.with_resource(settings_as_options(OPTIONS_NAMED_OTHERWISE))
    if store is not None:  # `agent-replay --store S list` as well as `agent-replay list --store S`
        # the commands' own --store reads this variable; it is put back when the command is done
        previous = os.environ.get("AGENT_REPLAY_STORE")
        os.environ["AGENT_REPLAY_STORE"] = str(store)
        ctx.call_on_close(lambda: _put_back("AGENT_REPLAY_STORE", previous))
    from otel_replay.cli._config import configure

    configure(ctx, config)  # the file's settings: the defaults of the command that runs


def _put_back(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def main() -> None:
    """Run the command; a usage error is one line and exit code 2, as every other error is one."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=sys.argv[1:], prog_name="agent-replay", standalone_mode=False)
    except click_exceptions.UsageError as exc:
        path = exc.ctx.command_path if exc.ctx is not None else "agent-replay"
        print_error(f"{exc.format_message()} (see: {path} --help)")
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print_error("aborted")
        sys.exit(1)
    except BrokenPipeError:  # written outside a command's user_errors
        from otel_replay.cli._common import reader_gone

        reader_gone()
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def print_error(message: object) -> None:
    """The commands' one-line error, loaded only when there is one to print (``--help`` needs
    none of rich's console)."""
    from otel_replay.cli._common import print_error as print_it

    print_it(message)
