"""Fleet benchmark: many runs attributed on threads and on a local Ray, and ``blame`` over 100,000
stored reports, in one run.

1. ``--runs`` (1,000) failing runs of the incident investigator (`examples.incident.fleet`) are
   imported, then ``agent-replay attribute --all-failing`` runs over them on threads (``--workers``)
   and on a local Ray (``--workers`` CPUs), each into its own copy of the store: wall times.
2. The reports of step 1 are copied (new run ids) until the store holds ``--reports`` (100,000);
   ``agent-replay blame`` is timed over them, beside the baseline of SQLite alone counting the same
   rows by step (one ``GROUP BY`` pass over ``report_steps``).

Usage::

    python benchmarks/fleet_bench.py [--runs 1000] [--workers 2] [--reports 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CODE = ["--resamplers", str(ROOT / "examples" / "incident" / "tools.py"), "--success-if", "v841"]


def cli(*args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay", *args], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}:\n{done.stderr}")
    return time.perf_counter() - started, done.stdout


def grow(store: Path, reports: int) -> int:
    """Copy the stored reports under new run ids until there are ``reports``; how many there are."""
    db = sqlite3.connect(store)
    have = db.execute("SELECT count(*) FROM reports").fetchone()[0]
    base = db.execute("SELECT * FROM reports").fetchall()
    steps = db.execute("SELECT * FROM report_steps").fetchall()
    by_run: dict[str, list[Any]] = {}
    for row in steps:
        by_run.setdefault(row[0], []).append(row)
    copy = 0
    with db:
        while have < reports:
            copy += 1
            batch = base[: reports - have]
            db.executemany(
                "INSERT INTO reports VALUES (?, ?, ?, ?, ?)",
                [(f"{r[0]}-copy{copy}", *r[1:]) for r in batch],
            )
            db.executemany(
                f"INSERT INTO report_steps VALUES ({', '.join('?' * len(steps[0]))})",
                [(f"{s[0]}-copy{copy}", *s[1:]) for r in batch for s in by_run.get(r[0], [])],
            )
            have += len(batch)
    db.close()
    return have


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"runs": args.runs, "workers": args.workers}
    with tempfile.TemporaryDirectory() as folder:
        fleet, base = Path(folder) / "fleet.jsonl", Path(folder) / "base.db"
        subprocess.run(
            [sys.executable, "-m", "examples.incident.fleet", "--runs", str(args.runs), "--out", str(fleet)],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        cli("import", str(fleet), "--store", str(base))
        for name, how in (("threads", ["--executor", "threads"]), ("ray", ["--executor", "ray"])):
            store = Path(folder) / f"{name}.db"
            shutil.copy(base, store)
            wall, out = cli(
                "attribute",
                "--all-failing",
                *CODE,
                *how,
                "--workers",
                str(args.workers),
                "--json",
                "--store",
                str(store),
            )
            done = sum(row["status"] == "done" for row in json.loads(out))
            figures[f"attribute_{name}_seconds"] = round(wall, 1)
            figures[f"attribute_{name}_done"] = done
            print(name, round(wall, 1), done, file=sys.stderr)
        figures["ray_vs_threads"] = round(
            figures["attribute_ray_seconds"] / figures["attribute_threads_seconds"], 3
        )
        store = Path(folder) / "ray.db"
        figures["reports"] = grow(store, args.reports)
        db = sqlite3.connect(store)
        figures["report_step_rows"] = db.execute("SELECT count(*) FROM report_steps").fetchone()[0]
        started = time.perf_counter()
        db.execute(
            "SELECT kind, name, shape, count(*), sum(commitment) FROM report_steps GROUP BY 1, 2, 3"
        ).fetchall()
        figures["baseline_sqlite_group_by_seconds"] = round(time.perf_counter() - started, 3)
        db.close()
        wall, out = cli("blame", "--json", "--store", str(store))
        figures["blame_seconds"] = round(wall, 2)
        figures["blame_vs_baseline"] = round(wall / figures["baseline_sqlite_group_by_seconds"], 1)
        figures["blame_target_met"] = wall < 5.0
        figures["blame_top"] = {
            k: json.loads(out)[0][k] for k in ("name", "commitments", "decided_runs", "share")
        }
    print(json.dumps(figures, indent=2) if args.json else figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
