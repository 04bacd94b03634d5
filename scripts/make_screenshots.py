"""Regenerate the screenshots in ``docs/screenshots/`` (the README and docs/seeing-it.md show them).

Runs the documented commands on the bundled samples in a temporary store, then photographs, in
Debian's headless Chromium through Playwright: the HTML report of the failing run
(``attribute --html``), and the viewer's pages (``agent-replay ui``): the run list, a run with a step
opened, the stored report, and the failing run against a fork that repairs it.

Usage::

    python scripts/make_screenshots.py [--out docs/screenshots] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]  # fmt: skip
FAILING = "ef2843ff"
REPAIR = [{"version": "v841", "service": "checkout", "author": "mlopez", "commit": "9f3c2e1",
           "deployed_at": "2026-03-14T14:02:00Z"}]  # fmt: skip


def agent_replay(store: Path, *args: str) -> str:
    command = [sys.executable, "-m", "otel_replay", *args, "--store", str(store)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def shoot(page: Any, url: str, path: Path, *, open_steps: tuple[int, ...] = ()) -> None:
    page.goto(url, wait_until="load")
    for index in open_steps:
        page.locator(f"#step-{index} summary").click()
        page.locator(f"#step-{index} .body[data-done]").wait_for(state="attached")
    page.screenshot(path=str(path), full_page=True)
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        store, html = Path(folder) / "store.db", Path(folder) / "report.html"
        agent_replay(store, "import", "sample_traces/")
        tools = "examples/incident/tools.py"
        agent_replay(store, "attribute", FAILING, "--resamplers", tools, "--success-if", "v841",
                     "--repair", "--method", "all", "--out", str(html))  # fmt: skip
        fork = json.loads(
            agent_replay(
                store,
                "fork",
                FAILING,
                "--at",
                "3",
                "--value",
                json.dumps(REPAIR),
                "--resamplers",
                tools,
                "--json",
            )
        )["id"]
        viewer = subprocess.Popen(
            [sys.executable, "-m", "otel_replay", "ui", "--port", "0", "--store", str(store)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        try:
            assert viewer.stdout is not None
            found = re.search(r"http://[\d.]+:\d+", viewer.stdout.readline())
            if found is None:
                raise SystemExit("agent-replay ui printed no URL")
            base = found.group(0)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=args.chromium, args=FLAGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                shoot(page, html.as_uri(), args.out / "report.png", open_steps=(2,))
                shoot(page, f"{base}/", args.out / "ui-runs.png")
                page.goto(f"{base}/run/{FAILING}", wait_until="load")
                run_id = page.url.rstrip("/").rsplit("/", 1)[-1]
                shoot(page, f"{base}/run/{run_id}", args.out / "ui-run.png", open_steps=(3,))
                report = page.locator("a[href*='/report/']").first.get_attribute("href")
                shoot(page, f"{base}{report}", args.out / "ui-report.png")
                shoot(page, f"{base}/diff/{run_id}/{fork}", args.out / "ui-diff.png")
                browser.close()
        finally:
            viewer.terminate()
            viewer.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
