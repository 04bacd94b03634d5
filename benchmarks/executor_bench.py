"""Executor benchmark: I/O-bound rollouts (a resample function waiting 50 ms) on threads, a process
pool and a local Ray, ``--workers`` of each (64 by default), in one run.

Each executor runs ``--per-worker`` rollouts per worker of a one-step run through the same path
`attribute --executor` takes (`RolloutWork` over a `RunJob`, shipped once per worker, batches of
rollouts per task). A first round of the same size starts the workers (process start, Ray's
workers, the work prepared in each: reported as start-up, with that round's rollouts); the second
is timed. Figures: wall time, efficiency against
the ideal (rollouts × 50 ms / workers), and the overhead per rollout
(``(wall × workers − rollouts × 50 ms) / rollouts``).

Usage::

    python benchmarks/executor_bench.py [--workers 64] [--per-worker 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from otel_replay.attribution import AttributionConfig
from otel_replay.attribution._run import RolloutWork, RunJob
from otel_replay.executors import Processes, RayExecutor, Threads
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay import Plan
from otel_replay.resamplers import UserCode

HERE = Path(__file__).resolve().parent
WAIT = 0.05


def job() -> RunJob:
    step = Step(
        index=0,
        kind=StepKind.TOOL,
        name="lookup",
        inputs={"arguments": {"q": 1}},
        output={"ok": True},
    )
    run = Trajectory.build(id="bench", steps=[step], outcome=0.0)
    code = UserCode(resamplers=(str(HERE / "sleepy.py"),), entry_points=False)
    return RunJob(run, code, AttributionConfig(seed=0))


def measure(executor: Any, rollouts: int) -> dict[str, float]:
    work = RolloutWork(job())
    plan = Plan.ablate_from(1, 0)
    started = time.perf_counter()
    list(executor.map(work, [(plan, r) for r in range(rollouts)]))  # start every worker
    startup = time.perf_counter() - started
    started = time.perf_counter()
    made = list(executor.map(work, [(plan, r) for r in range(rollouts)]))
    wall = time.perf_counter() - started
    assert len(made) == rollouts and all(r.step_executions == 1 for r in made)
    ideal = rollouts * WAIT / executor.workers
    return {
        "startup_seconds": round(startup, 2),
        "wall_seconds": round(wall, 3),
        "ideal_seconds": round(ideal, 3),
        "efficiency": round(ideal / wall, 3),
        "overhead_ms_per_rollout": round(
            (wall * executor.workers - rollouts * WAIT) / rollouts * 1000, 2
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--per-worker", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rollouts = args.workers * args.per_worker
    figures: dict[str, Any] = {
        "workers": args.workers,
        "rollouts": rollouts,
        "wait_ms": WAIT * 1000,
    }
    for name, make in (
        ("threads", lambda: Threads(args.workers)),
        ("process", lambda: Processes(args.workers)),
        ("ray", lambda: RayExecutor(args.workers)),
    ):
        executor = make()
        try:
            figures[name] = measure(executor, rollouts)
        finally:
            executor.close()
        print(name, figures[name], file=sys.stderr)
    print(json.dumps(figures, indent=2) if args.json else figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
