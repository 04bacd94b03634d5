"""The commands' ``--help`` (issue 27): plain text with no markup left in it, and one example each
that runs as written from the repository's root once the bundled samples are imported."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.text import Text
from typer.main import get_command

from otel_replay.cli import app
from otel_replay.cli._commands import COMMANDS, EXAMPLE, SUBCOMMAND_EXAMPLES, LazyGroup

try:
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

ROOT = Path(__file__).resolve().parent.parent
AGENT_REPLAY = [sys.executable, "-c", "from otel_replay.cli import main; main()"]

# What would show if a help text kept reST, Markdown or rich markup, or a wrap line break.
RAW = re.compile(
    r"``|`[^`\s][^`]*`|\*\*|\[/?(bold|italic|dim|red|green|yellow|blue|cyan|magenta|b|i|u)\]"
    r"|:(func|class|mod|meth|ref|attr):|\x08|%\(|%s"
)

# Examples that cannot run here, with why (none today).
NOT_RUN: dict[str, str] = {}

# What an example needs first, beyond the samples' import: the run resume's example continues is
# the recording of examples/incident/model_down.py shipped in examples/docs/ (it ended early: the
# agent raised when its model server refused the third call).
BEFORE = {"resume": ["import", "examples/docs/model-down.jsonl"]}

# Commands that run until Ctrl-C or SIGTERM: started, stopped once they listen, exit code 0.
SERVERS = {"serve", "ui"}


def _paths() -> Iterator[list[str]]:
    """Every command path below ``agent-replay``, the group itself first."""
    yield []
    group = get_command(app)
    assert isinstance(group, LazyGroup)
    for name in COMMANDS:
        yield [name]
        inner = group.commands[name]
        for sub in getattr(inner, "commands", {}):
            yield [name, sub]


PATHS = list(_paths())


def _help(path: list[str]) -> str:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100", "TERM": "dumb"}
    done = subprocess.run(
        [*AGENT_REPLAY, *path, "--help"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _example(path: list[str]) -> str:
    if not path:
        return EXAMPLE
    if len(path) == 1:
        return COMMANDS[path[0]].example
    return SUBCOMMAND_EXAMPLES[" ".join(path)]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "agent-replay")
def test_help_is_plain_text_and_ends_with_its_example(path: list[str]) -> None:
    text = _help(path)
    example = _example(path)
    assert f"Example: {example}" in " ".join(text.split())  # rich wraps it at spaces only
    assert example.startswith("agent-replay ")
    found = RAW.search(text)
    assert found is None, (path, found.group(0) if found else None, text)


def test_help_texts_hold_nothing_rich_would_take_for_markup() -> None:
    """rich's markup would eat a ``[word]`` in a help text; every one must come out as written."""
    group = get_command(app)
    commands: list[click.Command] = [group]
    for name in COMMANDS:
        inner = group.commands[name]  # type: ignore[attr-defined]
        commands += [inner, *getattr(inner, "commands", {}).values()]
    texts = [c.help or "" for c in commands] + [c.epilog or "" for c in commands]
    texts += [getattr(p, "help", None) or "" for c in commands for p in c.params]
    assert len(texts) > 150
    for text in texts:
        assert Text.from_markup(text).plain == text, text


def test_the_help_reflows_at_the_terminals_width() -> None:
    """No line break of the source's docstrings is left in a paragraph of the help."""
    narrow = subprocess.run(
        [*AGENT_REPLAY, "list", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        check=True,
    ).stdout
    assert "--where chooses the runs and --sort their order, both answered by the store." in narrow


def test_the_listing_shows_each_summary_whole_on_one_line() -> None:
    """A wide terminal gets each command's summary on one line, not broken where the source
    broke it."""
    wide = subprocess.run(
        [*AGENT_REPLAY, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
        check=True,
    ).stdout
    for name, lazy in COMMANDS.items():
        assert "\n" not in lazy.summary, name
        assert re.search(rf"^\W*{name} +{re.escape(lazy.summary)} *\W*$", wide, re.M), name


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as the repository's root: copies of sample_traces/ and examples/, the samples
    imported into its own ./.agent-replay/store.db."""
    folder = tmp_path_factory.mktemp("examples")
    shutil.copytree(ROOT / "sample_traces", folder / "sample_traces")
    shutil.copytree(
        ROOT / "examples", folder / "examples", ignore=shutil.ignore_patterns("__pycache__")
    )
    return folder


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_REPLAY_STORE"}
    return {**env, "NO_COLOR": "1", "COLUMNS": "100", "PYTHONUNBUFFERED": "1"}


def _serve(argv: list[str], folder: Path) -> None:
    with subprocess.Popen(
        argv, cwd=folder, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as server:
        assert server.stdout is not None
        try:
            first = server.stdout.readline()  # where it listens, once it does
            assert "http://127.0.0.1:" in first, (argv, first, server.stdout.read())
            # sent the moment the address is read: the commands take SIGTERM over before they
            # print it, so the signal stops them as Ctrl-C does, not by SIGTERM's default
            server.send_signal(signal.SIGTERM)
            rest, _ = server.communicate(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
        assert server.returncode == 0, (argv, first, rest)
        assert "stopped" in rest


def test_every_example_runs_as_written(samples: Path) -> None:
    """The examples in the order --help lists them, in one folder: each one after the bundled
    samples' import (the group's own example), and report html after attribute wrote its report."""
    ran = []
    for path in PATHS:
        name = path[0] if path else ""
        if name in NOT_RUN and len(path) == 1:
            continue
        argv = shlex.split(_example(path))
        command = [*AGENT_REPLAY, *argv[1:]]
        if name in BEFORE:
            before = [*AGENT_REPLAY, *BEFORE[name]]
            subprocess.run(before, cwd=samples, env=_env(), check=True, capture_output=True)
        if name in SERVERS:
            _serve(command, samples)
        else:
            done = subprocess.run(
                command, cwd=samples, env=_env(), capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, (argv, done.stdout, done.stderr)
        ran.append(" ".join(path))
    assert len(ran) == len(PATHS) - len(NOT_RUN)
    assert (samples / "report.html").stat().st_size > 0  # the last one did its work
