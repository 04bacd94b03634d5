"""A fleet of failing incident-investigator runs, each failing for one of a few planted reasons.

    python -m examples.incident.fleet --runs 1000 --seed 0 --out fleet.jsonl
    agent-replay import fleet.jsonl
    agent-replay attribute --all-failing --resamplers examples/incident/tools.py --success-if v841 --executor ray
    agent-replay blame

Each run is the investigator (`examples.incident.agent`'s loop) recorded live against the example
world with one fault injected (`KINDS`), drawn at the planted `RATES`:

* ``list_deploys`` comes back empty (the flaky deploy API): the investigator sees no deploy and
  blames the database; the culprit is the ``list_deploys`` step;
* ``query_metrics`` fails twice (an outage of the metrics API): it gives up and escalates; the
  culprit is the second ``query_metrics`` call.

With ``examples/incident/tools.py`` as resample functions, `blame` over the fleet's reports should
find ``list_deploys`` and ``query_metrics`` as the Points of Commitment at these rates. Runs differ
by the ticket their alert quotes (so no two are the same run) and are numbered ``fleet-00000`` …;
the same seed gives the same fleet.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

from otel_replay.export import write_jsonl
from otel_replay.model import Trajectory
from otel_replay.replay import AgentContext, record

from .agent import converse, outcome
from .conventions import TASK
from .world import World

#: Each planted reason for failing: the tool and the fault injected into it.
KINDS = {"list_deploys": ("list_deploys", "empty"), "query_metrics": ("query_metrics", "error")}
#: How often each is planted.
RATES = {"list_deploys": 0.7, "query_metrics": 0.3}


def faulty_investigator(ctx: AgentContext, ticket: int, tool: str, mode: str) -> str:
    """The investigator's loop over a world whose ``tool`` has fault ``mode``."""
    return converse(ctx, f"[ticket INC-{ticket:05d}] {TASK}", World({tool: mode}).call)


def fleet(runs: int, seed: int = 0) -> Iterator[tuple[str, Trajectory]]:
    """``runs`` failing runs and the reason planted in each, in order."""
    rng = random.Random(seed)
    kinds = sorted(RATES)
    for number in range(runs):
        kind = rng.choices(kinds, weights=[RATES[k] for k in kinds])[0]
        tool, mode = KINDS[kind]
        made = record(
            faulty_investigator,
            arguments={"ticket": number, "tool": tool, "mode": mode},
            seed=seed,
            outcome=outcome,
            agent_spec="examples.incident.fleet:faulty_investigator",
        )
        if made.trajectory.outcome != 0.0:  # every planted fault fails the run
            raise AssertionError(f"run {number} ({kind}) did not fail: {made.answer!r}")
        yield kind, dataclasses.replace(made.trajectory, id=f"fleet-{number:05d}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    planted: dict[str, int] = {}
    runs = []
    for kind, trajectory in fleet(args.runs, args.seed):
        planted[kind] = planted.get(kind, 0) + 1
        runs.append(trajectory)
    with args.out.open("wb") as out:
        write_jsonl(runs, out)
    print(json.dumps({"runs": len(runs), "planted": planted}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
