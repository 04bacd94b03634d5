"""One word, one meaning (issue 41): the old spellings still work for a release, each with one
note on stderr, and the new ones work without it. ``attribute --html FILE`` is ``--out
FILE.html`` (an ``--out`` file's format is its suffix), ``--json-out`` is ``--out``, ``sweep
--rollouts`` (a per-cell maximum) is ``--max-rollouts``, ``fork --output`` is ``--value``, and the
attribution strategy ``sweep`` is ``fixed``, so "sweep" names the fragility command alone."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner, Result

from otel_replay.attribution import AttributionConfig, Strategy
from otel_replay.attribution._config import config_digest
from otel_replay.cli._renamed import modernize
from otel_replay.report import REPORT_SCHEMA
from otel_replay.resamplers import UserCode
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

TOOLS = ("--resamplers", str(ROOT / "examples" / "incident" / "tools.py"))
FIXED = (*TOOLS, "--rollouts", "2")  # two rollouts per plan: cheap
SWEEP = (*TOOLS, "--success-if", "v841", "--faults", "empty", "--steps", "list_deploys")


@pytest.fixture
def samples(runner: CliRunner, store_path: Path) -> Path:
    ok(invoke(runner, store_path, "import", str(SAMPLES)))
    return store_path


def _notes(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("note: ")]


def _one_note(result: Result, *words: str) -> None:
    notes = _notes(result)
    assert len(notes) == 1, result.stderr
    assert all(word in notes[0] for word in words), notes
    assert notes[0].endswith("(the old spelling goes in a later release)")


def test_attribute_html_is_out_with_a_page_suffix(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    old, new = tmp_path / "old.page", tmp_path / "new.html"
    said = ok(invoke(runner, samples, "attribute", "incident-fail", *FIXED, "--html", str(old)))
    _one_note(said, "--html is now --out FILE.html")
    assert old.read_text().lower().startswith("<!doctype html>")  # a page, whatever its name
    said = ok(invoke(runner, samples, "attribute", "incident-fail", *FIXED, "--out", str(new)))
    assert _notes(said) == []
    assert new.read_text().lower().startswith("<!doctype html>")


def test_out_is_repeatable_and_its_suffix_says_the_format(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    page, report = tmp_path / "r.HTML", tmp_path / "r.json"
    args = ("attribute", "incident-fail", *FIXED, "--out", str(page), "--out", str(report))
    assert _notes(ok(invoke(runner, samples, *args))) == []
    assert page.read_text().lower().startswith("<!doctype html>")
    assert json.loads(report.read_text())["config"]["strategy"] == "fixed"
    two = ("--out", str(tmp_path / "a.json"), "--out", str(tmp_path / "b.out"))
    line = one_line_error(invoke(runner, samples, "attribute", "incident-fail", *FIXED, *two))
    assert "a.json and --out" in line and "one JSON report at most" in line
    assert not (tmp_path / "a.json").exists()


def test_attribute_json_out_is_out(runner: CliRunner, samples: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    said = ok(
        invoke(runner, samples, "attribute", "incident-fail", *FIXED, "--json-out", str(report))
    )
    _one_note(said, "--json-out is now --out")
    assert json.loads(report.read_text())["trajectory_id"] == "incident-fail"


def test_the_strategy_sweep_is_fixed(runner: CliRunner, samples: Path, tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    args = ("attribute", "incident-fail", *TOOLS, "--rollouts", "2")
    said = ok(invoke(runner, samples, *args, "--strategy", "sweep", "--out", str(old)))
    _one_note(said, "--strategy sweep is now --strategy fixed")
    said = ok(invoke(runner, samples, *args, "--strategy=fixed", "--out", str(new)))
    assert _notes(said) == []
    for path in (old, new):
        assert json.loads(path.read_text())["config"]["strategy"] == "fixed"


def test_sweep_rollouts_is_max_rollouts(runner: CliRunner, samples: Path, tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    said = ok(invoke(runner, samples, "sweep", "incident-pass", *SWEEP, "--rollouts", "3", "--out", str(old)))  # fmt: skip
    _one_note(said, "--rollouts is now --max-rollouts")
    said = ok(invoke(runner, samples, "sweep", "incident-pass", *SWEEP, "--max-rollouts", "3", "--out", str(new)))  # fmt: skip
    assert _notes(said) == []
    for path in (old, new):
        report = json.loads(path.read_text())
        assert report["config"]["max_rollouts"] == 3
        assert "--max-rollouts 3" in report["rerun"]  # the command that makes it again


def test_sweep_html_is_out(runner: CliRunner, samples: Path, tmp_path: Path) -> None:
    page = tmp_path / "map.html"
    args = ("sweep", "incident-pass", *SWEEP, "--max-rollouts", "2", "--html", str(page))
    _one_note(ok(invoke(runner, samples, *args)), "--html is now --out FILE.html")
    assert page.read_text().lower().startswith("<!doctype html>")


def test_fork_output_is_value(runner: CliRunner, samples: Path) -> None:
    args = ("fork", "incident-fail", "--at", "3", *TOOLS, "--json")
    old = ok(invoke(runner, samples, *args, "--output", "[]"))
    _one_note(old, "--output is now --value")
    new = ok(invoke(runner, samples, *args, "--value", "[]"))
    assert _notes(new) == []
    assert json.loads(old.stdout)["id"] == json.loads(new.stdout)["id"]  # the same fork
    line = one_line_error(invoke(runner, samples, "fork", "incident-fail", "--at", "3", "--value", "{bad"))  # fmt: skip
    assert line.startswith("error: --value '{bad' is not JSON")


def test_an_old_spelling_is_read_only_where_an_option_can_be() -> None:
    takes_value = {"--success-if", "--html", "--out", "--strategy", "--rollouts"}
    # a value that looks like an old option stays a value; so does everything after --
    args = ["--success-if", "--html", "--html=x.html", "--", "--html"]
    assert modernize("attribute", args, takes_value) == args
    assert modernize("attribute", ["--strategy", "sweep"], takes_value) == ["--strategy", "fixed"]
    assert modernize("attribute", ["--rollouts", "3"], takes_value) == ["--rollouts", "3"]
    assert modernize("sweep", ["--rollouts=3"], takes_value | {"--max-rollouts"}) == [
        "--max-rollouts=3"
    ]
    assert modernize("list", ["--html", "x"], takes_value) == ["--html", "x"]


def test_the_strategy_keeps_its_old_name_in_python_and_in_the_questions_digest() -> None:
    assert Strategy.SWEEP is Strategy.FIXED
    assert [s.value for s in Strategy] == ["adaptive", "scan", "fixed"]
    with pytest.warns(DeprecationWarning, match="'fixed'"):
        assert Strategy("sweep") is Strategy.FIXED
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Strategy("fixed") is Strategy.FIXED
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=20)
    # the canonical form keys the stored reports: a question asked as "sweep" is asked again
    assert config.canonical()["strategy"] == "sweep"
    assert config_digest(config, UserCode()) == config_digest(config, UserCode())
    assert config.flags()[config.flags().index("--strategy") + 1] == "fixed"


def test_a_report_written_with_the_old_name_still_reads(
    runner: CliRunner, samples: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    ok(invoke(runner, samples, "attribute", "incident-fail", *FIXED, "--out", str(report)))
    data = json.loads(report.read_text())
    Draft202012Validator(REPORT_SCHEMA).validate(data)
    data["config"]["strategy"] = "sweep"  # as reports were written before
    Draft202012Validator(REPORT_SCHEMA).validate(data)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    page = tmp_path / "old.html"
    ok(invoke(runner, samples, "report", "html", str(old), "--out", str(page)))
    assert "sweep" in page.read_text()
