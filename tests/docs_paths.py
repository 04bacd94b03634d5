"""What the documented commands name, checked without running them: every file they read is one
the repository ships, and no runnable command keeps a placeholder where a real id belongs.

A command's arguments are read as bash splits them. An argument is a path when it has a ``/`` or a
file suffix (``examples/incident/agent.py:investigate`` is the file before the colon); ``python -m
examples.incident.fleet`` names a module of the repository's. URLs, JSON, options, ``$VARIABLES``,
absolute paths and globs are not paths here. A path a command writes (``--out``, ``--html``,
``--otlp-out``, the ``--store`` of ``import``, ``record`` or ``serve``, a ``>`` redirection, ``mkdir``, ``gzip -k``, ``python -m venv``) is made, so later commands of
the page may read it, and so may the store folder ``.agent-replay`` any command makes.

A runnable block runs in a folder that holds copies of `COPIED` only, so what it reads must be in
one of them; a block that is not run is checked against the whole repository.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from tests.docs_pages import Block, Command, Page

#: What a page's folder holds, copied from the repository (the fixtures: the formats table of
#: docs/importing.md reads one file of each format, made by the real library).
COPIED = ("sample_traces", "examples", "tests/fixtures")
SUFFIXES = {
    ".csv", ".db", ".gz", ".html", ".json", ".jsonl", ".md", ".parquet", ".pb", ".py", ".toml",
    ".txt", ".yaml", ".yml", ".zst",
}  # fmt: skip
WRITES = {"--out", "--html", "--otlp-out", "-o"}  # options whose value is a file the command writes
STORE_MAKERS = {
    "import",
    "record",
    "serve",
}  # the commands whose --store is made when it is not there
REDIRECTS = {">", ">>"}
ALWAYS_MADE = (
    PurePosixPath(".agent-replay"),
)  # the store's folder, made by any agent-replay command
_OPERATORS = {"&&", "||", "|", ";", "&", "(", ")"}
_MAKERS = {"mkdir": "{}", "gzip": "{}.gz"}  # commands whose arguments name what they make
#: The file a command writes when no --out names another.
_DEFAULT_OUT = {("agent-replay", "init"): "agent-replay.toml"}
_PLACEHOLDER = re.compile(
    r"^(?:[A-Z][A-Z_]*_)?ID$"
)  # ID, FORK_ID, PASSING_ID: a sample's id belongs there
_NOT_A_PATH = re.compile(r"^(-|\$|\{|\[|<|/|~)|://|[*?\s]")
_FUNCTION = re.compile(r"^(?P<file>.+\.py):[A-Za-z_][\w.]*$")  # file.py:function


def shipped_files(root: Path) -> set[PurePosixPath]:
    """The files git tracks under ``root`` and their folders (every file, outside a git checkout)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True
        ).stdout.decode()
        files = [PurePosixPath(name) for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        files = [PurePosixPath(p.relative_to(root).as_posix()) for p in root.rglob("*")]
    found = set(files)
    for file in files:
        found.update(file.parents)
    return found


def unshipped(page: Page, shipped: set[PurePosixPath]) -> list[str]:
    """A sentence for every path a command of the page reads that is neither shipped (for a
    runnable block: in a copied folder) nor made by an earlier command of the page."""
    problems: list[str] = []
    made_by_runs: set[PurePosixPath] = set(ALWAYS_MADE)
    made_by_any: set[PurePosixPath] = set(ALWAYS_MADE)
    for block in page.blocks:
        made = made_by_runs if block.runs else made_by_any
        for command in block.commands:
            words = split(command)
            if words is None:
                problems.append(f"{page.name}:{command.line}: `{command.text}` does not parse")
                continue
            writes = set(_writes(words))
            for path in dict.fromkeys(_reads(words)):  # a file named twice is said once
                if _under(path, made | writes):
                    continue
                problem = _not_there(path, shipped, block)
                if problem:
                    problems.append(f"{page.name}:{command.line}: `{command.text}` {problem}")
            made_by_any.update(writes)
            if block.runs:
                made_by_runs.update(writes)
    return problems


def placeholders(block: Block) -> Iterator[str]:
    """Each placeholder of a runnable block: an ``ID`` a sample's real id belongs in, an optional
    part in brackets (``[--json]``) that bash would pass as it stands."""
    for command in block.commands:
        for word in split(command) or []:
            if _PLACEHOLDER.match(word):
                yield f"{block.page}:{command.line}: `{command.text}` has the placeholder {word}"
            elif word.startswith("[-") and word.endswith("]"):
                yield f"{block.page}:{command.line}: `{command.text}` has the optional {word}"


def split(command: Command) -> list[str] | None:
    """The command's words as bash splits them, operators apart and the ``# comment`` left out;
    None when its quotes do not close."""
    lexer = shlex.shlex(command.text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:
        return None


def is_background(command: Command) -> bool:
    """Whether the command ends in ``&``: a server the page's later commands talk to."""
    words = split(command) or [""]
    return words[-1] == "&"


def _reads(words: list[str]) -> Iterator[PurePosixPath]:
    for index, word in enumerate(words):
        previous = words[index - 1] if index else ""
        if previous == "-m":
            module = _module(word)
            if module is not None:
                yield module
            continue
        path = _path(word.split("=", 1)[1] if "=" in word else word)
        if path is not None:
            yield path


def _writes(words: list[str]) -> Iterator[PurePosixPath]:
    for simple in _simple_commands(words):
        makes = _MAKERS.get(simple[0], "")
        writes = WRITES | ({"--store"} if STORE_MAKERS & set(simple[1:3]) else set())
        default = _DEFAULT_OUT.get((simple[0], simple[1]) if len(simple) > 1 else ())
        if default and not any(w.partition("=")[0] == "--out" for w in simple):
            yield PurePosixPath(default)
        for index, word in enumerate(simple[1:], start=1):
            previous = simple[index - 1]
            option, _, value = word.partition("=")
            if option in writes and value:
                yield PurePosixPath(value)
            elif word.startswith("-"):
                continue
            elif previous in writes | REDIRECTS or previous == "venv":
                yield PurePosixPath(word)
            elif makes:
                yield PurePosixPath(makes.format(word))


def _simple_commands(words: list[str]) -> Iterator[list[str]]:
    """``words`` cut at ``&&``, ``|``, ``;`` and the like, each piece without its ``A=B`` prefixes."""
    piece: list[str] = []
    for word in [*words, ";"]:
        if word in _OPERATORS:
            while piece and "=" in piece[0] and not piece[0].startswith("-"):
                piece.pop(0)
            if piece:
                yield piece
            piece = []
        else:
            piece.append(word)


def _path(word: str) -> PurePosixPath | None:
    if not word or _NOT_A_PATH.search(word) or word in _OPERATORS:
        return None
    function = _FUNCTION.match(word)
    if function:
        word = function["file"]
    path = PurePosixPath(word)
    return path if "/" in word or path.suffix in SUFFIXES else None


def _module(name: str) -> PurePosixPath | None:
    """The file of a ``-m`` module of the repository's (a package's ``__init__.py`` is fine too);
    None for a module of Python's or an installed package's."""
    parts = name.split(".")
    if parts[0] not in (*COPIED, "tests", "scripts", "benchmarks"):
        return None
    return PurePosixPath(*parts).with_suffix(".py")


def _under(path: PurePosixPath, made: set[PurePosixPath]) -> bool:
    return path in made or any(parent in made for parent in path.parents)


def _not_there(path: PurePosixPath, shipped: set[PurePosixPath], block: Block) -> str | None:
    """Why ``path`` cannot be read where the block runs, or None when it can."""
    there = path in shipped or (
        path.suffix == ".py" and path.with_suffix("") / "__init__.py" in shipped
    )
    if not there:
        return f"names {path}, which the repository does not ship"
    if block.runs and not any(path.is_relative_to(name) for name in COPIED):
        copied = ", ".join(f"{name}/" for name in COPIED[:-1]) + f" and {COPIED[-1]}/"
        return (
            f"names {path}, which a page's folder does not hold (only {copied} are copied there): "
            "ship it under examples/"
        )
    return None
