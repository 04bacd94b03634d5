"""Executor benchmark: I/O-bound rollouts (a resample function waiting 50 ms) on threads, a process
pool and a local Ray, end to end, in one run.

Three measurements, each on every executor, each against the ideal measured in the same run
(every resample function's wait added up, ÷ workers; the resample functions only wait, so the
ideal is what the waiting alone takes on that many workers):

* ``attribution``: one attribution of a 16-step run (every step a tool step whose resample
  function waits 50 ms; its verifier fails every run) with the default adaptive method, through
  the path ``agent-replay attribute --executor`` takes (`attribute_job`, the work shipped once,
  a map per plan). Timed from making the executor to closing it: the workers' start-up counts.
* ``fleet``: ``--runs`` (1,000) two-step runs attributed as ``attribute --all-failing`` does
  (`attribute_runs` over a store; each run a sweep of ``--fleet-rollouts`` rollouts per plan), on
  threads (baseline) and a local Ray; start-up counts. ``--skip-fleet`` leaves it out.
* ``rounds``: ``--per-worker`` rollouts per worker of a one-step run, twice; the first round starts
  the workers, the second is timed (the steady state, start-up apart).

Usage::

    python benchmarks/executor_bench.py [--workers 8] [--runs 1000] [--skip-fleet] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from otel_replay.attribution import AttributionConfig
from otel_replay.attribution._config import Strategy
from otel_replay.attribution._run import RolloutWork, RunJob, attribute_job
from otel_replay.executors._base import ExecutorKind
from otel_replay.executors._choose import executor
from otel_replay.fleet import attribute_runs
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay import Plan
from otel_replay.resamplers import UserCode
from otel_replay.store import Store

HERE = Path(__file__).resolve().parent
WAIT = 0.05
CODE = UserCode(resamplers=(str(HERE / "sleepy.py"),), entry_points=False)
KINDS = (ExecutorKind.THREADS, ExecutorKind.PROCESS, ExecutorKind.RAY)


def run_of(steps: int, name: str = "bench") -> Trajectory:
    made = [
        Step(index=i, kind=StepKind.TOOL, name=f"tool{i}", inputs={"arguments": {"q": i}},
             output={"ok": i})
        for i in range(steps)
    ]  # fmt: skip
    return Trajectory.build(id=name, steps=made, outcome=0.0)


def figures(wall: float, waits: int, workers: int, startup: float) -> dict[str, float]:
    ideal = waits * WAIT / workers
    return {
        "wall_seconds": round(wall, 2),
        "startup_seconds": round(startup, 2),
        "ideal_seconds": round(ideal, 2),
        "of_ideal": round(ideal / wall, 3),
    }


def attribution(
    kind: ExecutorKind, workers: int, strategy: Strategy, rollouts: int
) -> dict[str, Any]:
    config = AttributionConfig(seed=0, workers=workers, strategy=strategy, rollouts=rollouts)
    job = RunJob(run_of(16), CODE, config)
    started = time.perf_counter()
    made = executor(kind, workers)
    startup = time.perf_counter() - started
    try:
        result = attribute_job(job, executor=None if kind is ExecutorKind.THREADS else made)
    finally:
        closing = time.perf_counter()
        made.close()
    wall = time.perf_counter() - started
    got = figures(wall, result.step_executions, workers, startup)
    return {
        **got,
        "close_seconds": round(time.perf_counter() - closing, 2),
        "rollouts": result.rollouts,
        "waits": result.step_executions,
    }


def fleet(kind: ExecutorKind, workers: int, runs: int, rollouts: int) -> dict[str, Any]:
    config = AttributionConfig(seed=0, strategy=Strategy.FIXED, rollouts=rollouts)
    with tempfile.TemporaryDirectory() as folder:
        store = Store.open(Path(folder) / "fleet.db")
        try:
            store.put_all(run_of(2, f"fleet-{n:05d}") for n in range(runs))
            ids = [f"fleet-{n:05d}" for n in range(runs)]
            started = time.perf_counter()
            made = executor(kind, workers)
            startup = time.perf_counter() - started
            try:
                done = list(attribute_runs(store, ids, config, CODE, made))
            finally:
                made.close()
            wall = time.perf_counter() - started
        finally:
            store.close()
    assert all(d.result is not None for d in done), [d.error for d in done if d.error][:1]
    waits = sum(d.result.step_executions for d in done if d.result is not None)
    return {**figures(wall, waits, workers, startup), "runs": runs, "waits": waits}


def rounds(kind: ExecutorKind, workers: int, per_worker: int) -> dict[str, Any]:
    work = RolloutWork(RunJob(run_of(1), CODE, AttributionConfig(seed=0)))
    plan, count = Plan.ablate_from(1, 0), workers * per_worker
    made = executor(kind, workers)
    try:
        started = time.perf_counter()
        list(made.map(work, [(plan, r) for r in range(count)]))  # starts every worker
        startup = time.perf_counter() - started
        started = time.perf_counter()
        got = list(made.map(work, [(plan, r) for r in range(count)]))
        wall = time.perf_counter() - started
    finally:
        made.close()
    assert len(got) == count and all(r.step_executions == 1 for r in got)
    return figures(wall, count, workers, startup)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--strategy", choices=[s.value for s in Strategy], default="sweep")
    parser.add_argument("--rollouts", type=int, default=6)
    parser.add_argument("--per-worker", type=int, default=10)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--fleet-rollouts", type=int, default=4)
    parser.add_argument("--skip-fleet", action="store_true")
    parser.add_argument("--only", choices=[k.value for k in KINDS], action="append")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    kinds = [k for k in KINDS if args.only is None or k.value in args.only]
    out: dict[str, Any] = {"workers": args.workers, "wait_ms": WAIT * 1000}
    for kind in kinds:
        out[f"attribution_{kind.value}"] = attribution(
            kind, args.workers, Strategy(args.strategy), args.rollouts
        )
        print("attribution", kind.value, out[f"attribution_{kind.value}"], file=sys.stderr)
    for kind in kinds:
        out[f"rounds_{kind.value}"] = rounds(kind, args.workers, args.per_worker)
        print("rounds", kind.value, out[f"rounds_{kind.value}"], file=sys.stderr)
    if not args.skip_fleet:
        for kind in (k for k in kinds if k is not ExecutorKind.PROCESS):
            got = fleet(kind, args.workers, args.runs, args.fleet_rollouts)
            out[f"fleet_{kind.value}"] = got
            print("fleet", kind.value, got, file=sys.stderr)
    print(json.dumps(out, indent=2) if args.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
