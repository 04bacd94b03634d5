"""A suspect verified first (issue 42, item 6): ``--suspect K`` and ``--suspect judge`` put one
step's test before the attribution. A right suspect is confirmed for a fraction of the plain
attribution's calls; a wrong one leaves its answer as it was, and the report says what the suspect
was and whether the replay confirmed it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer, Request
from otel_replay.attribution import AttributionConfig, Strategy, Verdict, attribute
from otel_replay.attribution._cost import planned_cost
from otel_replay.attribution._suspect import (
    SUSPECT_LOOKS,
    SUSPECT_SHARE,
    JudgeServer,
    suspect_schedule,
)
from otel_replay.errors import AttributionError, SettingError
from otel_replay.report import REPORT_SCHEMA, build_report
from tests.attribution.long_runs import Break, LongRun, Noise, run
from tests.attribution.models import CHAIN
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

INCIDENT = SAMPLES / "incident.otlp.jsonl"
INCIDENT_TOOLS = ROOT / "examples" / "incident" / "tools.py"
INCIDENT_ID = "ef2843ff"
CULPRIT = 3  # the incident's list_deploys


def _long(n: int, culprit: int) -> LongRun:
    """``n`` steps of noise but one that broke the run (a good run stays good 80 % of the time
    when it is resampled): that step matters (+0.8), every other has no effect."""
    return run(f"suspect-{n}-{culprit}", n, {culprit: Break(0.2)}, Noise())


def _calls(runner: CliRunner, store: Path, *args: str) -> dict[str, Any]:
    """The incident sample attributed through the command line: its JSON report."""
    base = ("attribute", INCIDENT_ID, "--resamplers", str(INCIDENT_TOOLS), "--json")
    report: dict[str, Any] = orjson.loads(ok(invoke(runner, store, *base, *args)).stdout)
    return report


def test_the_suspects_share_is_split_over_its_own_short_looks() -> None:
    plan = suspect_schedule(AttributionConfig())
    assert plan.looks == SUSPECT_LOOKS == (8, 12, 18, 27, 41)
    assert plan.tails.matters * len(plan.looks) == pytest.approx(SUSPECT_SHARE)
    capped = suspect_schedule(AttributionConfig(max_rollouts=20))
    assert capped.looks == (8, 12, 18, 20)


@pytest.mark.parametrize("culprit", [3, 10])
def test_a_right_suspect_is_confirmed_for_a_fraction_of_the_calls_at_32_steps(
    culprit: int,
) -> None:
    model = _long(32, culprit)
    trajectory, registry = model.trajectory(), model.registry()
    plain = attribute(trajectory, registry, AttributionConfig(seed=3))
    assert plain.point_of_commitment == culprit
    suspected = attribute(trajectory, registry, AttributionConfig(seed=3, suspect=culprit))
    found = suspected.suspect
    assert found is not None and found.confirmed is True and found.decision == "matters"
    assert found.source == "user" and found.step == culprit
    assert found.calls_to_confirm == suspected.step_executions
    assert suspected.step_executions <= 0.3 * plain.step_executions
    # the commitment is at the suspect or later: the steps after it were not tested
    assert suspected.point_of_commitment is None
    assert suspected.bracket == (culprit, 31)
    assert suspected.explanation.startswith(f"Step {culprit} (tool ")
    assert "matters (confirmed by replay)" in suspected.explanation
    assert f"Suspect step {culprit} (yours): confirmed by replay" in suspected.explanation
    assert found.effect is not None and found.interval is not None
    assert found.interval[0] <= model.effects()[culprit] <= found.interval[1]


def test_a_right_suspect_on_the_bundled_sample_costs_a_fraction_of_the_attribution(
    runner: CliRunner, store_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(INCIDENT)))
    plain = _calls(runner, store_path)
    assert plain["point_of_commitment"] == CULPRIT
    suspected = _calls(runner, store_path, "--suspect", str(CULPRIT))
    assert suspected["suspect"]["confirmed"] is True
    assert suspected["bracket"] == [CULPRIT, 6]
    calls = suspected["cost"]["step_executions"]
    assert calls == suspected["suspect"]["calls_to_confirm"]
    assert calls <= 0.6 * plain["cost"]["step_executions"]
    wrong = _calls(runner, store_path, "--suspect", "5")
    assert wrong["suspect"]["confirmed"] is False
    assert wrong["point_of_commitment"] == CULPRIT


@pytest.mark.parametrize("wrong", [0, 17, 29])
def test_a_wrong_suspect_leaves_the_point_of_commitment_as_it_was(wrong: int) -> None:
    model = _long(32, 10)
    trajectory, registry = model.trajectory(), model.registry()
    plain = attribute(trajectory, registry, AttributionConfig(seed=5))
    suspected = attribute(trajectory, registry, AttributionConfig(seed=5, suspect=wrong))
    assert suspected.point_of_commitment == plain.point_of_commitment == 10
    assert suspected.verdict is plain.verdict is Verdict.CULPRIT
    assert [s.decided for s in suspected.steps] == [s.decided for s in plain.steps]
    found = suspected.suspect
    assert found is not None and found.confirmed is False
    assert f"Suspect step {wrong} (yours): not confirmed" in suspected.explanation
    # its rollouts serve the attribution after it: it adds at most its own test's calls
    assert suspected.step_executions <= plain.step_executions + found.calls_to_confirm


def test_the_fixed_strategy_reads_the_suspect_off_its_estimates() -> None:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=60)
    right = attribute(CHAIN.trajectory(), CHAIN.registry(), dataclasses.replace(config, suspect=1))
    wrong = attribute(CHAIN.trajectory(), CHAIN.registry(), dataclasses.replace(config, suspect=4))
    plain = attribute(CHAIN.trajectory(), CHAIN.registry(), config)
    assert right.point_of_commitment == wrong.point_of_commitment == plain.point_of_commitment == 1
    assert right.suspect is not None and right.suspect.confirmed is True
    assert wrong.suspect is not None and wrong.suspect.confirmed is False
    assert right.suspect.calls_to_confirm == 0
    assert right.step_executions == plain.step_executions


@pytest.mark.parametrize(("suspect", "why"), [(2, "step 2 cannot be resampled"), (9, "0–5")])
def test_a_step_that_is_not_resamplable_is_an_error_naming_the_resamplable_ones(
    suspect: int, why: str
) -> None:
    with pytest.raises(SettingError, match=why) as raised:
        attribute(CHAIN.trajectory(), CHAIN.registry(), AttributionConfig(suspect=suspect))
    assert f"suspect={suspect}" in str(raised.value)
    assert "the resamplable steps are 0, 1, 3–5" in str(raised.value)


def test_the_cli_says_a_wrong_step_in_one_line(runner: CliRunner, store_path: Path) -> None:
    ok(invoke(runner, store_path, "import", str(CHAIN.jsonl)))
    base = ("attribute", "scm-chain", "--resamplers", str(CHAIN.resamplers))
    line = one_line_error(invoke(runner, store_path, *base, "--suspect", "2"))
    assert "--suspect 2" in line and "the resamplable steps are 0, 1, 3–5" in line
    line = one_line_error(invoke(runner, store_path, *base, "--suspect", "first"))
    assert "--suspect 'first'" in line


def _report(result: Any, config: AttributionConfig) -> bytes:
    report = build_report(result, config)
    report["cost"].pop("wall_seconds")
    report["config"]["rerun"] = ""
    return orjson.dumps(report, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize("suspect", [10, 13])
def test_the_same_seed_gives_the_same_report_for_any_workers(suspect: int) -> None:
    model = _long(16, 10)
    reports = []
    for workers in (1, 3, 1):
        config = AttributionConfig(seed=9, suspect=suspect, workers=workers)
        result = attribute(model.trajectory(), model.registry(), config)
        reports.append(_report(result, config))
    assert reports[0] == reports[1] == reports[2]
    suspected = orjson.loads(reports[0])["suspect"]
    assert suspected["step"] == suspect and suspected["confirmed"] is (suspect == 10)


MARKUP = "[bold red]list_deploys[/] <script>alert('v841')</script> & more"


def _naming(step: Any, reason: str = MARKUP) -> Any:
    def model(request: Request) -> dict[str, Any]:
        return {"content": json.dumps({"step": step, "reason": reason})}

    return model


def test_the_judge_names_the_suspect_in_one_counted_call_and_its_reason_is_escaped(
    runner: CliRunner, store_path: Path, tmp_path: Path
) -> None:
    ok(invoke(runner, store_path, "import", str(INCIDENT)))
    base = ("attribute", INCIDENT_ID, "--resamplers", str(INCIDENT_TOOLS))
    out, page = tmp_path / "judge.json", tmp_path / "judge.html"
    with FakeModelServer(_naming(CULPRIT)) as server:
        judged = ok(
            invoke(
                runner, store_path, *base, "--suspect", "judge", "--llm-base-url",
                server.base_url, "--out", str(out), "--html", str(page),
            )
        )  # fmt: skip
        asked = server.requests
    assert len(asked) == 1
    prompt = asked[0]["messages"][-1]["content"]
    assert f"step {CULPRIT} (resamplable): tool list_deploys" in prompt
    report = orjson.loads(out.read_bytes())
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    suspect = report["suspect"]
    assert suspect["step"] == CULPRIT and suspect["source"] == "judge"
    assert suspect["reason"] == MARKUP and suspect["confirmed"] is True
    # the same test as --suspect 3, and one model call more, with its tokens
    mine = tmp_path / "mine.json"
    ok(invoke(runner, store_path, *base, "--suspect", str(CULPRIT), "--out", str(mine)))
    plain = orjson.loads(mine.read_bytes())
    assert report["cost"]["model_calls"] == plain["cost"]["model_calls"] + 1
    assert report["cost"]["tokens"]["measured"] == plain["cost"]["tokens"]["measured"] + 1
    assert report["cost"]["tokens"]["total"] > plain["cost"]["tokens"]["total"]
    assert report["cost"]["step_executions"] == plain["cost"]["step_executions"]
    # the reason as text on the terminal (no markup read) and on the page (no tag)
    assert "[bold red]list_deploys[/]" in judged.stdout
    assert "of the model calls, 1 named the suspect (--suspect judge)" in judged.stdout
    html = page.read_text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#x27;v841&#x27;)&lt;/script&gt;" in html
    assert 'id="suspect"' in html


@pytest.mark.parametrize(
    ("step", "reason"), [(5.5, "half"), (2, "observed-only"), ("x" * 300, "long")]
)
def test_a_reply_naming_no_resamplable_step_is_an_error_quoting_it(step: Any, reason: str) -> None:
    trajectory, registry = CHAIN.trajectory(), CHAIN.registry()
    with FakeModelServer(_naming(step, reason)) as server:
        config = AttributionConfig(suspect="judge")
        with pytest.raises(AttributionError, match="names none of the resamplable steps") as got:
            attribute(trajectory, registry, config, suspect_judge=JudgeServer(server.base_url, "m"))
    message = str(got.value)
    assert "suspect='judge'" in message and "(0, 1, 3–5)" in message
    quoted = message.split("answered ", 1)[1].split(", which", 1)[0]
    assert len(quoted) <= 120 + 2  # the reply cut to 120 characters, quoted


def test_the_dry_run_counts_the_judges_call() -> None:
    trajectory, registry = CHAIN.trajectory(), CHAIN.registry()
    plain = planned_cost(trajectory, registry, AttributionConfig())
    judged = planned_cost(trajectory, registry, AttributionConfig(suspect="judge"))
    assert judged.spend.model == plain.spend.model + 1
    assert judged.spend.tokens > plain.spend.tokens
    assert judged.worst_spend.model == plain.worst_spend.model + 1


@pytest.mark.parametrize("value", [-1, True, "first", 2.0])
def test_a_suspect_is_a_step_index_or_judge(value: Any) -> None:
    with pytest.raises(AttributionError, match="must be a step index"):
        AttributionConfig(suspect=value)
