"""HTML report benchmark: a 500-step run with 50 KB messages, its page's size and how long headless
Chromium takes to show it, beside baselines measured in the same run.

The run is an agent's tool loop as agents really send it: 250 model calls, each resending the whole
conversation so far, and 250 tool calls, each returning a 50 KB result (``--steps``, ``--kb``). It is
attributed for real (the walk driver, a planted culprit), and the report is rendered by
`otel_replay.report.html_report`. Figures:

* size: the page against the JSON report (which holds no message), against the run's distinct
  content (every message once, what any page that shows the run must carry), and against the run
  written as the native JSONL (each model call with its whole conversation);
* time, in Debian's Chromium through Playwright: from navigation to the ``load`` event, and to the
  largest step opened and drawn, against the baseline of Chromium loading a page that carries the
  same data block and shows nothing (best of ``--rounds``). (A page of the same bytes as one
  escaped ``<pre>``, drawn whole, took over 30 s to load: why step bodies are drawn when opened.)

Usage::

    python benchmarks/html_bench.py [--steps 500] [--kb 50] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from otel_replay.attribution import AttributionConfig, attribute
from otel_replay.export import write_jsonl
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.report import build_report, dumps_report, html_report
from otel_replay.report._page import data_script
from otel_replay.report._timeline import run_data
from otel_replay.resamplers import Registry, RolloutContext

FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]  # fmt: skip
TARGET_SECONDS = 2.0
TARGET_SIZE = 3.0


def make_run(steps: int, kb: int) -> Trajectory:
    """The tool loop: model call, tool call, …; the culprit is the last tool call."""
    filler = ("lorem ipsum dolor sit amet " * (kb * 1024 // 27 + 1))[: kb * 1024]
    conversation: list[dict[str, Any]] = [
        {"role": "system", "content": "You investigate incidents."},
        {"role": "user", "content": "Why did checkout fail?"},
    ]
    made: list[Step] = []
    for turn in range(steps // 2):
        call = {"id": f"call_{turn}", "name": "search_logs", "arguments": {"page": turn}}
        reply = {"role": "assistant", "content": f"Looking at page {turn}.", "tool_calls": [call]}
        made.append(
            Step(index=2 * turn, kind=StepKind.LLM, name="model",
                 inputs={"model": "model", "messages": list(conversation)}, output=reply)
        )  # fmt: skip
        result = {"page": turn, "bad": turn == steps // 2 - 1, "text": f"{turn}: {filler}"}
        made.append(
            Step(index=2 * turn + 1, kind=StepKind.TOOL, name="search_logs",
                 inputs={"arguments": call["arguments"], "tool_call_id": call["id"]}, output=result)
        )  # fmt: skip
        conversation += [
            reply,
            {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)},
        ]
    return Trajectory.build(
        id="html-bench", steps=made, outcome=0.0, metadata={"source": "html_bench"}
    )


def registry() -> Registry:
    found = Registry()

    def search_logs(step: Step, ctx: RolloutContext) -> Any:
        output = dict(step.output)
        output["bad"] = output["bad"] and ctx.rng.random() < 0.2
        return output

    def outcome(trajectory: Trajectory) -> float:
        return (
            0.0
            if any(s.kind is StepKind.TOOL and s.output["bad"] for s in trajectory.steps)
            else 1.0
        )

    found.add_resampler("tool", search_logs, "search_logs")
    found.set_verifier(outcome)
    return found


def timed_load(
    browser: Any, path: Path, rounds: int, open_step: int | None
) -> tuple[float, float | None]:
    """Best seconds to the load event, and to ``open_step`` opened and drawn (or None)."""
    loads, opens = [], []
    for _ in range(rounds):
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load")
        loads.append(time.perf_counter() - started)
        if open_step is not None:
            started = time.perf_counter()
            page.locator(f"#step-{open_step} summary").click()
            page.locator(f"#step-{open_step} .body .part").first.wait_for()
            page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(0)))")
            opens.append(time.perf_counter() - started)
        page.close()
    return min(loads), min(opens) if opens else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--kb", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    run = make_run(args.steps, args.kb)
    started = time.perf_counter()
    result = attribute(run, registry(), AttributionConfig(seed=0))
    attributed = time.perf_counter() - started
    report = dumps_report(build_report(result, AttributionConfig(seed=0)))
    started = time.perf_counter()
    page = html_report(orjson.loads(report), run).encode()
    rendered = time.perf_counter() - started
    content = len(orjson.dumps(run_data(run), option=orjson.OPT_NON_STR_KEYS))
    jsonl_buffer = io.BytesIO()
    write_jsonl([run], jsonl_buffer)
    jsonl = len(jsonl_buffer.getvalue())
    with tempfile.TemporaryDirectory() as folder:
        html_path, plain = Path(folder) / "report.html", Path(folder) / "plain.html"
        html_path.write_bytes(page)
        plain.write_text(  # the bytes alone: the run's data block and nothing to show
            f"<!doctype html><meta charset=utf-8>{data_script('run-data', run_data(run))}"
        )
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=args.chromium, args=FLAGS)
            base_load, _ = timed_load(browser, plain, args.rounds, None)
            load, opened = timed_load(browser, html_path, args.rounds, args.steps - 2)
            browser.close()
    figures = {
        "steps": len(run.steps),
        "verdict": result.verdict.value,
        "point_of_commitment": result.point_of_commitment,
        "attribute_seconds": round(attributed, 2),
        "render_seconds": round(rendered, 3),
        "html_bytes": len(page),
        "report_json_bytes": len(report),
        "distinct_content_bytes": content,
        "jsonl_bytes": jsonl,
        "html_vs_report_json": round(len(page) / len(report), 2),
        "html_vs_report_plus_content": round(len(page) / (len(report) + content), 3),
        "html_vs_jsonl": round(len(page) / jsonl, 4),
        "load_seconds": round(load, 3),
        "open_largest_step_seconds": round(opened or 0.0, 3),
        "baseline_data_only_load_seconds": round(base_load, 3),
        "load_vs_baseline": round(load / base_load, 2),
        "load_target_met": load + (opened or 0.0) < TARGET_SECONDS,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:30} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
