"""``agent-replay attribute`` and ``agent-replay report schema`` through Typer's CliRunner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from otel_replay.cli import app
from otel_replay.report import REPORT_SCHEMA
from tests.attribution.models import BUTTERFLY, CHAIN, SCM
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = orjson.loads(path.read_bytes())
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    return report


@pytest.fixture
def store(runner: CliRunner, store_path: Path) -> Path:
    """A store holding the chain (failed and passing) and the butterfly."""
    files = [CHAIN.jsonl, SCM / "chain_passing.jsonl", BUTTERFLY.jsonl]
    ok(invoke(runner, store_path, "import", *map(str, files)))
    return store_path


def _row(output: str, name: str) -> str:
    (row,) = [line for line in output.splitlines() if f" {name} " in line]
    return row


def test_attribute_prints_the_table_and_the_verdict_and_writes_the_report(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "reports" / "out.json"
    result = ok(
        invoke(
            runner, store, "attribute", "scm-chain", "--resamplers", str(CHAIN.resamplers),
            "--out", str(out),
        )
    )  # fmt: skip
    output = result.stdout
    assert "point of commitment" in output
    assert "◀" in _row(output, "read_config")
    assert "◀" not in _row(output, "plan") and "◀" not in _row(output, "decide")
    assert "observed-only" in _row(output, "audit_log")
    assert "culprit: The failure became inevitable at step 1 (tool read_config)" in output
    assert "report written to" in output
    report = _report(out)
    assert report["trajectory_id"] == "scm-chain"
    assert report["point_of_commitment"] == 1
    assert report["verdict"] == "culprit"
    assert report["config"]["rollouts"] == 100  # the default


def test_attribute_all_methods_with_repair(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.json"
    result = ok(
        invoke(
            runner, store, "attribute", "scm-chain", "--resamplers", str(CHAIN.resamplers),
            "--method", "all", "--repair", "--rollouts", "60", "--permutations", "16",
            "--seed", "3", "--workers", "2", "--out", str(out),
        )
    )  # fmt: skip
    assert "Shapley" in result.stdout
    assert "repair (observe): step 1 returning" in result.stdout  # a tool step: its result
    report = _report(out)
    assert report["config"]["method"] == "all"
    assert (report["config"]["rollouts"], report["config"]["seed"]) == (60, 3)
    assert report["shapley"]["permutations"] == 16
    assert report["repair"]["step_index"] == 1
    assert report["repair"]["output"]["timeout_s"] >= 10
    assert all(s["shapley"] is not None for s in report["steps"] if s["resamplable"])


def test_report_schema_prints_a_valid_draft_2020_12_schema(
    runner: CliRunner, store_path: Path
) -> None:
    result = ok(runner.invoke(app, ["report", "schema"]))
    schema = orjson.loads(result.stdout)
    Draft202012Validator.check_schema(schema)
    assert schema == REPORT_SCHEMA


def test_verifier_option_overrides_the_modules_verifier(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    """Judged on the strategy alone, the butterfly's commitment moves from step 3 to step 1."""
    judge = tmp_path / "strategy_judge.py"
    judge.write_text(
        "def cautious_strategy(trajectory):\n"
        "    chosen = [s for s in trajectory.steps if s.name == 'strategy'][0]\n"
        "    return 1.0 if chosen.output.get('strategy') == 'cautious' else 0.0\n"
    )
    out = tmp_path / "judged.json"
    ok(
        invoke(
            runner, store, "attribute", "scm-butterfly", "--resamplers", str(BUTTERFLY.resamplers),
            "--verifier", f"{judge}:cautious_strategy", "--out", str(out),
        )
    )  # fmt: skip
    report = _report(out)
    assert report["config"]["verifier"].endswith("cautious_strategy")
    assert report["point_of_commitment"] == 1


def test_credit_mode_from_the_command_line(runner: CliRunner, store: Path, tmp_path: Path) -> None:
    out = tmp_path / "credit.json"
    result = ok(
        invoke(
            runner, store, "attribute", "scm-chain-passing", "--resamplers",
            str(CHAIN.resamplers), "--on-success", "credit", "--out", str(out),
        )
    )  # fmt: skip
    assert "save point" in result.stdout
    assert "no-failure" in result.stdout
    report = _report(out)
    assert (report["mode"], report["save_point"]) == ("credit", 1)


def test_unknown_id_is_a_one_line_error(runner: CliRunner, store: Path) -> None:
    line = one_line_error(
        invoke(runner, store, "attribute", "no-such-run", "--resamplers", str(CHAIN.resamplers))
    )
    assert "no-such-run" in line


def test_no_resamplers_is_a_one_line_error_mentioning_resampler(
    runner: CliRunner, store: Path
) -> None:
    line = one_line_error(invoke(runner, store, "attribute", "scm-chain", "--no-entry-points"))
    assert "@resampler" in line


def test_a_module_with_only_a_verifier_is_a_one_line_error_mentioning_resampler(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    judge_only = tmp_path / "judge_only.py"
    judge_only.write_text(
        "from otel_replay import verifier\n\n\n@verifier\ndef judge(trajectory):\n    return 0.0\n"
    )
    line = one_line_error(
        invoke(runner, store, "attribute", "scm-chain", "--resamplers", str(judge_only))
    )
    assert "@resampler" in line


def test_a_passing_run_without_credit_is_a_one_line_error(runner: CliRunner, store: Path) -> None:
    line = one_line_error(
        invoke(
            runner, store, "attribute", "scm-chain-passing", "--resamplers", str(CHAIN.resamplers)
        )
    )
    assert "--on-success credit" in line


def test_an_unloadable_module_is_a_one_line_error(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken_resamplers.py"
    broken.write_text("def broken(:\n")
    line = one_line_error(
        invoke(runner, store, "attribute", "scm-chain", "--resamplers", str(broken))
    )
    assert "broken_resamplers.py" in line


def test_a_resampler_that_raises_is_a_one_line_error_naming_the_step(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    flaky = tmp_path / "flaky_resamplers.py"
    flaky.write_text(
        "from otel_replay import resampler, verifier\n\n\n"
        "@resampler('tool', name='read_config')\n"
        "def read_config(step, ctx):\n"
        "    raise TimeoutError('config server timed out')\n\n\n"
        "@verifier\n"
        "def judge(trajectory):\n"
        "    return 0.0\n"
    )
    line = one_line_error(
        invoke(runner, store, "attribute", "scm-chain", "--resamplers", str(flaky))
    )
    assert "step 1" in line and "read_config" in line
    assert "TimeoutError: config server timed out" in line


def test_the_bundled_sample_names_list_deploys(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    out = tmp_path / "incident.json"
    result = ok(
        invoke(
            runner, store_path, "attribute", "ef2843ff", "--resamplers",
            str(ROOT / "examples" / "incident" / "tools.py"), "--out", str(out),
        )
    )  # fmt: skip
    assert "◀" in _row(result.stdout, "list_deploys")
    report = _report(out)
    assert report["verdict"] == "culprit"
    assert report["point_of_commitment"] == 3
    assert report["steps"][3]["name"] == "list_deploys"


def test_an_inconclusive_run_writes_its_report(
    runner: CliRunner, store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "inconclusive.json"
    result = ok(
        invoke(
            runner, store, "attribute", "scm-butterfly", "--resamplers",
            str(BUTTERFLY.resamplers), "--rollouts", "10", "--seed", "2", "--out", str(out),
        )
    )  # fmt: skip
    assert "inconclusive: Inconclusive at 10 rollouts" in result.stdout
    assert _report(out)["verdict"] == "inconclusive"


def test_success_if_scores_runs_by_their_final_answer(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    """No verifier code: ``--success-if`` replaces the module's verifier, the report names it and
    the command that reproduces it, and the culprit is the same."""
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    out = tmp_path / "incident.json"
    resamplers = str(ROOT / "examples" / "incident" / "tools.py")
    ok(
        invoke(
            runner, store_path, "attribute", "ef2843ff", "--resamplers", resamplers,
            "--success-if", "v8[0-9]1", "--rollouts", "80", "--out", str(out),
        )
    )  # fmt: skip
    report = _report(out)
    assert report["point_of_commitment"] == 3
    assert report["config"]["verifier"] == "builtin.success_if('v8[0-9]1')"
    assert "--success-if 'v8[0-9]1'" in report["config"]["rerun"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--success-if", "v8["], "--success-if 'v8[' is not a regular expression"),
        (["--fail-if", "("], "--fail-if '(' is not a regular expression"),
        (
            [
                "--success-if",
                "v841",
                "--verifier",
                "examples/incident/tools.py:names_the_bad_deploy",
            ],
            "give one of them",
        ),
    ],
    ids=["bad-success-regex", "bad-fail-regex", "two-verifiers"],
)
def test_answer_verifier_mistakes_are_one_line(
    runner: CliRunner, store_path: Path, options: list[str], message: str
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    resamplers = str(ROOT / "examples" / "incident" / "tools.py")
    line = one_line_error(
        invoke(runner, store_path, "attribute", "ef2843ff", "--resamplers", resamplers, *options)
    )
    assert message in line


def test_tools_recorded_registers_where_the_user_did_not(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(SAMPLES / "incident.otlp.jsonl")))
    out = tmp_path / "recorded.json"
    ok(
        invoke(
            runner, store_path, "attribute", "ef2843ff", "--tools", "recorded",
            "--success-if", "v841", "--rollouts", "5", "--out", str(out),
        )
    )  # fmt: skip
    report = _report(out)
    assert report["config"]["resamplers"] == [
        "tool:* -> builtin.recorded_outcomes(list_deploys: 3, query_metrics: 1, search_logs: 1)"
    ]
    assert "--tools recorded" in report["config"]["rerun"]
    resamplers = str(ROOT / "examples" / "incident" / "tools.py")
    ok(
        invoke(
            runner, store_path, "attribute", "ef2843ff", "--resamplers", resamplers,
            "--tools", "recorded", "--rollouts", "5", "--out", str(out),
        )
    )  # fmt: skip
    # the example registers every tool by name: its own resample functions win
    described = _report(out)["config"]["resamplers"]
    assert (
        "tool:* -> builtin.recorded_outcomes(list_deploys: 3, query_metrics: 1, search_logs: 1)"
        in described
    )
    assert any(d.startswith("tool:list_deploys -> ") for d in described)
