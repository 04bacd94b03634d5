"""The library names a setting as a Python caller passes it, and a command as its option: the
library never spells a command-line flag in an error, and every setting it names is an option of
some command."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from otel_replay.cli import app
from otel_replay.cli._common import OPTIONS_NAMED_OTHERWISE
from otel_replay.errors import ReplayError, setting, settings_as_options
from otel_replay.store._query import parse_filter
from tests.conftest import ROOT

PACKAGE = ROOT / "otel_replay"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def _library_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] != "cli"]


def test_no_library_error_spells_a_command_line_flag() -> None:
    spelled = []
    for path in _library_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    text = part.value.split("`agent-replay ")[0]  # a command to run, as a hint
                    if FLAG.search(text):
                        spelled.append(f"{path.relative_to(PACKAGE)}:{part.lineno} {part.value!r}")
    assert spelled == []


def _named_settings() -> set[str]:
    names = set()
    for path in _library_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setting"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
    return names


def test_every_setting_the_library_names_is_an_option_of_a_command() -> None:
    command = get_command(app)
    options = set()
    for sub in getattr(command, "commands", {}).values():
        for group in [sub, *getattr(sub, "commands", {}).values()]:
            for param in group.params:
                options.update(o for o in param.opts if o.startswith("--"))
    named = _named_settings()
    assert len(named) > 10  # the scan found the library's settings
    with settings_as_options(OPTIONS_NAMED_OTHERWISE):
        missing = {name: setting(name) for name in named if setting(name) not in options}
    assert missing == {}


def test_a_mistake_is_named_in_the_callers_terms() -> None:
    with pytest.raises(ReplayError) as caught:
        parse_filter("outcome <")
    assert str(caught.value).startswith("where='outcome <': cannot read")
    assert setting("swap_from", 2) == "swap_from=2"
    with settings_as_options(OPTIONS_NAMED_OTHERWISE):
        assert setting("swap_from", 2) == "--from 2"
        assert setting("where", "x", quoted=True) == "--where 'x'"
    assert setting("where") == "where"  # the command's spelling ends with the command


def test_the_command_names_it_as_its_option(tmp_path: Path) -> None:
    store = str(tmp_path / "store.db")
    runner = CliRunner()
    imported = runner.invoke(app, ["import", str(ROOT / "sample_traces"), "--store", store])
    assert imported.exit_code == 0, imported.output
    result = runner.invoke(
        app, ["blame", "--where", "outcome <", "--store", store], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 1
    assert "--where 'outcome <': cannot read" in result.output
