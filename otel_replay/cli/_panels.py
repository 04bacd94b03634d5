"""How a command's ``--help`` is laid out: its options in panels with the same names on every
command, in the same order, and each option's value shown as a word (a flag shows none).

A panel says what a group of options is about: which runs a command reads, the code that re-runs
the agent, the question asked of a run, the statistics and budget of the answer, how the work is
executed, and the output. ``PANEL_OF`` places each option by its long name; a few options sit in
another panel on one command (``OTHERWISE``: ``--store`` is where ``import`` writes, not which runs
it reads). ``tests/test_cli_panels.py`` checks that every option of every command has its panel,
so a new option needs a line here.

Typer shows an option's value by its Python type (``<str>``, ``<int>``, and ``<bool>`` for a flag,
which takes no value at all); `arrange` gives each option a plain word instead (TEXT, INTEGER,
NUMBER, FILE, the choices), where the option does not name its own, and a flag none.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

__all__ = ["OTHERWISE", "PANELS", "PANEL_OF", "arrange", "as_flag", "names_shown"]

RUNS = "Which runs"
INPUT = "Input"
CODE = "The code"
QUESTION = "The question"
STATISTICS = "Statistics and budget"
EXECUTION = "Execution"
SERVER = "Server"
OUTPUT = "Output"

#: The panels, in the order ``--help`` shows them.
PANELS = (RUNS, INPUT, CODE, QUESTION, STATISTICS, EXECUTION, SERVER, OUTPUT)

_WHERE: dict[str, tuple[str, ...]] = {
    RUNS: (
        "--where", "--all-failing", "--since", "--limit", "--all", "--offset", "--after",
        "--sort", "--force", "--store",
    ),
    INPUT: (
        "--format", "--outcome-attribute", "--skip-invalid", "--max-record-bytes", "--strict",
        "--redact", "--redact-common", "--config",
    ),
    CODE: (
        "--agent", "--instrument", "--input", "--live", "--resamplers", "--verifier",
        "--success-if", "--fail-if", "--judge", "--judge-model", "--judge-base-url", "--tools",
        "--llm", "--llm-base-url", "--llm-model", "--llm-temperature", "--driver",
        "--max-turns", "--entry-points",
    ),
    QUESTION: (
        "--at", "--value", "--do", "--observe", "--observe-error", "--edit", "--fault",
        "--remove", "--faults", "--steps", "--method", "--strategy", "--swap-model", "--from",
        "--fail-threshold", "--margin", "--repair", "--root-cause", "--suspect", "--on-success",
        "--expect",
    ),
    STATISTICS: (
        "--rollouts", "--max-rollouts", "--budget", "--permutations", "--shapley-se", "--seed",
    ),
    EXECUTION: (
        "--executor", "--ray-address", "--workers", "--concurrency", "--on-resampler-error",
        "--lax", "--dry-run",
    ),
    SERVER: ("--host", "--port", "--flush-after", "--max-body-bytes"),
    OUTPUT: (
        "--out", "--with-verdict", "--keep-rollouts", "--otlp-out", "--otlp-endpoint",
        "--otlp-header", "--otlp-compression", "--annotate", "--fail-on", "--width", "--tree",
        "--sweep", "--json", "--version", "--help",
    ),
}  # fmt: skip

#: The panel of each option, by its long name as ``--help`` spells it.
PANEL_OF: dict[str, str] = {name: panel for panel, names in _WHERE.items() for name in names}

#: Where a command places an option apart from `PANEL_OF`, by the command's path.
OTHERWISE: dict[str, dict[str, str]] = {
    "import": {"--store": OUTPUT},
    "record": {"--store": OUTPUT, "--redact": OUTPUT, "--redact-common": OUTPUT},
    "serve": {"--store": OUTPUT},
    "export": {"--format": OUTPUT},
    "lint": {"--store": INPUT},
    "init": {"--force": OUTPUT},
}

_WORDS: dict[Any, str] = {str: "TEXT", int: "INTEGER", float: "NUMBER", Path: "FILE"}


def arrange(command: click.Command, path: str) -> click.Command:
    """Place ``command``'s options in their panels (arguments stay in Typer's own), in the panels'
    order, each showing its value as a word."""
    for param in command.params:
        if param.param_type_name == "option":
            param.rich_help_panel = panel(path, param)  # type: ignore[attr-defined]
            _show_value(param)
        elif param.param_type_name == "argument":
            _name_argument(param)
    command.params.sort(key=lambda p: _order(getattr(p, "rich_help_panel", None)))
    return command


def panel(path: str, param: click.Parameter) -> str | None:
    """The panel of one of ``path``'s options (None: an option no table names)."""
    name = _long_name(param)
    return OTHERWISE.get(path, {}).get(name) or PANEL_OF.get(name)


def as_flag(option: click.Parameter | None) -> None:
    """Show ``option`` (a flag: ``--help``, ``--version``) without a value, in the output
    panel."""
    if option is not None:
        option.metavar = ""
        option.rich_help_panel = OUTPUT  # type: ignore[attr-defined]


def _long_name(param: click.Parameter) -> str:
    names = [name for name in param.opts if name.startswith("--")]
    return names[0] if names else param.opts[0]


def _order(name: str | None) -> int:
    return PANELS.index(name) if name in PANELS else -1  # Typer's own panels first


def _no_type(ctx: click.Context) -> None:
    return None


def _name_argument(argument: click.Parameter) -> None:
    """An argument shows its name alone (``ID``, not ``[ID]... <list[str]>``): the usage line
    says whether it is optional or repeated."""
    setattr(argument, "display_type_rich", _no_type)  # noqa: B010 (an instance's own)
    if argument.metavar is not None:
        argument.metavar = argument.metavar.rstrip(".").strip("[]")


def _show_value(option: Any) -> None:
    if option.is_flag:
        option.metavar = ""  # Typer shows what a metavar says, and a flag takes no value
        return
    if option.metavar is not None:
        return
    described = getattr(option, "type_descriptor", None)
    if described is None:
        return
    if described.is_choice and described.choices:
        option.metavar = "|".join(
            str(c.value if isinstance(c, Enum) else c) for c in described.choices
        )
        return
    option.metavar = _WORDS.get(described.annotation, "FILE" if described.is_path else "TEXT")


@contextmanager
def names_shown(command: click.Command) -> Iterator[None]:
    """While ``command``'s help is written: each option under one long name (``--verifier``, not
    ``--verifier,--outcome``), and a flag with a ``--no-`` form as ``--[no-]NAME``, so the names'
    column stays narrow. The command parses every name all the same."""
    kept = [(param, param.opts, param.secondary_opts) for param in command.params]
    try:
        for param, opts, negative in kept:
            long = [name for name in opts if name.startswith("--")]
            if param.param_type_name != "option" or not long:
                continue
            first = long[0]
            if negative == [f"--no-{first[2:]}"]:
                first, param.secondary_opts = f"--[no-]{first[2:]}", []
            param.opts = [first, *(name for name in opts if not name.startswith("--"))]
        yield
    finally:
        for param, opts, negative in kept:
            param.opts, param.secondary_opts = opts, negative
