"""The local fake model servers of `scripts/frameworks/fake_models.py`, loaded once for the tests
that serve real SDK clients from them (the script is not a package, so it is loaded by path)."""

from __future__ import annotations

import importlib.util
from functools import cache
from types import ModuleType

from tests.conftest import ROOT


@cache
def fake_models() -> ModuleType:
    path = ROOT / "scripts" / "frameworks" / "fake_models.py"
    spec = importlib.util.spec_from_file_location("fake_models_for_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
