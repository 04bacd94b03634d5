"""``agent-replay lint ID...`` and ``lint --where FILTER``: stored runs checked as trace files are
(issue 38: lint read files only). A target that exists as a path is a file; anything else is a
stored run's id or unique prefix."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

LINT = ROOT / "examples" / "lint"
CUT = "ecab7809e619649d8a152f8416325132"  # examples/lint/cut.otlp.jsonl: partial
BARE = "c42ac228fbf833e514fce8a747983b1b"  # examples/lint/no-content.otlp.jsonl: not-replayable


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lint") / "store.db"
    ok(invoke(CliRunner(), path, "import", str(SAMPLES), str(LINT)))
    return path


def _json(store: Path, *args: str) -> tuple[int, list[dict[str, object]]]:
    result = invoke(CliRunner(), store, "lint", "--json", *args)
    return result.exit_code, orjson.loads(result.stdout)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_stored_run_gets_the_verdict_and_reasons_its_file_gets(store: Path) -> None:
    before = _digest(store)
    code, stored = _json(store, CUT[:8])
    assert code == 0  # partial: it can still be attributed
    _, from_file = _json(store, str(LINT / "cut.otlp.jsonl"))
    (run,) = stored
    assert run["path"] is None and run["stored"] is True and run["trajectory_id"] == CUT
    assert run["verdict"] == "partial"
    assert {k: v for k, v in run.items() if k not in ("path", "stored")} == {
        k: v for k, v in from_file[0].items() if k not in ("path", "stored")
    }
    assert from_file[0]["stored"] is False
    assert _digest(store) == before  # read only


def test_the_gate_applies_to_stored_runs(store: Path) -> None:
    runner = CliRunner()
    assert invoke(runner, store, "lint", CUT, "--fail-on", "partial").exit_code == 1
    failed = invoke(runner, store, "lint", BARE)
    assert failed.exit_code == 1
    assert "not-replayable" in failed.stdout and "step 1 (tool search_logs)" in failed.stdout
    assert "0 replayable, 0 partial, 1 not-replayable" in failed.stdout


def test_where_checks_the_runs_a_filter_chooses(store: Path) -> None:
    code, runs = _json(store, "--where", "replayability != replayable")
    assert code == 1  # one of them cannot be attributed
    assert sorted(str(r["trajectory_id"]) for r in runs) == sorted([CUT, BARE])
    code, runs = _json(store, "--where", "format = jsonl")
    assert code == 0 and runs and all(r["verdict"] == "replayable" for r in runs)
    # a run named and chosen by the filter too is checked once; files come first
    code, runs = _json(store, str(LINT / "no-content.otlp.jsonl"), CUT, "--where", f"id^{CUT[:6]}")
    assert [(r["stored"], r["trajectory_id"]) for r in runs] == [(False, BARE), (True, CUT)]


def test_a_path_that_exists_is_a_file_whatever_the_store_holds(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(LINT / "no-content.otlp.jsonl", tmp_path / CUT)  # a file named as a stored run
    monkeypatch.chdir(tmp_path)
    code, runs = _json(store, CUT)
    assert code == 1
    assert [(r["path"], r["trajectory_id"]) for r in runs] == [(CUT, BARE)]


def test_what_names_nothing_is_one_line(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    assert one_line_error(invoke(runner, store, "lint", "nosuch")) == (
        f"error: nosuch is no file or directory, and no run in {store} has an id that starts "
        "with it"
    )
    assert "is ambiguous" in one_line_error(invoke(runner, store, "lint", "incident"))
    missing = tmp_path / "none.db"
    assert one_line_error(invoke(runner, missing, "lint", "abc")) == (
        f"error: abc is no file or directory, and there is no store at {missing} to look it up in"
    )
    assert not missing.exists()
    assert one_line_error(invoke(runner, store, "lint")) == (
        "error: lint needs trace files, stored run ids or --where FILTER"
    )
    assert one_line_error(invoke(runner, store, "lint", "--where", "steps >")).startswith(
        "error: --where 'steps >'"
    )
