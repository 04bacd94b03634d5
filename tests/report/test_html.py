"""The HTML report (issue 13, part 1): written by ``attribute --html`` and ``report html``, opened
from disk in a real Chromium, with no network; every string from a trace shown as text."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from otel_replay.fleet._kept import keep
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.report import html_report
from otel_replay.report._json import read_report
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

FAILING = "ef2843ff"
TOOLS = str(ROOT / "examples" / "incident" / "tools.py")


@pytest.fixture(scope="module")
def attributed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The bundled failing sample attributed with a repair and Shapley values: the store, the JSON
    report and the HTML page ``attribute --html`` wrote."""
    folder = tmp_path_factory.mktemp("attributed")
    store, report, page = folder / "store.db", folder / "report.json", folder / "report.html"
    runner = CliRunner()
    ok(invoke(runner, store, "import", str(SAMPLES)))
    ok(
        invoke(
            runner, store, "attribute", FAILING, "--resamplers", TOOLS, "--success-if", "v841",
            "--repair", "--method", "all", "--out", str(report), "--out", str(page),
        )
    )  # fmt: skip
    return store, report, page


def _open(page: Any, index: int) -> None:
    """Open step ``index`` and wait for its body, which the page's script draws on ``toggle``
    (an event that fires after the click returns)."""
    page.locator(f"#step-{index} summary").click()
    page.locator(f"#step-{index} .body[data-done]").wait_for(state="attached")


def _offline(page: Any) -> list[str]:
    """Refuse, and list, every request that is not the file itself: the page must need none."""
    asked: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            asked.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return asked


def test_the_report_page_marks_the_commitment_and_opens_a_step(
    attributed: tuple[Path, Path, Path], browser_page: Any
) -> None:
    _, report, html = attributed
    data = orjson.loads(report.read_bytes())
    asked = _offline(browser_page)
    browser_page.goto(html.as_uri())
    banner = browser_page.locator("#verdict")
    assert "Point of Commitment: step #3" in banner.inner_text()
    marked = browser_page.locator("table.attribution tr.poc")
    assert marked.count() == 1 and "list_deploys" in marked.inner_text()
    assert "matters" in marked.inner_text()
    timeline_row = browser_page.locator("li.step.poc")
    assert timeline_row.get_attribute("id") == "step-3"
    assert "Point of Commitment" in timeline_row.inner_text()
    # a model call opens as a chat: the user's question, then the model's tool call
    _open(browser_page, 0)
    body = browser_page.locator("#step-0 .body")
    assert body.locator(".msg.role-user").count() >= 1
    assert "list_deploys" in body.inner_text() or "query_metrics" in body.inner_text()
    # a later model call shows the messages new since the one before, the rest a click away
    _open(browser_page, 2)
    later = browser_page.locator("#step-2 .body")
    later.locator("button.history").click()
    assert later.locator(".history .msg").count() >= 1
    # a tool's output as JSON
    _open(browser_page, 3)
    tool = browser_page.locator("#step-3 .body .part")
    assert '"service": "checkout"' in tool.filter(has_text="inputs").inner_text()
    assert tool.filter(has_text="output").locator("pre").inner_text().strip() == "[]"
    # the repair: the recorded output against the repairing one
    diff = browser_page.locator("#repair-diff")
    assert diff.locator(".del").filter(has_text="[]").count() == 1
    assert "v841" in diff.locator(".add").all_inner_texts().__str__()
    # Shapley values beside the estimates, and the efficiency check
    assert "Shapley efficiency check" in browser_page.content()
    assert data["shapley"]["permutations"] > 0
    # the command that reproduces it
    assert (
        browser_page.locator("#rerun")
        .inner_text()
        .startswith(f"agent-replay attribute {data['trajectory_id']}")
    )
    # the span tree toggle
    assert browser_page.locator("#span-tree").is_hidden()
    browser_page.get_by_role("button", name="steps / span tree").click()
    assert browser_page.locator("#span-tree").is_visible()
    assert browser_page.locator("#span-tree a[href='#step-3']").count() == 1
    assert asked == []


def test_the_page_prints(attributed: tuple[Path, Path, Path], browser_page: Any) -> None:
    _, _, html = attributed
    browser_page.goto(html.as_uri())
    _open(browser_page, 3)
    browser_page.emulate_media(media="print")
    assert browser_page.locator("button").first.is_hidden()  # controls are not printed
    pdf = browser_page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page\b", pdf)) >= 2


def test_report_html_makes_the_same_page_from_the_json_report(
    attributed: tuple[Path, Path, Path], runner: CliRunner, tmp_path: Path
) -> None:
    store, report, html = attributed
    again = tmp_path / "again.html"
    ok(invoke(runner, store, "report", "html", str(report), "--out", str(again)))
    assert again.read_bytes() == html.read_bytes()
    alone = tmp_path / "alone.html"
    result = invoke(
        runner, tmp_path / "none.db", "report", "html", str(report), "--out", str(alone)
    )
    assert result.exit_code == 0 and "the run's steps are not shown" in result.stderr
    assert "not in the store" in alone.read_text()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"version": 3,', "not JSON (line 1"),
        (b"[1, 2]", "a report is a JSON object"),
        (b'{"version": 99}', "version is 99"),
        (b'{"version": 3, "trajectory_id": 7}', "trajectory_id must be a str, got 7"),
    ],
)
def test_a_file_that_is_not_a_report_is_a_one_line_error(
    runner: CliRunner, store_path: Path, tmp_path: Path, content: bytes, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    out = tmp_path / "out.html"
    line = one_line_error(invoke(runner, store_path, "report", "html", str(bad), "--out", str(out)))
    assert message in line and str(bad) in line
    assert not out.exists()


def test_attribute_keeps_its_report_in_the_store(attributed: tuple[Path, Path, Path]) -> None:
    store, report, _ = attributed
    with Store.open(store, read_only=True) as db:
        run_id = db.resolve(FAILING)
        (kept,) = db.reports(run_id)
        assert kept["report"] == orjson.loads(report.read_bytes())
        assert kept["verdict"] == "culprit" and db.report_counts() == {run_id: 1}
    with Store.open(store) as db:  # the same question asked again replaces its answer
        keep(db, report.read_bytes(), db.get(run_id), kept["config_digest"])
        assert len(db.reports(run_id)) == 1
        assert db.decided_runs() == 1 and db.blame_sums()


# --- trace content is text, never markup ------------------------------------------------------------

PAYLOADS = [
    "<script>window.__pwned = 1; alert(1)</script>",
    '"><img src=x onerror="window.__pwned = 1; alert(1)">',
    "</script><script>window.__pwned = 1</script>",
    "<!-- ' \" ` --> \u2028 \x1b[31m",
]


def hostile_run() -> Trajectory:
    """A run whose every string a producer controls holds markup."""
    evil = " ".join(PAYLOADS)
    steps = [
        Step(
            index=0,
            kind=StepKind.LLM,
            name=f"model {PAYLOADS[1]}",
            inputs={
                "model": PAYLOADS[0],
                "messages": [
                    {"role": "system", "content": evil},
                    {"role": "user", "content": PAYLOADS[0]},
                ],
            },
            output={
                "role": "assistant",
                "content": PAYLOADS[1],
                "tool_calls": [{"id": "c1", "name": PAYLOADS[2], "arguments": {PAYLOADS[0]: evil}}],
            },
        ),
        Step(
            index=1,
            kind=StepKind.TOOL,
            name=PAYLOADS[2],
            inputs={"arguments": {"q": PAYLOADS[1]}, "tool_call_id": "c1"},
            output={PAYLOADS[1]: [PAYLOADS[0]]},
            status=StepStatus.ERROR,
            error=PAYLOADS[0],
            resamplable=False,
        ),
    ]
    return Trajectory.build(
        id=f"evil-{PAYLOADS[1]}", steps=steps, outcome=0.0, metadata={"source": evil}
    )


def hostile_report(run: Trajectory) -> dict[str, Any]:
    evil = " ".join(PAYLOADS)
    step = {"index": 0, "kind": "llm", "name": PAYLOADS[1], "resamplable": True, "attribution": 0.5}
    return {
        "version": 3,
        "trajectory_id": run.id,
        "mode": "failure",
        "estimand": evil,
        "verdict": "culprit",
        "point_of_commitment": 0,
        "explanation": evil,
        "steps": [step, {**step, "index": 1, "name": PAYLOADS[0], "cleared_by": PAYLOADS[2]}],
        "search": [{"from_step": PAYLOADS[0], "decision": evil}],
        "repair": {"step_index": 1, "output": {PAYLOADS[0]: evil}, "source": evil},
        "shapley": {"note": evil, "permutations": PAYLOADS[1]},
        "config": {"rerun": evil, "resamplers": [evil], "verifier": evil, "driver": evil},
        "cost": {"rollouts": PAYLOADS[2]},
    }


def test_markup_in_a_trace_is_shown_as_text_in_the_browser(
    browser_page: Any, tmp_path: Path
) -> None:
    run = hostile_run()
    page = tmp_path / "evil.html"
    page.write_text(html_report(hostile_report(run), run))
    browser_page.goto(page.as_uri())
    for details in browser_page.locator("details[data-step]").all():
        _open(browser_page, int(details.get_attribute("data-step")))
    for button in browser_page.locator("button.history").all():
        button.click()
    browser_page.get_by_role("button", name="steps / span tree").click()
    assert browser_page.evaluate("window.__pwned") is None
    assert browser_page.locator("img").count() == 0  # the <img> is text, not an element
    text = browser_page.locator("body").inner_text()
    for payload in PAYLOADS[:3]:
        assert payload in text, payload
    # the browser_page fixture fails the test on any dialog (alert) or script error


def test_report_json_of_the_cli_reads_back(attributed: tuple[Path, Path, Path]) -> None:
    _, report, _ = attributed
    assert read_report(report.read_bytes(), str(report))["verdict"] == "culprit"


def test_an_inconclusive_run_shows_its_bracket_and_the_calls_that_might_decide_it(
    attributed: tuple[Path, Path, Path], runner: CliRunner, tmp_path: Path, browser_page: Any
) -> None:
    store = tmp_path / "store.db"  # a copy: the reports kept are the other tests' to count
    shutil.copy(attributed[0], store)
    report, page = tmp_path / "report.json", tmp_path / "report.html"
    ok(
        invoke(
            runner, store, "attribute", FAILING, "--resamplers", TOOLS, "--success-if", "v841",
            "--budget", "40", "--out", str(report), "--out", str(page),
        )
    )  # fmt: skip
    data = orjson.loads(report.read_bytes())
    assert data["verdict"] == "inconclusive"
    low, high = data["bracket"]
    browser_page.goto(page.as_uri())
    banner = browser_page.locator("#verdict.undecided").inner_text()
    assert f"Inconclusive between steps #{low} and #{high}" in banner
    assert f"About {data['calls_needed']:,} resample-function calls" in banner
    assert browser_page.locator("table.attribution tr.poc").count() == 0


def test_a_swap_question_is_a_page_of_its_own(
    runner: CliRunner, tmp_path: Path, browser_page: Any
) -> None:
    """attribute --swap-model --html: the title, the banner and the marked step name the model
    and the step from which it saves the run; the table's rates are the swap's; the repair names
    its move and its plan."""
    from tests.attribution.models import SWAP

    store, page = tmp_path / "store.db", tmp_path / "swap.html"
    ok(invoke(runner, store, "import", str(SWAP.jsonl)))
    ok(
        invoke(
            runner, store, "attribute", "scm-swap", "--resamplers", str(SWAP.resamplers),
            "--swap-model", "large", "--seed", "5", "--repair", "--out", str(page),
        )
    )  # fmt: skip
    browser_page.goto(page.as_uri())
    assert browser_page.locator("h1").inner_text().startswith("Swap credit of large of run")
    assert "large saves from here: step #2" in browser_page.locator("#verdict").inner_text()
    assert "decide" in browser_page.locator("table.attribution tr.poc").inner_text()
    assert "large saves from here" in browser_page.locator("li.step.poc").inner_text()
    head = browser_page.locator("table.attribution th").all_inner_texts()
    assert "P(fail) with large from the next step / from this one" in head
    assert "do: the turn's output" in browser_page.content()
