"""Shared fixtures: the published trace corpus beside the project, the bundled samples, a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "trace-corpus"
SAMPLES = ROOT / "sample_traces"


@pytest.fixture
def corpus() -> Path:
    """``../shared/trace-corpus``: required in CI, skipped with a reason elsewhere."""
    if not CORPUS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(
                f"trace corpus missing at {CORPUS} (CI must have ../shared beside the clone)"
            )
        pytest.skip(f"trace corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()
