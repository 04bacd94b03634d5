"""The fragility map's cost: the resample-function calls a sweep spends with its per-cell
sequential stopping, against what every cell run to ``--rollouts`` would spend (the dry run's
most, exact in the trace walk), on the planted-fault model (``tests/attribution/scm/faults.py``)
and on the bundled incident runs (the chat loop, ``examples/incident/tools.py``).

    python benchmarks/sweep_bench.py [--rollouts 64] [--seeds 5]

Prints one row per run: cells, calls spent (mean over the seeds), the most, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from otel_replay import AttributionConfig, Registry, Store, UserCode, read_path, sweep  # noqa: E402
from otel_replay.attribution._sweep import sweep_cost  # noqa: E402
from otel_replay.attribution._sweep_stored import sweep_cost_stored, sweep_stored  # noqa: E402
from otel_replay.ingest import ingest  # noqa: E402
from otel_replay.resamplers._loading import load_resamplers  # noqa: E402

FAULTS = ("error", "timeout", "empty", "truncate")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=64)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, int, float, int]] = []
    (run,) = read_path(ROOT / "tests" / "attribution" / "scm" / "faults.jsonl")
    registry = Registry()
    load_resamplers([str(ROOT / "tests" / "attribution" / "scm" / "faults.py")], registry)
    config = AttributionConfig(max_rollouts=args.rollouts)
    most = sweep_cost(run, registry, FAULTS, None, config).most.calls
    spent = [
        sweep(run, registry, FAULTS, None, AttributionConfig(max_rollouts=args.rollouts, seed=s))
        for s in range(args.seeds)
    ]
    rows.append((run.id, len(spent[0].cells), statistics.mean(r.calls for r in spent), most))
    code = UserCode(
        resamplers=(str(ROOT / "examples" / "incident" / "tools.py"),),
        success_if="v841",
        entry_points=False,
    )
    with tempfile.TemporaryDirectory() as folder, Store.open(Path(folder) / "s.db") as store:
        ingest(store, read_path(ROOT / "sample_traces" / "incident.steps.jsonl"))
        for summary in list(store.runs()):
            ran = [
                sweep_stored(store, summary.id, FAULTS, None,
                             AttributionConfig(max_rollouts=args.rollouts, seed=s), code)
                for s in range(args.seeds)
            ]  # fmt: skip
            cost, _ = sweep_cost_stored(store, summary.id, FAULTS, None, config, code)
            calls = statistics.mean(r.calls for r in ran)
            rows.append((summary.id, len(ran[0].cells), calls, cost.most.calls))
    print(f"| run | cells | calls spent (mean of {args.seeds} seeds) | every cell to "
          f"{args.rollouts} | spent ÷ most |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, cells, calls, worst in rows:
        print(f"| {name} | {cells} | {calls:,.0f} | {worst:,} | {calls / worst:.2f} |")


if __name__ == "__main__":
    main()
