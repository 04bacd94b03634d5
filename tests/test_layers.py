"""docs/architecture.md's floors: each layer imports only the layers below it, every room of the
package is on a floor and every room a floor names exists; CLI commands are thin; plan identities are
made in one place."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "otel_replay"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def design_floors(text: str) -> list[tuple[str, ...]]:
    """The floors of the drawing under "## Layers", lowest first: the first column of each line of
    its fenced block (rooms parted by ``·``; two spaces part them from the description)."""
    section = text[text.index("## Layers") :]
    block = section.split("```")[1]
    floors = []
    for line in block.strip("\n").splitlines():
        names = line.split("  ")[0]
        floors.append(tuple(name.strip().rstrip("/") for name in names.split("·")))
    return floors[::-1]


LAYERS = design_floors(ARCHITECTURE.read_text())


def _layer(component: str) -> int:
    for rank, members in enumerate(LAYERS):
        if component in members:
            return rank
    raise AssertionError(
        f"otel_replay.{component} is on no floor of docs/architecture.md; add it to the drawing"
    )


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


def test_every_room_the_drawing_names_exists() -> None:
    rooms = {_component(path) for path in PACKAGE.rglob("*.py")}
    named = {room for floor in LAYERS for room in floor}
    assert sorted(named - rooms) == []
    assert len(LAYERS) >= 10  # the drawing was read, not an empty block


def test_every_room_is_on_a_floor() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != PACKAGE / "__init__.py":
            _layer(_component(path))


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
_PLAN_PREFIXES = ("ablate_from:", "coalition:", "fault:", "forced:", "repair-baseline:")


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


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _faces() -> dict[str, dict[str, str]]:
    """Each package's names and the module its ``__init__`` imports each from (lazily or not)."""
    faces = {}
    for path in PACKAGE.rglob("__init__.py"):
        faces[_module(path)] = {
            alias.asname or alias.name: node.module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            for alias in node.names
        }
    return faces


def _imported(node: ast.ImportFrom, faces: dict[str, dict[str, str]]) -> set[str]:
    """The modules an import loads: a name imported from a package's face (its user API, or
    what it lends the other floors) is counted as imported from the module that defines it."""
    found = set()
    for alias in node.names:
        module = node.module
        while module in faces and alias.name in faces[module]:
            module = faces[module][alias.name]
        found.add(str(module))
    return found


def test_no_module_imports_itself_round_a_circle() -> None:
    """Inside a floor as between floors: the rooms' imports (type-only ones too) form no cycle. A
    package's ``__init__`` re-exports lazily and is left out; a name imported from it counts as
    imported from its module."""
    modules = {_module(path): path for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}
    faces = _faces()
    graph = {
        name: {
            module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module
            for module in _imported(node, faces)
            if module in modules
        }
        for name, path in modules.items()
    }
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target] if target in path else [name, target]
            if target not in state and (found := walk(target, [*path, target])):
                return found
        state[name] = 2
        return None

    for name in sorted(graph):
        if name not in state:
            assert walk(name, [name]) is None


def test_no_module_of_the_package_is_over_600_lines() -> None:
    """A room a newcomer can hold in their head: past 600 lines it has grown a second job."""
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > 600
    }
    assert long == {}
