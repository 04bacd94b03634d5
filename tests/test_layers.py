"""DESIGN §3: each layer imports only the layers below it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "otel_replay"

# lowest first; a module may import its own layer and those before it
LAYERS: list[set[str]] = [
    {"errors", "hashing", "model", "otlp_encode"},
    {"importers"},
    {"store", "export"},
    {"frame", "resamplers"},
    {"replay"},
    {"attribution"},
    {"report"},
    {"cli", "__main__"},
]


def _layer(component: str) -> int:
    for rank, members in enumerate(LAYERS):
        if component in members:
            return rank
    raise AssertionError(f"otel_replay.{component} is in no layer; add it to LAYERS")


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
