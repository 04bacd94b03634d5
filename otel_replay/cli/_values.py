"""Option values converted without pydantic where Typer's conversion is known.

Typer converts each parameter's value through a pydantic adapter that it builds the first time the
parameter is parsed, even for a value it leaves as it is; importing pydantic and building the
adapters was the largest part of ``agent-replay list`` (more than opening the store and printing
the table). Most values this CLI parses are one of four kinds whose conversion is plain: no value
(``None``, which Typer returns before converting), a number option's default (an ``int`` or
``float`` of its own type, within its bounds: returned as it is), a string for a ``str`` parameter
(returned as it is), and a string for a ``Path`` parameter that ``Path`` spells as it is (``Path(value)``, then
Typer's own checks of the path, ``coerce_cli_path``, the function its adapter calls; a string it
spells otherwise, ``""`` or ``./a`` or ``a/``, names another path or is quoted otherwise in
Typer's messages, and a parameter that takes ``-`` for standard input is checked differently).
Those are converted here; every other value, or a parameter of another type or with a parser, goes
to the adapter Typer builds, built when such a value first comes. One refusal is this CLI's own: a
URL given for a ``Path`` parameter (``--out http://host/x``) is a usage error naming it, where
``Path`` would fold its ``//`` into one slash and a file would be read or written at ``http:/host/x``. ``tests/test_cli_startup.py`` sets the two side by side for every
parameter of every command.

The hook is Typer's lazily built ``_runtime_param``: where a Typer version has no such slot,
nothing is changed and Typer converts everything itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer import _click as click
    from typer._click.exceptions import BadParameter
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]
    from click import BadParameter  # type: ignore[no-redef,import-not-found,assignment,unused-ignore]

from typer.core import TyperCommand, TyperGroup

__all__ = [
    "PlainValues",
    "PlainValuesCommand",
    "PlainValuesGroup",
    "convert_param",
    "convert_plain_values",
]


class PlainValues:
    """One parameter's conversion: the plain cases here, the rest by Typer's adapter."""

    def __init__(self, param: Any) -> None:
        descriptor = param.type_descriptor
        info = descriptor.parameter_info
        plain = info.parser is None and descriptor.file_annotation is None
        self._str = plain and descriptor.annotation is str
        # a dash is standard input only to a check of the text, not of the Path Typer makes first
        plain_path = (
            descriptor.annotation is Path and info.path_type is None and not info.allow_dash
        )
        self._path = plain and plain_path
        self._takes_path = descriptor.annotation is Path
        # a number option's default: an int or float of the option's own type, within its bounds
        self._number = (
            descriptor.annotation if plain and descriptor.annotation in (int, float) else None
        )
        self._bounds = (info.min, info.max)
        self._typers: Any = None

    def coerce(self, value: Any, param: Any, ctx: click.Context) -> Any:
        """What Typer's conversion of ``param`` returns for ``value``."""
        many = param.multiple or param.nargs == -1
        if value is None:
            return () if many else None
        if self._number is not None and type(value) is self._number and not many:
            low, high = self._bounds
            if (low is None or value >= low) and (high is None or value <= high):
                return value  # else Typer's adapter says what is wrong with it (or clamps it)
        if isinstance(value, str) and "://" in value and self._takes_path:
            raise BadParameter(f"{value} is a URL, not a file path", ctx=ctx, param=param)
        if isinstance(value, str) and not many:
            if self._str:
                return value
            path = Path(value) if self._path else None
            if path is not None and str(path) == value:  # else the two differ ("", "a/", "./a")
                from typer._param_types import coerce_cli_path

                info = param.type_descriptor.parameter_info
                return coerce_cli_path(path, info, path_type=Path, param=param, ctx=ctx)
        return self.typers(param).coerce(value, param=param, ctx=ctx)

    def typers(self, param: Any) -> Any:
        """Typer's own conversion of ``param`` (its pydantic adapter), built on first need."""
        if self._typers is None:
            from typer._coercion import build_runtime_param

            self._typers = build_runtime_param(param.type_descriptor)
        return self._typers


def convert_plain_values(command: click.Command) -> click.Command:
    """Give each of ``command``'s parameters (and its subcommands', for a group whose commands are
    built already) the conversion above, where Typer has not built its own yet."""
    for param in command.params:
        convert_param(param)
    commands = getattr(command, "commands", None)
    if isinstance(commands, dict):
        for sub in commands.values():
            convert_plain_values(sub)
    return command


def convert_param(param: click.Parameter | None) -> None:
    """Give one parameter the conversion above, if Typer has not built its own yet."""
    if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
        param._runtime_param = PlainValues(param)  # type: ignore[union-attr]


class PlainValuesCommand(TyperCommand):
    """A Typer command whose ``--help`` flag is converted as its other options are (the flag is
    made when the command line is parsed, so `convert_plain_values` cannot reach it before), and
    whose old spellings are read as their new ones (`otel_replay.cli._renamed`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from otel_replay.cli._renamed import modernize

        takes_value = {
            name
            for param in self.params
            if param.param_type_name == "option" and not getattr(param, "is_flag", False)
            for name in param.opts
        }
        return super().parse_args(ctx, modernize(ctx.info_name or "", args, takes_value))

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from otel_replay.cli._panels import names_shown

        with names_shown(self):
            super().format_help(ctx, formatter)

    def get_help_option(self, ctx: click.Context) -> Any:
        option = super().get_help_option(ctx)
        convert_param(option)
        from otel_replay.cli._panels import as_flag  # below _commands, which imports this module

        as_flag(option)
        return option


class PlainValuesGroup(TyperGroup):
    """A group of commands inside ``agent-replay`` (``report``): its ``--help`` flag converted
    and shown as `PlainValuesCommand`'s is."""

    def get_help_option(self, ctx: click.Context) -> Any:
        option = super().get_help_option(ctx)
        convert_param(option)
        from otel_replay.cli._panels import as_flag

        as_flag(option)
        return option
