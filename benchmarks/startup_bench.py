"""Startup benchmark: how long ``agent-replay`` takes before it does anything.

Measures, in one run and interleaved (so the machine's noise falls on every command alike), the
wall time of fresh processes:

* ``python -c "import typer"`` — the baseline the target is stated against;
* a two-command Typer app's ``--help`` — the floor any Typer CLI pays (Typer builds its parameter
  coercion with pydantic when it parses a command line);
* ``agent-replay --help``, ``agent-replay list`` on an empty store and on a small one (the three
  runs of the incident sample), and ``agent-replay attribute --help``.

Each figure is the median of ``--repeats`` runs; the verdict is the ratio to the ``import typer``
median (issue 26's target: ``--help`` and both ``list`` within 2.5x).

Usage::

    python benchmarks/startup_bench.py [--repeats 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 2.5

TWO_COMMAND_APP = """
import typer
app = typer.Typer()
@app.command()
def first(x: int = 1) -> None: pass
@app.command()
def second(x: int = 1) -> None: pass
app()
"""


# As installed: with bytecode caches (some shells set PYTHONDONTWRITEBYTECODE, which would make every
# run compile the package from source and time the compiler instead of the startup).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as work:
        store, empty = Path(work) / "store.db", Path(work) / "empty.db"
        app = Path(work) / "two_commands.py"
        app.write_text(TWO_COMMAND_APP)
        cli = [python, "-m", "otel_replay"]
        from otel_replay import Store

        Store.open(empty).close()
        subprocess.run(
            [*cli, "import", str(ROOT / "sample_traces" / "incident.otlp.jsonl"), "--store",
             str(store)],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        commands = {
            "import typer": [python, "-c", "import typer"],
            "two-command typer app --help": [python, str(app), "--help"],
            "agent-replay --help": [*cli, "--help"],
            "agent-replay list (empty store)": [*cli, "list", "--store", str(empty)],
            "agent-replay list (3 runs)": [*cli, "list", "--store", str(store)],
            "agent-replay attribute --help": [*cli, "attribute", "--help"],
        }
        for command in commands.values():  # write and warm the bytecode caches
            _time(command)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, command in commands.items():
                times[name].append(_time(command))
    medians = {name: statistics.median(values) for name, values in times.items()}
    baseline = medians["import typer"]
    figures = {
        name: {"median_s": round(median, 4), "ratio": round(median / baseline, 2)}
        for name, median in medians.items()
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{'command':<34} {'median':>8} {'× import typer':>15}")
    for name, figure in figures.items():
        print(f"{name:<34} {figure['median_s']:>7.3f}s {figure['ratio']:>14.2f}×")
    for name in ("agent-replay --help", *(n for n in figures if n.startswith("agent-replay list"))):
        met = figures[name]["ratio"] <= TARGET_RATIO
        print(f"{name}: {'met' if met else 'missed'} (target ≤ {TARGET_RATIO:g}× import typer)")


if __name__ == "__main__":
    main()
