"""Many small stored runs, seeded, written straight through `Store.put_all`: the store the paging
test (5,000 runs) and ``store_bench.py`` (1,000 and 100,000) look at.

Each run is a short tool-calling exchange (a model call, a few tool calls, a last model call) whose
step count, outcome, format, source and start time are drawn from ``random.Random(seed)``, so the
same seed builds the same store. About one run in 40 has no start time and one in 10 no outcome,
so the orders' and filters' handling of unknowns is exercised. Writing through the store, not
through JSON import, builds 100,000 runs in minutes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.store import Store

FORMATS = ("otlp-json", "otlp-jsonl", "jsonl", "langfuse", "otlp-proto")
#: 2026-11-01T00:00:00Z: the first run's start; runs start about a minute apart.
EPOCH_NS = 1_793_491_200_000_000_000


def run(index: int, rng: random.Random) -> Trajectory:
    """The ``index``-th run of a seeded store."""
    tools = rng.randint(0, 10)
    timed = rng.random() > 0.025
    start = EPOCH_NS + index * 60_000_000_000 + rng.randint(0, 59_000_000_000)
    steps = []
    messages = [{"role": "user", "content": f"task {index % 97}: find what broke"}]
    for n in range(tools + 2):
        at = start + n * 1_000_000_000 if timed else None
        end = None if at is None else at + 500_000_000
        if n in (0, tools + 1):
            reply = {"role": "assistant", "content": f"step {n} of run {index}"}
            steps.append(
                Step(StepKind.LLM, "gpt-4o", {"model": "gpt-4o", "messages": list(messages)},
                     output=reply, start_time_unix_nano=at, end_time_unix_nano=end)
            )  # fmt: skip
            messages.append(reply)
        else:
            steps.append(
                Step(StepKind.TOOL, f"tool_{n % 4}", {"arguments": {"q": f"{index}-{n}"}},
                     output={"rows": n}, start_time_unix_nano=at, end_time_unix_nano=end)
            )  # fmt: skip
    outcome = None if rng.random() < 0.1 else rng.choice((0.0, 0.0, 1.0, 1.0, 1.0, 0.25))
    metadata = {
        "format": rng.choice(FORMATS),
        "source": f"/traces/batch-{index % 13:02d}/runs-{index // 500:04d}.jsonl",
    }
    trace_id = f"{rng.getrandbits(128):032x}"
    return Trajectory.build(trace_id, steps, outcome=outcome, metadata=metadata)


def runs(count: int, seed: int = 0) -> Iterator[Trajectory]:
    rng = random.Random(seed)
    for index in range(count):
        yield run(index, rng)


def build_store(path: Path, count: int, seed: int = 0, batch: int = 5000) -> Path:
    """A store at ``path`` holding ``count`` seeded runs (a transaction per ``batch``)."""
    generated = runs(count, seed)
    with Store.open(path) as db:
        for _ in range(0, count, batch):
            db.put_all(next(generated) for _ in range(min(batch, count - db.count_runs())))
    return path
