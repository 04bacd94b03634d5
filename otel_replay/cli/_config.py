"""The configuration file: how to re-run the agent and the question's defaults, written once.

``agent-replay.toml``, or the ``[tool.agent-replay]`` table of ``pyproject.toml``, is found from
the working directory up, as ruff and pytest find theirs: the first directory holding either
counts (``agent-replay.toml`` first; a ``pyproject.toml`` without the table does not count).
``agent-replay --config FILE`` names another. Its keys are the commands' long options without
their dashes (``success-if = "v841"``): at the top level for every command that takes the option
(a command without it leaves it alone), in a table per command (``[attribute]``) for one command
only, which wins over the top level. Flags on the command line win over both.

The file becomes Click's ``default_map`` of the command that runs, made from each command's own
parameters, so an option renamed or added is a key at once. Paths (``--store``, a ``.py`` file of
``--resamplers``, the file of ``file.py:function``) are relative to the file's directory. A key
no command takes, a table that is no command, a value of the wrong type or a file that is no TOML
is a `ConfigError` naming the file, its line and the value.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

import typer
from typer.core import TyperGroup

from otel_replay.errors import ConfigError, preview

__all__ = [
    "CODE_SPECS",
    "CONFIG_NAME",
    "ConfigFile",
    "configure",
    "default_map",
    "find_config",
    "hoist_config",
    "is_path_spec",
    "option_keys",
    "parse_config",
    "read_config",
]

CONFIG_NAME = "agent-replay.toml"
PYPROJECT = "pyproject.toml"
#: Where the settings sit in ``pyproject.toml``.
TOOL_TABLE = ("tool", "agent-replay")
#: Options whose value names code as ``module:function``, ``file.py:function``, a module or a
#: ``.py`` file: a file among them is relative to the configuration file.
CODE_SPECS = frozenset({"resamplers", "verifier", "outcome", "agent"})
#: What ``--config`` takes to mean no file at all (as ``--verifier none`` means no verifier).
NONE = "none"
#: Commands that never read the file (``init`` writes one, whatever is there now).
UNREAD_BY = frozenset({"init"})


@dataclass(frozen=True)
class ConfigFile:
    """A configuration file read: where it is, its settings (the top level's keys, with a dict
    for each command's table), and its text (to say a key's line)."""

    path: Path
    settings: dict[str, Any]
    text: str
    prefix: tuple[str, ...] = ()  # (``tool``, ``agent-replay``) in a pyproject.toml

    @property
    def shown(self) -> str:
        """The file as messages name it: from the working directory when it lies below it."""
        return shown_path(self.path)

    def where(self, keys: tuple[str, ...]) -> str:
        """``FILE:LINE`` of the key at ``keys`` (the tables holding it, then its name)."""
        line = key_line(self.text, (*self.prefix, *keys))
        return f"{self.shown}:{line}" if line else self.shown


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    absolute = path.absolute()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def find_config(start: Path) -> Path | None:
    """The configuration file for a command run in ``start``: in the first directory from it up
    holding ``agent-replay.toml`` or a ``pyproject.toml`` with a ``[tool.agent-replay]`` table."""
    for folder in (start, *start.parents):
        named = folder / CONFIG_NAME
        if named.is_file():
            return named
        project = folder / PYPROJECT
        if project.is_file() and _has_tool_table(project):
            return project
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "agent-replay" not in text:  # most pyproject files: not parsed at all
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return True  # it names the table: read_config says what is wrong with it
    return isinstance(data.get("tool"), dict) and TOOL_TABLE[1] in data["tool"]


def read_config(path: Path) -> ConfigFile:
    """The file at ``path`` read (its settings not yet checked against the commands: see
    `default_map`)."""
    shown = shown_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{shown}: no such configuration file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}: cannot read the configuration file ({exc})") from None
    return parse_config(path, text)


def parse_config(path: Path, text: str) -> ConfigFile:
    """The configuration file at ``path`` whose text is ``text`` (see `read_config`)."""
    shown = shown_path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        said = str(exc)
        found = re.search(r"\(at line (\d+), column (\d+)\)", said)
        if said.endswith("(at end of document)"):
            said = said.removesuffix("(at end of document)").rstrip() + " (at the end)"
            raise ConfigError(f"{shown}:{len(text.splitlines())}: not TOML: {said}") from None
        if found:
            said = said[: found.start()].rstrip() + f" (column {found[2]})"
            raise ConfigError(f"{shown}:{found[1]}: not TOML: {said}") from None
        raise ConfigError(f"{shown}: not TOML: {said}") from None
    if path.name == PYPROJECT:
        tool = data.get("tool")
        table = tool.get(TOOL_TABLE[1]) if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(f"{shown}: has no [tool.agent-replay] table")
        return ConfigFile(path, table, text, TOOL_TABLE)
    return ConfigFile(path, data, text)


def key_line(text: str, keys: tuple[str, ...]) -> int | None:
    """The line (1-based) of the key at ``keys`` in TOML ``text``: under the header of its tables
    (or a dotted key), else the first line setting a key of its name."""
    *tables, name = keys
    table: tuple[str, ...] = ()
    first: int | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", line)
        if header:
            table = tuple(_unquoted(part) for part in _dotted(header[1]))
            if table == keys:  # the key is a table: its header
                return number
            continue
        setting = re.match(r"^\s*((?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.\- ]+?))\s*=", line)
        if not setting:
            continue
        dotted = tuple(_unquoted(part) for part in _dotted(setting[1]))
        if (*table, *dotted) == (*tables, name):
            return number
        if dotted[-1] == name and first is None:
            first = number
    return first


def _dotted(text: str) -> list[str]:
    return [part.strip() for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", text)]


def _unquoted(part: str) -> str:
    return part[1:-1] if part[:1] in "\"'" and part[-1:] == part[:1] else part


def option_keys(command: click.Command) -> dict[str, click.Parameter]:
    """The keys ``command`` takes: each long option's name without its dashes (a flag's
    ``--no-`` form aside), with its parameter."""
    keys: dict[str, click.Parameter] = {}
    for param in command.params:
        if getattr(param, "param_type_name", "") != "option" or param.name is None:
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                keys[opt[2:]] = param
    return keys


def subcommands(command: click.Command, ctx: click.Context) -> dict[str, click.Command]:
    """The commands of a group, built (empty for a command that is no group)."""
    if not isinstance(command, TyperGroup):
        return {}
    found = {name: command.get_command(ctx, name) for name in command.list_commands(ctx)}
    return {name: sub for name, sub in found.items() if sub is not None}


def default_map(
    config: ConfigFile, root: TyperGroup, ctx: click.Context, running: str | None = None
) -> dict[str, Any]:
    """Click's ``default_map`` for the commands below ``root`` from ``config``, checked (a
    `ConfigError` for the first mistake).

    With ``running`` (the command about to run), only that command is built: its table's keys
    and every value it takes go through its options' own conversion (a range, the choices), and
    a top-level key it does not take is looked for among the other commands, built one by one
    until one takes it; another command's table is checked when that command runs. Without
    ``running``, every command is built and every key and value checked (``init`` does so
    before it writes a file)."""
    walk = _Walk(set())
    names = [n for n in root.list_commands(ctx) if n not in UNREAD_BY]  # names: nothing built
    _check_tables(config, (), names)
    top = _scalars(config.settings, ())
    made: dict[str, Any] = {}
    for name in names if running is None else [n for n in names if n == running]:
        command = root.get_command(ctx, name)
        if command is not None:
            made[name] = _map_for(config, command, ctx, (name,), top, walk)
    for key, (where, value) in top.items():
        if where not in walk.used and not _taken(key, root, ctx, names):
            every = {k for c in _leaves(root, ctx) for k in option_keys(c)}
            raise ConfigError(
                f"{config.where(where)}: {key} = {_toml(value)}: no command takes --{key}"
                f"{_close(key, every)}"
            )
    return made


#: A table's settings: each key with where it is (the tables holding it, then its name).
Given = dict[str, tuple[tuple[str, ...], Any]]


@dataclass(frozen=True)
class _Walk:
    """What a walk over the commands keeps: the keys some command took."""

    used: set[tuple[str, ...]]


def _scalars(settings: dict[str, Any], at: tuple[str, ...]) -> Given:
    """The settings of the table at ``at`` (not the tables inside it)."""
    table = _table_at(settings, at)
    return {k: ((*at, k), v) for k, v in table.items() if not isinstance(v, dict)}


def _check_tables(config: ConfigFile, at: tuple[str, ...], names: list[str]) -> None:
    """Every table inside the one at ``at`` is one of the commands ``names``."""
    for name, value in _table_at(config.settings, at).items():
        if isinstance(value, dict) and name not in names:
            raise ConfigError(
                f"{config.where((*at, name))}: [{'.'.join((*at, name))}] is no command"
                f"{_close(name, set(names))}; a table is one of: {', '.join(sorted(names))}"
            )


def _map_for(
    config: ConfigFile,
    command: click.Command,
    ctx: click.Context,
    at: tuple[str, ...],
    inherited: Given,
    walk: _Walk,
) -> dict[str, Any]:
    """The ``default_map`` of the command at ``at`` (a group: of each of its commands), the
    settings of its own table winning over those of the tables holding it."""
    own = _scalars(config.settings, at)
    given = {**inherited, **own}
    if not isinstance(command, TyperGroup):
        return _command_map(config, command, given, own, walk)
    commands = subcommands(command, ctx)
    _check_tables(config, at, list(commands))
    for key, (where, value) in own.items():  # a group's own table: some command of it takes it
        if not any(key in option_keys(c) for c in _leaves(command, ctx)):
            raise ConfigError(
                f"{config.where(where)}: {key} = {_toml(value)}: "
                f"no command of '{command.name}' takes --{key}"
            )
    return {
        name: _map_for(config, sub, ctx, (*at, name), given, walk) for name, sub in commands.items()
    }


def _taken(key: str, root: TyperGroup, ctx: click.Context, names: list[str]) -> bool:
    """Whether a command takes ``--key`` (the commands built one by one until one does)."""
    for name in names:
        command = root.get_command(ctx, name)
        if command is not None and any(key in option_keys(c) for c in _leaves(command, ctx)):
            return True
    return False


def _table_at(settings: dict[str, Any], at: tuple[str, ...]) -> dict[str, Any]:
    table = settings
    for name in at:
        table = table.get(name, {})
    return table


def _command_map(
    config: ConfigFile,
    command: click.Command,
    given: Given,
    own: Given,
    walk: _Walk,
) -> dict[str, Any]:
    keys = option_keys(command)
    made: dict[str, Any] = {}
    named: dict[str, tuple[str, ...]] = {}
    for key, (where, value) in given.items():
        param = keys.get(key)
        if param is None:
            if key in own:
                raise ConfigError(
                    f"{config.where(where)}: {key} = {_toml(value)}: "
                    f"'{command.name}' takes no --{key}{_close(key, keys)}"
                )
            continue
        assert param.name is not None
        before = named.get(param.name)
        if before is not None and before[:-1] == where[:-1]:  # two spellings in one table
            raise ConfigError(
                f"{config.where(where)}: {key} and {before[-1]} both set --{key}; keep one"
            )
        named[param.name] = where
        made[param.name] = _value(config, where, key, value, param, command)
        walk.used.add(where)
    return made


def _leaves(command: click.Command, ctx: click.Context) -> Iterator[click.Command]:
    commands = subcommands(command, ctx)
    if not commands:
        yield command
    for name, sub in commands.items():
        if name not in UNREAD_BY:
            yield from _leaves(sub, ctx)


def _close(name: str, known: Mapping[str, Any] | set[str]) -> str:
    near = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {near[0]}?)" if near else ""


def _toml(value: Any) -> str:
    """A value as the file wrote it (a string quoted, a list bracketed), cut short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return preview(value)


def _value(
    config: ConfigFile,
    where: tuple[str, ...],
    key: str,
    value: Any,
    param: click.Parameter,
    command: click.Command,
) -> Any:
    """The setting as the option takes it (a path made relative to the file), or a
    `ConfigError` saying what the option takes."""
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    many = param.multiple or param.nargs == -1
    if many and not isinstance(value, list):
        value = [value]
    items = value if many else [value]
    if not many and isinstance(value, list):
        raise ConfigError(f"{config.where(where)}: {key} = {_toml(value)}: --{key} takes one value")
    inner = _inner(annotation) if many else annotation
    for item in items:
        wrong = _wrong_type(item, inner, param)
        if wrong:
            raise ConfigError(
                f"{config.where(where)}: {key} = {_toml(item)}: --{key} takes {wrong}"
            )
    base = config.path.parent
    if inner is Path:
        items = [_relative_path(item, base) for item in items]
    elif CODE_SPECS & {opt[2:] for opt in param.opts}:
        items = [_relative_spec(item, base) for item in items]
    for item in items:
        _checked(config, where, key, [item] if many else item, param, command)
    return items if many else items[0]


def _inner(annotation: Any) -> Any:
    args: tuple[Any, ...] = getattr(annotation, "__args__", ())
    return args[0] if len(args) == 1 else None


def _wrong_type(value: Any, annotation: Any, param: click.Parameter) -> str | None:
    """What the option takes, when ``value`` is not of it (None: it is)."""
    if annotation is bool or getattr(param, "is_flag", False):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(value, (dict, list)):
        return "one value, not a table or a list"
    if annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else "a whole number"
    if annotation is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else "a number"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        choices = [str(member.value) for member in annotation]
        ok = isinstance(value, str) and value.lower() in {c.lower() for c in choices}
        return None if ok else f"one of {', '.join(choices)}"
    if annotation in (str, Path):
        return None if isinstance(value, str) else "a string"
    return None  # another type: its own conversion says (`_checked`)


def _checked(
    config: ConfigFile,
    where: tuple[str, ...],
    key: str,
    value: Any,
    param: click.Parameter,
    command: click.Command,
) -> Any:
    """The value through the option's own conversion (a range, a choice), as Click would
    convert it when the command runs."""
    ctx = click.Context(command, info_name=command.name)
    runtime = getattr(param, "get_runtime_param", None)
    if runtime is None:
        return value
    try:
        return runtime().coerce(value, param=param, ctx=ctx)
    except click.exceptions.BadParameter as exc:
        said = exc.message
        raise ConfigError(f"{config.where(where)}: {key} = {_toml(value)}: {said}") from None


def is_path_spec(module: str) -> bool:
    """Whether a code spec's module part names a file (``tools.py``, ``agents/loop``) rather
    than an importable module (``my_package.tools``)."""
    return module.endswith(".py") or "/" in module or os.sep in module


def _relative_spec(spec: str, base: Path) -> str:
    """A code spec with its file made relative to ``base`` (a module name stays as it is)."""
    module, colon, name = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not is_path_spec(module):
        return spec
    return f"{_relative_path(module, base)}{colon}{name}"


def _relative_path(value: str, base: Path) -> str:
    """``value``, a path relative to ``base``, as the working directory reaches it: the same
    text the flag typed there would be (``../tools.py`` from a folder below the file's), so a
    report's configuration and its question's digest are the same from the file or the flags.
    An absolute path, ``~`` and ``-`` (standard output) stay as written."""
    if value == "-" or "://" in value or value.startswith("~") or Path(value).is_absolute():
        return value
    try:
        return os.path.relpath(base.absolute() / value)
    except ValueError:  # pragma: no cover - another drive (Windows)
        return str(base.absolute() / value)


def configure(ctx: click.Context, given: Path | None) -> None:
    """Give the command about to run the configuration file's settings (``given``, else the one
    found from the working directory up; ``none``: no file) as its ``default_map``; a mistake in
    the file is one line on stderr and exit 1, before anything runs."""
    if ctx.invoked_subcommand in UNREAD_BY or (given is not None and str(given) == NONE):
        return
    try:
        path = given if given is not None else find_config(Path.cwd())
        if path is None:
            return
        config = read_config(path)
        assert isinstance(ctx.command, TyperGroup)
        ctx.default_map = default_map(config, ctx.command, ctx, ctx.invoked_subcommand)
    except ConfigError as exc:
        from otel_replay.cli._common import print_error

        print_error(exc)
        raise typer.Exit(1) from None


def hoist_config(args: list[str], commands: Mapping[str, Any]) -> list[str]:
    """``agent-replay CMD ... --config FILE ...`` as ``agent-replay --config FILE CMD ...``: the
    root's option may follow the command's name too (not past ``--``)."""
    named = next((i for i, arg in enumerate(args) if arg in commands), None)
    if named is None:
        return args
    rest = list(args[named:])
    moved: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            break
        if arg == "--config" and i + 1 < len(rest):
            moved += rest[i : i + 2]
            del rest[i : i + 2]
            continue
        if arg.startswith("--config="):
            moved.append(arg)
            del rest[i]
            continue
        i += 1
    return [*args[:named], *moved, *rest] if moved else args
