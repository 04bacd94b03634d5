"""The repair of a run recorded through ``--instrument openai`` (the real OpenAI SDK against the
local fake server): the record holds the SDK's chat completion, a resample function answers a
message, and everything that sets one beside the other (the repair's similarity and candidates, the
terminal's repair line, the HTML diff, the contrastive pair, a fork's diff table, the viewer's
comparison) reads both as messages."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer
from otel_replay import Store
from otel_replay.attribution._stats import similarity
from otel_replay.messages import assistant_message
from otel_replay.replay import uninstrument
from otel_replay.viewer._compare import diff_page
from tests.attribution.support_resamplers import DATED, UNDATED
from tests.cli_helpers import invoke, ok
from tests.replay.test_instrument import SUPPORT

RESAMPLERS = str(Path(__file__).with_name("support_resamplers.py"))
SDK_SHAPE = re.compile(r"chatcmpl|choices|chat\.completion")


@dataclass(frozen=True)
class Repaired:
    store: Path
    run_id: str
    stdout: str
    report: dict[str, object]
    page: str


@pytest.fixture(scope="module")
def repaired(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Repaired]:
    """The support agent recorded through the OpenAI SDK, then attributed with ``--repair`` with the
    server gone (the chat loop re-drives it with the resample functions)."""
    folder = tmp_path_factory.mktemp("instrumented")
    store, report, page = folder / "store.db", folder / "report.json", folder / "report.html"
    runner = CliRunner()
    server = FakeModelServer()
    try:
        arguments = orjson.dumps(
            {"question": "Is a late delivery refundable?", "base_url": server.url}
        )
        recorded = ok(
            invoke(runner, store, "record", *SUPPORT, "--input", arguments.decode(), "--json")
        )
    finally:
        server.stop()
        uninstrument()  # record --instrument patched the SDK in this process
    run_id = orjson.loads(recorded.stdout)["id"]
    attributed = ok(
        invoke(
            runner, store, "attribute", run_id, "--resamplers", RESAMPLERS, "--success-if",
            "2026-12-04", "--repair", "--out", str(report), "--out", str(page),
        )
    )  # fmt: skip
    yield Repaired(
        store, run_id, attributed.stdout, orjson.loads(report.read_bytes()), page.read_text()
    )


def test_the_record_holds_the_sdk_response(repaired: Repaired) -> None:
    with Store.open(repaired.store, read_only=True) as db:
        answer = db.get(repaired.run_id).steps[2]
    assert answer.output["object"] == "chat.completion"  # what the SDK returned, kept as it was
    assert assistant_message(answer.output) == {"role": "assistant", "content": UNDATED}


def test_the_repair_is_a_message_measured_against_the_recorded_message(repaired: Repaired) -> None:
    repair = repaired.report["repair"]
    assert isinstance(repair, dict)
    assert repair["step_index"] == 2 and repair["move"] == "do"
    assert repair["output"] == {"role": "assistant", "content": DATED}
    recorded = {"role": "assistant", "content": UNDATED}
    assert repair["minimality"] == round(similarity(repair["output"], recorded), 6)
    # the recorded answer said as a message is the record's own turn: never tried as a repair
    assert repair["candidates_tried"] == 1
    (line,) = [line for line in repaired.stdout.splitlines() if line.startswith("repair (do)")]
    assert '{"role":"assistant","content":"Order A-1001 is delayed' in line
    assert not SDK_SHAPE.search(line)


def test_the_html_diff_is_message_against_message(repaired: Repaired) -> None:
    start = repaired.page.index('id="repair-diff"')
    lines = re.findall(r'<div class="(?:add|del|)">(.*?)</div>', repaired.page[start:])
    shown = [html.unescape(line) for line in lines]
    assert not any(SDK_SHAPE.search(line) for line in shown)
    assert f'-  "content": "{UNDATED}",' in shown and f'+  "content": "{DATED}",' in shown
    assert '   "role": "assistant"' in shown  # the same role: context, not a change


def test_the_pair_is_two_messages(repaired: Repaired, tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    ok(invoke(CliRunner(), repaired.store, "export", "--format", "pairs", "--out", str(out)))
    (pair,) = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert pair["chosen"] == [{"role": "assistant", "content": DATED}]
    assert pair["rejected"] == [{"role": "assistant", "content": UNDATED}]
    assert not SDK_SHAPE.search(orjson.dumps(pair).decode())


def test_a_fork_shows_the_recorded_turn_as_a_message_beside_its_own(repaired: Repaired) -> None:
    forked = ok(
        invoke(
            CliRunner(), repaired.store, "fork", repaired.run_id, "--at", "2", "--value",
            orjson.dumps({"role": "assistant", "content": DATED}).decode(),
            "--resamplers", RESAMPLERS,
        )
    )  # fmt: skip
    (returned,) = [line for line in forked.stdout.splitlines() if line.startswith("│ returned")]
    assert '{"role":"assistant","content":"Late deliveries' in returned
    assert '{"role":"assistant","content":"Order A-1001' in returned
    assert not SDK_SHAPE.search(forked.stdout)
    with Store.open(repaired.store, read_only=True) as db:
        fork_id = next(s.id for s in db.summaries() if s.id != repaired.run_id)
        page = diff_page(db, repaired.run_id, fork_id)
    detail = page[page.index('id="divergence-detail"') : page.index("<h2>Structure")]
    assert html.escape(f'"content": "{UNDATED}"', quote=True) in detail
    assert not SDK_SHAPE.search(detail.split("<h4>output</h4>", 1)[1])
