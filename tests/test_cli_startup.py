"""Start-up of the CLI (issue 26): ``--help`` and ``list`` load only what they need, the commands'
listing says what the commands themselves say, and option values converted without pydantic are
converted as Typer converts them (``benchmarks/startup_bench.py`` times it)."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer._coercion import build_runtime_param
from typer.main import get_command

from otel_replay import Store
from otel_replay.cli import app
from otel_replay.cli._commands import COMMANDS, LazyGroup
from otel_replay.cli._values import PlainValues
from tests.conftest import SAMPLES

try:
    from typer import _click as click
    from typer._click.exceptions import BadParameter
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]
    from click import BadParameter  # type: ignore[no-redef,import-not-found,unused-ignore]

# Runs the CLI as the installed command does, then names every module it loaded.
PROBE = """
import sys
sys.argv = ["agent-replay", *sys.argv[1:]]
from otel_replay.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print("--- modules", code)
print("\\n".join(sorted(sys.modules)))
"""

COMMAND_MODULES = {lazy.module for lazy in COMMANDS.values()}
ENGINE = {
    "otel_replay.attribution._engine",
    "otel_replay.attribution._api",
    "otel_replay.replay._live",
    "otel_replay.replay._rollout",
    "otel_replay.report._json",
    "otel_replay.otlp_encode",
    "otel_replay.importers._merge",
    "otel_replay.importers.otlp_proto",
    "otel_replay.ingest",
}


def _loaded(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    _, _, modules = done.stdout.partition("--- modules ")
    code, _, names = modules.partition("\n")
    assert code == "0", (args, done.stdout, done.stderr)
    return set(names.split())


def test_help_loads_no_command_no_store_and_no_pydantic() -> None:
    loaded = _loaded("--help")
    assert "typer.rich_utils" in loaded  # the probe ran the help it is about
    assert loaded & COMMAND_MODULES == set()
    assert loaded & ENGINE == set()
    held = {"otel_replay.cli._common", "otel_replay.store", "pydantic", "sqlite3"}
    assert loaded & held == set()


@pytest.mark.parametrize("runs", ["empty", "samples"])
def test_list_loads_its_own_command_and_no_pydantic(tmp_path: Path, runs: str) -> None:
    store = tmp_path / "store.db"
    with Store.open(store) as db:
        if runs == "samples":
            from otel_replay import read_path

            db.put_all(read_path(SAMPLES / "incident.otlp.jsonl"))
    loaded = _loaded("list", "--store", str(store))
    assert "otel_replay.cli._browse" in loaded
    assert loaded & (COMMAND_MODULES - {"otel_replay.cli._browse"}) == set()
    assert loaded & ENGINE == set()
    assert "pydantic" not in loaded  # a path and a flag: converted without it


def test_each_summary_is_the_first_paragraph_of_its_commands_help() -> None:
    group = get_command(app)
    for name, lazy in COMMANDS.items():
        command = group.commands[name]  # built from its module
        assert command.name == name
        assert inspect.cleandoc(command.help or "").split("\n\n")[0] == lazy.summary, name
    assert list(group.commands) == list(COMMANDS)


def _help(group: click.Command, capsys: pytest.CaptureFixture[str]) -> str:
    with group.make_context("agent-replay", [], resilient_parsing=True) as ctx:
        printed = group.get_help(ctx)  # Typer's rich help prints; click's returns the text
    return printed + capsys.readouterr().out


def test_the_listing_is_the_one_the_built_commands_give(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    listed = get_command(app)
    built = get_command(app)
    for name in built.commands:
        built.commands[name]  # built, so the help reads the command itself
    assert isinstance(listed, LazyGroup)
    text = _help(listed, capsys)
    assert all(f" {name} " in text for name in COMMANDS)
    assert listed.commands.built == {}  # type: ignore[attr-defined]  # the listing built none
    assert text == _help(built, capsys)


def test_the_group_builds_commands_as_the_app_would() -> None:
    assert LazyGroup.pretty_exceptions_short == app.pretty_exceptions_short
    group = get_command(app)
    assert group.get_command(click.Context(group), "nonexistent") is None
    report = group.commands["report"]
    assert sorted(report.commands) == ["html", "schema"]  # type: ignore[attr-defined]


# --- values converted without pydantic --------------------------------------------------------------

plain = typer.Typer()


@plain.command()
def _checked(
    must: Annotated[Path, typer.Option(exists=True, dir_okay=False)] = Path("."),
    folder: Annotated[Path, typer.Option(file_okay=False, resolve_path=True)] = Path("."),
    dash: Annotated[Path, typer.Option(allow_dash=True)] = Path("-"),
    bounded: Annotated[int, typer.Option(min=1, max=10)] = 1,
    clamped: Annotated[int, typer.Option(min=1, max=10, clamp=True)] = 1,
    ratio: Annotated[float, typer.Option(min=0.0, max=1.0)] = 0.5,
    text: str = "",
    count: int = 0,
) -> None:
    """Parameters with Typer's own checks of a path, beside plain ones."""


def _parameters() -> list[tuple[click.Command, click.Parameter]]:
    group = get_command(app)
    commands: list[click.Command] = [group, get_command(plain)]
    for name in group.commands:
        command = group.commands[name]
        commands += [command, *getattr(command, "commands", {}).values()]
    return [(c, p) for c in commands for p in c.params if hasattr(p, "type_descriptor")]


def _converted(convert: Any, value: Any, param: click.Parameter, ctx: click.Context) -> Any:
    try:
        converted = convert.coerce(value, param=param, ctx=ctx)
    except click.ClickException as exc:
        return ("raised", type(exc).__name__, exc.format_message())
    return (type(converted).__name__, converted)


def test_plain_values_convert_as_typer_does(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    values = [
        None,
        "",
        "x",
        "-",
        "a b",
        "a//b/",
        *(str(tmp_path / p) for p in ("file.txt", "none")),
    ]
    values += [
        str(tmp_path),
        f"{tmp_path}/",
        f"{tmp_path}/./file.txt",
        f"{tmp_path}/file.txt/",
        "./x",
    ]
    values += [0, 7, -1, 2.5, 0.0, 10**6, True]  # defaults: numbers in and out of bounds
    compared = 0
    for command, param in _parameters():
        ctx = click.Context(command)
        descriptor = param.type_descriptor  # type: ignore[attr-defined]
        mine, typers = PlainValues(param), build_runtime_param(descriptor)
        for value in values:
            assert _converted(mine, value, param, ctx) == _converted(typers, value, param, ctx), (
                command.name,
                param.name,
                value,
            )
            compared += 1
    assert compared > 500  # every parameter of every command took part


def test_paths_and_text_skip_typers_adapter_and_the_rest_use_it(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    command = get_command(plain)
    ctx = click.Context(command)
    params = {p.name: p for p in command.params}
    for name, value in (
        ("must", str(tmp_path / "file.txt")),
        ("text", "words"),
        ("folder", str(tmp_path)),
    ):
        conversion = PlainValues(params[name])
        conversion.coerce(value, params[name], ctx)
        assert conversion._typers is None, name
    count = PlainValues(params["count"])
    assert count.coerce("7", params["count"], ctx) == 7
    assert count._typers is not None
    with pytest.raises(BadParameter, match="is a directory"):
        PlainValues(params["must"]).coerce(str(tmp_path), params["must"], ctx)
