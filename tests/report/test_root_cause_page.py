"""The root cause, the probabilities of causation and the verdict ``settled`` on the report page
(issue 25): written by ``attribute --root-cause --html`` for a run whose root cause comes long before
its Point of Commitment, opened in a real Chromium; every value from a report shown as text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.report import html_report
from otel_replay.store import Store
from tests.attribution.long_runs import EARLY_ROOT
from tests.attribution.models import SWAP
from tests.cli_helpers import invoke, ok

MODULE = str(Path(__file__).resolve().parents[1] / "attribution" / "early_root.py")


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """``attribute early-root --root-cause --out --html``: the report and the page."""
    folder = tmp_path_factory.mktemp("root-cause")
    store, report, page = folder / "store.db", folder / "report.json", folder / "report.html"
    with Store.open(store) as db:
        db.put(EARLY_ROOT.trajectory())
    ok(
        invoke(
            CliRunner(), store, "attribute", "early-root", "--resamplers", MODULE,
            "--root-cause", "--out", str(report), "--out", str(page),
        )
    )  # fmt: skip
    return orjson.loads(report.read_bytes()), page


def _text(html: str) -> str:
    """The text of a fragment: a block's tags a space, others dropped, entities as characters."""
    from html import unescape

    spaced = re.sub(r"</?(?:p|div)\b[^>]*>", " ", html)
    return " ".join(unescape(re.sub(r"<[^>]+>", "", spaced)).split())


def _sentence(report: dict[str, Any]) -> str:
    saves = report["root_cause"]["saves"]
    return (
        "The failure became inevitable at step 12 (tool s12_miss); its root cause is step 1 "
        f"(tool s01_break): resampling it saves the run {100 * saves['value']:.0f} % "
        f"[{100 * saves['ci_low']:.0f}, {100 * saves['ci_high']:.0f}] of the time"
    )


def _paragraph(page: str) -> str:
    (found,) = re.findall(r'<p[^>]* id="root-cause">.*?</p>', page)
    return found


def test_the_page_says_the_root_cause_beside_the_point_of_commitment(
    written: tuple[dict[str, Any], Path],
) -> None:
    report, page = written
    html = page.read_text()
    said = _text(_paragraph(html))
    assert said.startswith(_sentence(report) + "."), said
    assert "together" not in said  # each step before it was tested alone
    assert f"(the root-cause search: {report['root_cause']['calls']:,} resample-function" in said
    # the table marks the root cause's row and gives each estimated step PN and PS
    (row,) = re.findall(r'<tr class="root" data-step="1">.*?</tr>', html)
    necessity = report["steps"][1]["necessity"]
    assert f"PN {necessity['value']:.2f}" in _text(row)
    assert f"[{necessity['ci_low']:.2f}, {necessity['ci_high']:.2f}]" in _text(row)
    assert "root cause" in _text(row)
    (first,) = re.findall(r'<tr class="" data-step="0">.*?</tr>', html)
    assert "no effect" in _text(first)


def test_the_root_cause_in_a_real_browser(
    written: tuple[dict[str, Any], Path], browser_page: Any
) -> None:
    report, page = written
    browser_page.goto(page.as_uri())
    said = " ".join(browser_page.locator("#root-cause").inner_text().split())
    assert said.startswith(_sentence(report))
    assert "Root cause" in browser_page.locator("li.step.root").inner_text()
    assert browser_page.locator("li.step.poc").count() == 1
    head = browser_page.locator("table.attribution th").all_inner_texts()
    assert "necessity / sufficiency" in [" ".join(h.split()) for h in head]


def _hostile(root_cause: dict[str, Any], verdict: str = "culprit") -> dict[str, Any]:
    evil = "<img src=x onerror=alert(1)>"
    step = {"index": 0, "kind": "tool", "name": evil, "resamplable": True, "attribution": 0.5}
    share = {"value": 0.5, "ci_low": 0.25, "ci_high": 0.75, "without_monotonicity": [0.5, 1.0]}
    return {
        "version": 6,
        "trajectory_id": "evil",
        "mode": "failure",
        "verdict": verdict,
        "point_of_commitment": 1,
        "explanation": "",
        "steps": [
            {**step, "necessity": share, "sufficiency": None},
            {**step, "index": 1, "name": "</p><script>alert(2)</script>"},
        ],
        "root_cause": root_cause,
    }


def test_a_hostile_step_name_and_reason_are_escaped() -> None:
    saves = {"value": 0.58, "ci_low": 0.49, "ci_high": 0.66, "n": 100}
    root = {"step": 0, "sought": True, "saves": saves, "calls": 1234, "cleared_before": None}
    page = html_report(_hostile(root))
    paragraph = _paragraph(page)
    assert "<img" not in paragraph and "<script" not in paragraph
    assert _text(paragraph).startswith(
        "The failure became inevitable at step 1 (tool </p><script>alert(2)</script>); its root "
        "cause is step 0 (tool <img src=x onerror=alert(1)>): resampling it saves the run 58 % "
        "[49, 66] of the time."
    )
    assert page.count("<script") == 1  # the page's own (no run: no data block)
    assert "PN 0.50 [0.25, 0.75]" in _text(page) and "PS — (undefined)" in _text(page)
    open_root = {"step": None, "sought": True, "bracket": [0, 1], "why": "<b>x</b>", "calls": 0}
    paragraph = _paragraph(html_report(_hostile(open_root)))
    assert "<b>x</b>" not in paragraph
    assert _text(paragraph) == "Root cause: open between steps #0 and #1: <b>x</b>."


def test_a_root_cause_not_sought_says_how_to_ask_for_it() -> None:
    page = html_report(_hostile({"step": None, "sought": False}))
    assert _text(_paragraph(page)).startswith("Root cause: not sought (attribute --root-cause")


def test_a_settled_run_has_its_own_box(runner: CliRunner, tmp_path: Path) -> None:
    store, page = tmp_path / "store.db", tmp_path / "settled.html"
    ok(invoke(runner, store, "import", str(SWAP.jsonl)))
    ok(
        invoke(
            runner, store, "attribute", "scm-swap", "--resamplers", str(SWAP.resamplers),
            "--seed", "5", "--out", str(page),
        )
    )  # fmt: skip
    html = page.read_text()
    (box,) = re.findall(r'<div class="banner settled" id="verdict">.*?</div>', html)
    assert _text(box).startswith(
        "Settled: no resamplable step changes the failure rate. No resamplable step changes"
    )
    assert 'id="root-cause"' not in html  # no step matters: there is no root cause to name
