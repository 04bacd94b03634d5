"""Store-at-scale benchmark: what looking at a store of 100,000 runs costs beside one of 1,000.

Builds two seeded stores (``many_runs.py``, written through `Store.put_all`; kept in ``--dir`` and
reused when already built), then measures on both, interleaved round by round so the machine's
noise falls on both alike:

* ``agent-replay list`` and ``agent-replay list --json`` (the newest 50): wall time, CPU time and
  peak memory of the process;
* ``agent-replay show ID`` of the newest run;
* the viewer's first page (``GET /``) and a filtered, sorted page, over HTTP: time and bytes;
* the first page loaded in Chromium (navigation to the ``load`` event), where Chromium is there.

Each figure is the median of ``--rounds``; the verdict is the ratio 100k / 1k (target: each within
2x). Beside them, ``list --all --json`` on the large store against the same query in the
``sqlite3`` shell (``-json``), which prints every row too.

Usage::

    python benchmarks/store_bench.py [--runs 100000] [--small 1000] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from many_runs import build_store

from otel_replay.store import Store
from otel_replay.viewer._server import Viewer

TARGET_RATIO = 2.0
FILTERED = "/?where=steps+%3E%3D+8&outcome=failed&sort=steps"
CHROMIUM = (
    os.environ.get("AGENT_REPLAY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
CLI = [sys.executable, "-m", "otel_replay"]


def stores(folder: Path, sizes: tuple[int, ...], seed: int) -> dict[int, tuple[Path, float]]:
    """Each store and how long building it took (0: it was already built)."""
    folder.mkdir(parents=True, exist_ok=True)
    built = {}
    for size in sizes:
        path = folder / f"store-{size}-seed{seed}.db"
        started = time.perf_counter()
        if not path.exists():
            partial = path.with_suffix(".partial.db")
            for leftover in folder.glob(partial.name + "*"):
                leftover.unlink()
            build_store(partial, size, seed)
            partial.rename(path)
            for suffix in ("-wal", "-shm"):
                Path(f"{partial}{suffix}").unlink(missing_ok=True)
        built[size] = (path, time.perf_counter() - started)
    return built


def process(args: list[str]) -> dict[str, float]:
    """One fresh process: wall and CPU seconds, peak resident MB, bytes written."""
    started = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env={**os.environ, "COLUMNS": "120"})  # fmt: skip
    out = child.stdout.read() if child.stdout else b""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{' '.join(args)} failed ({status})")
    return {
        "seconds": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "mb": usage.ru_maxrss / 1024,
        "bytes": len(out),
    }


def get(port: int, target: str) -> dict[str, float]:
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request("GET", target)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    if response.status != 200:
        raise SystemExit(f"GET {target}: {response.status}")
    return {"seconds": time.perf_counter() - started, "bytes": len(body)}


def measure(path: Path, viewer: Viewer, browser: Any) -> dict[str, dict[str, float]]:
    with Store.open(path, read_only=True) as db:
        newest = next(db.runs(limit=1)).id
    cli, store = CLI, ["--store", str(path)]
    found = {
        "list": process([*cli, "list", *store]),
        "list --json": process([*cli, "list", "--json", *store]),
        "show ID": process([*cli, "show", newest, *store]),
        "GET /": get(viewer.port, "/"),
        "GET filtered": get(viewer.port, FILTERED),
        "GET /run/ID": get(viewer.port, f"/run/{newest}"),
    }
    if browser is not None:
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(f"{viewer.url}/", wait_until="load")
        found["browser /"] = {"seconds": time.perf_counter() - started}
        page.close()
    return found


def sqlite_baseline(path: Path, rounds: int) -> dict[str, float] | None:
    """``list --all --json`` against the same rows printed by the sqlite3 shell."""
    if shutil.which("sqlite3") is None:
        return None
    query = (
        "SELECT id, n_steps AS steps, outcome, final_hash, source, format FROM trajectories "
        "ORDER BY start_time_unix_nano DESC, id DESC"
    )
    shell, ours = [], []
    for _ in range(rounds):
        shell.append(process(["sqlite3", "-readonly", "-json", str(path), query])["seconds"])
        ours.append(process([*CLI, "list", "--all", "--json", "--store", str(path)])["seconds"])
    return {"sqlite3": statistics.median(shell), "list --all --json": statistics.median(ours),
            "ratio": statistics.median(ours) / statistics.median(shell)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/agent-replay-store-bench"))
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    built = stores(options.dir, (options.small, options.runs), options.seed)
    browser, closing = _browser()
    viewers = {size: Viewer(path, "127.0.0.1", 0) for size, (path, _) in built.items()}
    rounds: dict[int, list[dict[str, dict[str, float]]]] = {size: [] for size in built}
    try:
        for viewer in viewers.values():
            viewer.start()
        for _ in range(options.rounds):
            for size, (path, _) in built.items():
                rounds[size].append(measure(path, viewers[size], browser))
    finally:
        for viewer in viewers.values():
            viewer.stop()
        closing()
    baseline = sqlite_baseline(built[options.runs][0], max(3, options.rounds // 2))
    report = _report(options, built, rounds, baseline)
    if options.json:
        print(json.dumps(report, indent=2))
        return
    _print(report)


def _median(rows: list[dict[str, dict[str, float]]], name: str, field: str) -> float:
    return statistics.median(row[name][field] for row in rows)


def _report(
    options: argparse.Namespace,
    built: dict[int, tuple[Path, float]],
    rounds: dict[int, list[dict[str, dict[str, float]]]],
    baseline: dict[str, float] | None,
) -> dict[str, Any]:
    small, large = rounds[options.small], rounds[options.runs]
    figures = {}
    for name in small[0]:
        row: dict[str, float] = {}
        for field in small[0][name]:
            row[f"{field}_small"] = _median(small, name, field)
            row[f"{field}_large"] = _median(large, name, field)
        row["ratio"] = row["seconds_large"] / row["seconds_small"]
        figures[name] = row
    return {
        "stores": {
            str(size): {"path": str(path), "mb": path.stat().st_size / 1e6, "build_seconds": took}
            for size, (path, took) in built.items()
        },
        "rounds": options.rounds,
        "figures": figures,
        "sqlite_baseline": baseline,
        "target_ratio": TARGET_RATIO,
        "met": all(row["ratio"] <= TARGET_RATIO for row in figures.values()),
    }


def _print(report: dict[str, Any]) -> None:
    for size, store in report["stores"].items():
        built = f", built in {store['build_seconds']:.0f} s" if store["build_seconds"] else ""
        print(f"store of {int(size):,} runs: {store['mb']:.0f} MB{built}")
    print(f"\nmedians of {report['rounds']} interleaved rounds (small | large | ratio):")
    for name, row in report["figures"].items():
        extra = ""
        if "cpu_small" in row:
            extra = (f"  cpu {row['cpu_small']:.2f} | {row['cpu_large']:.2f} s"
                     f"  peak {row['mb_small']:.0f} | {row['mb_large']:.0f} MB")  # fmt: skip
        if "bytes_small" in row and name.startswith("GET"):
            extra += f"  {row['bytes_small'] / 1e3:.0f} | {row['bytes_large'] / 1e3:.0f} KB"
        verdict = "ok" if row["ratio"] <= TARGET_RATIO else "MISSED"
        print(f"  {name:14} {row['seconds_small']:.3f} | {row['seconds_large']:.3f} s  "
              f"{row['ratio']:.2f}x {verdict}{extra}")  # fmt: skip
    baseline = report["sqlite_baseline"]
    if baseline:
        print(f"\nlist --all --json on the large store: {baseline['list --all --json']:.2f} s, "
              f"the sqlite3 shell's -json of the same rows {baseline['sqlite3']:.2f} s "
              f"({baseline['ratio']:.1f}x)")  # fmt: skip
    print(f"\ntarget: each within {report['target_ratio']:g}x: "
          f"{'met' if report['met'] else 'MISSED'}")  # fmt: skip


def _browser() -> tuple[Any, Callable[[], None]]:
    """Headless Chromium through Playwright, or None (with a note) where there is none."""
    if not os.path.exists(CHROMIUM):
        print(f"(no Chromium at {CHROMIUM}: the browser figure is left out)", file=sys.stderr)
        return None, lambda: None
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    flags = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]  # fmt: skip
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)

    def closing() -> None:
        browser.close()
        playwright.stop()

    return browser, closing


if __name__ == "__main__":
    main()
