"""Help a person can scan (issue 41): every command's options in panels named the same on every
command, in one order; no option shown as a Python type (``<bool>`` on a flag that takes no value,
``<str>``); each command's ``--help`` measured at 80 columns, ``attribute``'s under 120 lines."""

from __future__ import annotations

import re

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from otel_replay.cli import app
from otel_replay.cli._commands import COMMANDS, LazyGroup
from otel_replay.cli._panels import PANELS, panel

try:
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

NARROW = {"COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}

# What Typer shows for an option or argument it names by its Python type.
PYTHON_TYPE = re.compile(r"<(bool|str|int|float|path|list\[[a-z]+\]|[a-z]+\|[a-z|-]+)>")

#: The most lines a command's --help may take at 80 columns.
MOST_LINES = 120


def _commands() -> list[tuple[str, click.Command]]:
    group = get_command(app)
    assert isinstance(group, LazyGroup)
    found: list[tuple[str, click.Command]] = [("", group)]
    for name in COMMANDS:
        command = group.commands[name]
        found.append((name, command))
        found += [
            (f"{name} {sub}", inner) for sub, inner in getattr(command, "commands", {}).items()
        ]
    return found


COMMAND_PATHS = [path for path, _ in _commands()]


def _help(path: str) -> str:
    result = CliRunner().invoke(app, [*path.split(), "--help"], env=NARROW)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: p or "agent-replay")
def test_help_at_80_columns_shows_no_python_type_and_fits(path: str) -> None:
    text = _help(path)
    lines = text.splitlines()
    assert PYTHON_TYPE.search(text) is None, PYTHON_TYPE.search(text)
    assert "<bool>" not in text
    assert max(len(line) for line in lines) <= 80
    assert len(lines) < MOST_LINES, (path, len(lines))
    if path == "attribute":  # the command with the most options: 52, once 381 lines
        assert len(lines) < 120
    if path:
        assert "─ Options ─" not in text  # every option is in a named panel
        shown = [name for name in PANELS if f"─ {name} ─" in text]
        assert shown == sorted(shown, key=PANELS.index), shown  # the panels' one order
        assert re.search(r"--help\s+-h\s+Show this message", text)  # a flag, no value


def test_every_option_of_every_command_has_its_panel() -> None:
    unplaced = [
        f"{path}: {'/'.join(param.opts)}"
        for path, command in _commands()
        for param in command.params
        if param.param_type_name == "option"
        and not getattr(param, "hidden", False)
        and panel(path, param) not in PANELS
    ]
    assert unplaced == []


def test_a_flag_shows_as_a_flag_and_an_option_with_a_value_shows_a_word() -> None:
    text = " ".join(_help("attribute").split())
    assert "--repair Search the smallest saving change." in text
    assert "--dry-run Print what it would run, then stop." in text
    assert "--[no-]entry-points Load installed resampler entry points." in text
    assert "--limit INTEGER At most this many runs" in text
    assert "--out FILE The report" in text
    assert "--method METHOD contrastive, shapley or all." in text


def test_the_reference_page_keeps_every_name_of_an_option() -> None:
    """The help shows one name per option to stay narrow; the command parses all of them, and
    the written help record (the CLI reference page's) names them all."""
    group = get_command(app)
    assert isinstance(group, LazyGroup)
    fork = group.commands["fork"]
    ctx = click.Context(fork, info_name="fork")
    at = next(p for p in fork.params if p.name == "at")
    record = at.get_help_record(ctx)
    assert record is not None and "--at" in record[0] and "--from" in record[0]
    assert "--from" in _help("fork") or "--at" in _help("fork")
