"""The first hour's numbers: the failing sample run alone in a store of its own, attributed with no
code, against the incident example's stand-in model server (which also plays the tools), with 4
workers. For ``--tools recorded`` and ``--tools simulate``: the verdict, the rollouts, the model
calls and tool calls the report counts, the requests that played tools, and what the server
answered. The issue's target: the report's calls equal the server's tally (every request paid).

    python benchmarks/lone_incident_bench.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.incident import openai_server  # noqa: E402
from otel_replay import AttributionConfig, Store, UserCode, attribute_stored, read_path  # noqa: E402
from otel_replay.resamplers import ChatModelOptions  # noqa: E402

FAILING = "ef2843ff74cff6a6b6dc0914faa30751"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    server, url = openai_server.serve()
    run = next(
        r for r in read_path(ROOT / "sample_traces" / "incident.otlp.jsonl") if r.id == FAILING
    )
    print("tools      seed  verdict       step  rollouts  model  tool  played  report  server")
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "lone.db"
        with Store.open(store) as db:
            db.put(run)
        for tools in ("recorded", "simulate"):
            for seed in range(args.seeds):
                code = UserCode(tools=tools, success_if="v841", llm=ChatModelOptions(base_url=url))  # type: ignore[arg-type]
                server.served["model"] = 0
                with Store.open(store, read_only=True) as db:
                    result = attribute_stored(
                        db, FAILING, AttributionConfig(seed=seed, workers=4), code
                    )
                spend, played = result.spend, result.evidence.simulations
                report = spend.model + played
                row: list[Any] = [
                    tools, seed, result.verdict.value, result.point_of_commitment,
                    result.rollouts, spend.model, spend.tool, played, report, server.served["model"],
                ]  # fmt: skip
                print("{:<10} {:>4}  {:<12} {:>4}  {:>8}  {:>5}  {:>4}  {:>6}  {:>6}  {:>6}".format(
                    *(("—" if v is None else v) for v in row)))  # fmt: skip
    server.shutdown()


if __name__ == "__main__":
    main()
