"""The command blocks of the documentation pages, read as `tests/test_docs_commands.py` runs them.

A fenced block whose language is ``sh`` is a runnable shell block: each non-empty line is one
command (a line ending in ``\\`` continues on the next; a line that is only a ``# comment`` is not a
command). HTML comments right before the block (blank lines allowed between) are its markers:

* ``<!-- not run: REASON -->``: the block is not run, and REASON says why (a block not run without
  a reason is a problem of the page);
* ``<!-- expect: TEXT -->``, one or more: TEXT appears in the block's output (stdout and stderr;
  runs of whitespace compare as one space, so a wrapped line still matches);
* ``<!-- exit: N -->``: the exit code of the block's last command (every other command exits 0);
* ``<!-- needs: openai -->``: a local OpenAI-compatible server is started for the block.

Anything that looks like a marker but is not one (an unknown name, a marker with no value, a marker
before a block in another language or before no block at all) is a problem of the page too: a
typo must not quietly turn a checked block into an unchecked one.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

MARKERS = ("not run", "expect", "exit", "needs")
NEEDS = ("openai",)  # what a `needs:` marker may ask for
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_COMMENT = re.compile(r"^\s*<!--(?P<body>.*?)-->\s*$")
_MARKER = re.compile(r"^(?P<name>[a-z][a-z -]*?)\s*:\s*(?P<value>.*)$", re.DOTALL)
_MARKER_WORDS = re.compile(r"^(not run|expect|exit|needs)\b")


@dataclass(frozen=True)
class Command:
    """One command of a block: its text as bash gets it (continuations joined) and its line."""

    line: int
    text: str


@dataclass(frozen=True)
class Block:
    """One ``sh`` block of a page with what its markers say."""

    page: str
    line: int  # the opening fence's line, 1-based
    commands: tuple[Command, ...]
    not_run: str | None = None  # the reason, when the block is not run
    expect: tuple[str, ...] = ()
    exit_code: int = 0
    needs: tuple[str, ...] = ()

    @property
    def runs(self) -> bool:
        return self.not_run is None


@dataclass
class Page:
    """A page's ``sh`` blocks in page order, and what is wrong with its markers."""

    name: str  # as a failure names it: the path from the repository root
    blocks: list[Block] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class _Markers:
    line: int = 0  # where the first marker was, for a marker that precedes no block
    not_run: str | None = None
    expect: list[str] = field(default_factory=list)
    exit_code: int | None = None
    needs: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.line)


def read_page(path: Path, name: str) -> Page:
    """The page at ``path``, called ``name`` in what it reports."""
    return parse_page(path.read_text(encoding="utf-8"), name)


def parse_page(text: str, name: str) -> Page:
    """The ``sh`` blocks of a markdown text and the problems of its markers."""
    page = Page(name)
    lines = text.splitlines()
    markers = _Markers()
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        opening = _FENCE.match(line)
        if opening:
            number = _fenced(page, lines, number, opening, markers)
            markers = _Markers()
            continue
        comment = _COMMENT.match(line)
        if comment:
            _marker(page, markers, comment["body"].strip(), number)
        elif line.lstrip().startswith("<!--") and _MARKER_WORDS.match(line.lstrip()[4:].lstrip()):
            page.problems.append(f"{name}:{number}: a marker must be on one line, '-->' included")
        elif line.strip() and markers.any:
            page.problems.append(f"{name}:{markers.line}: markers that precede no block")
            markers = _Markers()
    if markers.any:
        page.problems.append(f"{name}:{markers.line}: markers that precede no block")
    return page


def _fenced(
    page: Page, lines: list[str], number: int, opening: re.Match[str], markers: _Markers
) -> int:
    """Read the block whose fence is on line ``number`` (1-based); the line after its closing fence."""
    start, fence, indent = number, opening["fence"], len(opening["indent"])
    info = opening["info"].split()
    language = info[0].lower() if info else ""
    body: list[str] = []
    while number < len(lines):
        line = lines[number]
        number += 1
        stripped = line.strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            break
        body.append(line[indent:] if line[:indent].isspace() else line.lstrip())
    else:
        page.problems.append(f"{page.name}:{start}: a ``` block that is never closed")
    if language != "sh":
        if markers.any:
            page.problems.append(
                f"{page.name}:{markers.line}: markers before a block in {language or 'no language'!r}"
                " (only ```sh blocks are run)"
            )
        return number
    commands = _commands(body, start + 1)
    if not commands:
        page.problems.append(f"{page.name}:{start}: an sh block with no command")
    page.blocks.append(
        Block(
            page.name,
            start,
            commands,
            not_run=markers.not_run,
            expect=tuple(markers.expect),
            exit_code=0 if markers.exit_code is None else markers.exit_code,
            needs=tuple(markers.needs),
        )
    )
    return number


def _commands(body: list[str], first_line: int) -> tuple[Command, ...]:
    """The commands of a block's lines: continuations joined, comment-only lines left out."""
    commands: list[Command] = []
    pending: list[str] = []
    pending_line = first_line
    for offset, line in enumerate(body):
        if not pending:
            pending_line = first_line + offset
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        commands.append(Command(pending_line, " ".join(p.strip() for p in pending)))
        pending = []
    if pending:
        commands.append(Command(pending_line, " ".join(p.strip() for p in pending)))
    return tuple(commands)


def _marker(page: Page, markers: _Markers, body: str, number: int) -> None:
    """Take one HTML comment into ``markers``, or note why it is not a marker."""
    where = f"{page.name}:{number}"
    found = _MARKER.match(body)
    if not found:
        if _MARKER_WORDS.match(body):
            page.problems.append(f"{where}: {body!r} needs a colon and a value ('{body}: …')")
        return  # an ordinary comment
    name, value = found["name"].strip(), found["value"].strip()
    if name not in MARKERS:
        if difflib.get_close_matches(name, MARKERS, cutoff=0.6):  # `expects:`, `not-run:`: a typo
            page.problems.append(f"{where}: {name!r} is not a marker; known: {', '.join(MARKERS)}")
        return
    markers.line = markers.line or number
    if not value:
        says = "why the block is not run" if name == "not run" else "a value"
        page.problems.append(f"{where}: '{name}:' without {says}")
    elif name == "not run":
        markers.not_run = value
    elif name == "expect":
        markers.expect.append(value)
    elif name == "exit":
        if not value.isdigit() or markers.exit_code is not None:
            page.problems.append(f"{where}: exit: {value!r} (one exit code, a whole number)")
        else:
            markers.exit_code = int(value)
    elif value not in NEEDS:
        page.problems.append(f"{where}: needs: {value!r}; known: {', '.join(NEEDS)}")
    else:
        markers.needs.append(value)
