"""DESIGN §3: each layer imports only the layers below it, in DESIGN's order; CLI commands are thin;
plan identities are made in one place."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "otel_replay"
DESIGN = ROOT.parent / "shared" / "DESIGN.md"

# DESIGN §3's floors, lowest first, exactly as DESIGN draws them (a floor not built yet is listed too).
LAYERS: list[tuple[str, ...]] = [
    ("model", "hashing", "errors"),
    ("store",),
    ("importers",),
    ("ingest",),
    ("resamplers",),
    ("executors",),
    ("replay",),
    ("attribution",),
    ("fleet",),
    ("report",),
    ("cli",),
]

# Modules DESIGN does not name, and the floor they live on (the floor of the named component).
RESIDENTS = {
    "frame": "store",  # a polars view of the store's steps
    "otlp_encode": "importers",  # the OTLP wire format, written rather than read
    "export": "importers",  # the native JSONL format, written rather than read
    "__main__": "cli",
    "messages": "model",  # a model turn's reply in the store's shape, from what SDKs return
    "_lazy": "model",  # lazy package exports (PEP 562): the standard library only
    "receiver": "ingest",  # `serve`'s OTLP/HTTP receiver: the library under the command
    "pytest_plugin": "cli",  # agent runs as pytest cassettes: a front end, like the command
    "viewer": "report",  # `ui`'s pages over the store: a front end over the report's pages
}


def _layer(component: str) -> int:
    component = RESIDENTS.get(component, component)
    for rank, members in enumerate(LAYERS):
        if component in members:
            return rank
    raise AssertionError(f"otel_replay.{component} is in no layer; add it to LAYERS or RESIDENTS")


def _component(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def test_layers_import_downward_only() -> None:
    violations = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py" and path.parent == PACKAGE:
            continue  # the package root re-exports the public surface
        own = _layer(_component(path))
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("otel_replay.")
            ):
                target = node.module.split(".")[1]
                if _layer(target) > own:
                    violations.append(f"{path.relative_to(PACKAGE)} imports otel_replay.{target}")
    assert violations == []


def _design_floors(text: str) -> list[tuple[str, ...]]:
    """The floors of DESIGN §3's drawing, lowest first: the first column of the fenced block."""
    section = text[text.index("## 3. Layers") :]
    block = section.split("```")[1]
    floors = []
    for line in block.strip("\n").splitlines():
        names = line.split("  ")[0]  # two spaces part a floor's names from its description
        floors.append(tuple(name.strip().rstrip("/") for name in names.split("·")))
    return floors[::-1]


def test_layers_are_designs_floors() -> None:
    if not DESIGN.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"DESIGN.md missing at {DESIGN} (CI must have ../shared beside the clone)")
        pytest.skip(f"DESIGN.md not found at {DESIGN}")
    assert _design_floors(DESIGN.read_text()) == LAYERS


def _functions(path: Path) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]


def test_cli_commands_are_thin() -> None:
    """A command parses, calls one library function and renders: its body stays under 40 lines."""
    long = {
        f"{path.name}:{function.name} ({function.end_lineno - function.body[0].lineno + 1} lines)"
        for path in sorted((PACKAGE / "cli").glob("*.py"))
        for function in _functions(path)
        if function.name.endswith("_command")
        and function.end_lineno is not None
        and function.end_lineno - function.body[0].lineno + 1 >= 40
    }
    assert long == set()


# The prefixes `otel_replay.replay.Plan` gives identities; nothing else spells them.
_PLAN_PREFIXES = ("ablate_from:", "coalition:", "forced:", "repair-baseline:")


def test_plan_identities_are_made_only_by_plan() -> None:
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "replay" / "_plan.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith(_PLAN_PREFIXES)
            ):
                spelled.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}")
    assert spelled == []
