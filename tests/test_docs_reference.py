"""The docs site's references: the CLI page is the app's own ``--help``, the API page is
``otel_replay.__all__``.

The CLI reference is written at build time by an MkDocs hook (``docs/hooks/cli_reference.py``);
these tests run the hook's renderer against the real app and set what it wrote beside what
``agent-replay COMMAND --help`` prints, so a change to the CLI that the page would miss fails here
(the build itself, ``mkdocs build --strict``, runs in ``.ci/run``).
"""

from __future__ import annotations

import html
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

import otel_replay
from otel_replay.cli import app
from otel_replay.cli._commands import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
HOOK = ROOT / "docs" / "hooks" / "cli_reference.py"
WIDE = {"COLUMNS": "250"}  # rich tables not wrapped: an option's help stays on its line


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_reference", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference() -> str:
    return str(_hook().render())


def _sections(reference: str) -> dict[str, str]:
    """Each command's part of the page, by its command line (``agent-replay report html``)."""
    parts = re.split(r"^#{2,6} (.+)$", reference, flags=re.MULTILINE)
    return {_unescape(title): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def _unescape(text: str) -> str:
    return html.unescape(re.sub(r"\\(.)", r"\1", text))


def _help(*command: str) -> str:
    result = CliRunner().invoke(app, [*command, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    return result.output


def _option_names(line: str) -> list[str]:
    """The names a row of --help's option table starts with (``--verifier``, ``--[no-]entry-points``
    for ``--entry-points`` and ``--no-entry-points``, ``--limit -n``), before its metavar and its
    help."""
    words = line.removeprefix("│").replace("*", " ").split()
    names: list[str] = []
    for word in words if words and words[0].startswith("--") else []:
        if not word.startswith("-"):
            break
        flag = re.fullmatch(r"--\[no-\]([\w-]+)", word)
        names += [f"--{flag[1]}", f"--no-{flag[1]}"] if flag else word.split(",")
    return names


def test_every_command_and_subcommand_has_its_section(reference: str) -> None:
    sections = _sections(reference)
    report_commands = re.findall(r"^│ (\w+)\s", _help("report").split("Commands")[1], re.M)
    expected = {
        "agent-replay",
        *(f"agent-replay {name}" for name in COMMANDS),
        *(f"agent-replay report {name}" for name in report_commands),
    }
    assert report_commands == ["schema", "html"]
    assert set(sections) == expected


@pytest.mark.parametrize("command", [("show",), ("list",), ("attribute",), ("report", "html")])
def test_a_section_says_what_help_says(reference: str, command: tuple[str, ...]) -> None:
    """The options, their defaults and the help's first sentence, as ``--help`` prints them."""
    section = _sections(reference)[" ".join(("agent-replay", *command))]
    printed = _help(*command)
    options = {name for line in printed.splitlines() for name in _option_names(line)}
    in_table = set(re.findall(r"^\| `([^`]*)`", section, re.MULTILINE))
    rows = [set(re.findall(r"(?<!\S)-[\w-]+", row)) for row in in_table]
    rows = [names for names in rows if names]  # the arguments have none
    # the help shows each option under one name (issue 41), the page under all of them
    assert options <= set().union(*rows)
    assert all(names & options for names in rows), [names for names in rows if not names & options]
    shown = _unescape(section)
    for default in re.findall(r"\[default: [^\]]+\]", printed):
        assert default in shown
    usage = re.search(r"Usage: (.+?)\s*$", printed, re.MULTILINE)
    assert usage is not None and f"```text\n{usage.group(1)}\n```" in section
    for example in re.findall(r"^\s*Example: (.+?)\s*$", printed, re.MULTILINE):
        assert f"Example:\n\n```text\n{example}\n```" in section
    first_words = " ".join(printed.split("Usage:")[1].splitlines()[2].split()[:6])
    assert first_words in " ".join(shown.split())


@pytest.mark.parametrize(
    "text",
    [
        "Replace matching text with [REDACTED] (repeatable): *not* bold, __init__ as it is.",
        "# not a heading; <b>not HTML</b> & not an entity: &amp;",
        "- not a list item, a|pipe in a table, `not code`, \\ a backslash",
        "1. not a numbered item; > not a quote; + not a bullet",
    ],
)
def test_text_is_shown_as_it_is(text: str) -> None:
    """A help text goes through Python-Markdown, in a table cell too, and comes out unchanged."""
    markdown = pytest.importorskip("markdown", reason="the docs extra: pip install -e '.[docs]'")
    escape = _hook().escape
    paragraph = markdown.markdown(escape(text), extensions=["tables"])
    assert html.unescape(re.sub(r"</?p>", "", paragraph)) == text
    table = markdown.markdown(
        f"| A | B |\n| --- | --- |\n| x | {escape(text)} |", extensions=["tables"]
    )
    cell = re.search(r"<td>x</td>\s*<td>(.*)</td>", table, re.DOTALL)
    assert cell is not None and html.unescape(cell.group(1)) == text


def test_an_example_in_a_help_is_a_code_block() -> None:
    """An indented paragraph or one marked ``\\b`` keeps its lines, as --help prints them."""
    help_text = _hook()._help
    text = (
        "Show a run.\n\nFor example:\n\n    agent-replay show incident-fail\n    agent-replay list"
    )
    assert help_text(text, "rich") == [
        "Show a run.",
        "",
        "For example:",
        "",
        "```text",
        "agent-replay show incident-fail\nagent-replay list",
        "```",
        "",
    ]
    marked = help_text("Two lines:\n\n\b\nkeep *this*\nas it is [bold]x[/bold]", "rich")
    assert marked[2:5] == ["```text", "keep *this*\nas it is x", "```"]


def test_an_example_epilog_is_a_command_to_copy() -> None:
    epilog = _hook()._epilog
    assert epilog("Example: agent-replay show incident-fail", "rich") == [
        "Example:",
        "",
        "```text",
        "agent-replay show incident-fail",
        "```",
        "",
    ]
    assert epilog("See the *docs*.", "rich") == ["See the \\*docs\\*.", ""]


def test_a_code_span_keeps_pipes_and_backticks_in_a_table() -> None:
    markdown = pytest.importorskip("markdown", reason="the docs extra: pip install -e '.[docs]'")
    code = _hook()._code
    for text in ["--format <a|b|c>", "`quoted`", "x``y"]:
        table = markdown.markdown(
            f"| A | B |\n| --- | --- |\n| {code(text)} | d |", extensions=["tables"]
        )
        cell = re.search(r"<td><code>(.*?)</code></td>", table)
        assert cell is not None and html.unescape(cell.group(1)) == text


def test_the_api_page_documents_every_export_once() -> None:
    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^::: otel_replay\.(\w+)$", page, re.MULTILINE)
    assert sorted(documented) == sorted(otel_replay.__all__)
    assert len(documented) == len(set(documented))
