"""Exports a package loads when first asked for them (PEP 562), so a command pays only for what it uses.

``agent-replay list`` needs the store and a table, not the attribution engine or the OTLP decoders;
with every package ``__init__`` importing all of its modules, it paid for them all before printing a
line. A lazy package keeps its imports, under ``if TYPE_CHECKING:`` (what type checkers and readers
see), and its ``__all__``; `lazy_exports` reads that block from the package's source and gives the
package a module ``__getattr__`` that imports an export's module on first use, so ``from
otel_replay.attribution import attribute`` behaves exactly as before.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def _type_checking_imports(source: str) -> dict[str, str]:
    """Each name a module imports inside ``if TYPE_CHECKING:``, and the module it comes from."""
    where: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    module = "." * statement.level + statement.module
                    where.update({alias.asname or alias.name: module for alias in statement.names})
    return where


def lazy_exports(
    package: str, exports: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, loading each of ``exports`` (its ``__all__``,
    and its ``__inside__``: what it lends the package's other floors) from the module its ``if
    TYPE_CHECKING:`` block imports it from."""
    module = sys.modules[package]
    where = _type_checking_imports(Path(str(module.__file__)).read_text(encoding="utf-8"))
    missing = sorted(set(exports) - set(where))
    if missing:  # a programming error, caught by any test that imports the package
        raise ImportError(f"{package}: {missing} in __all__ but not imported under TYPE_CHECKING")

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name], package), name)
        setattr(module, name, value)  # later lookups find it and never come back here
        return value

    def __dir__() -> list[str]:
        return sorted({*where, *vars(module)})

    return __getattr__, __dir__
