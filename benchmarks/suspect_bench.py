"""A suspect verified first (``--suspect K``) against the plain adaptive attribution: the calls
each spends with the suspect right (the planted culprit), with it wrong (another resamplable step,
drawn with a seed), and without one, and whether each answer is right.

The runs: the bundled 7-step incident sample (``sample_traces/incident.otlp.jsonl`` with
``examples/incident/tools.py``, culprit step 3), and planted-culprit models of 8, 16, 32 and 64
steps from ``adaptive_bench.py`` (its ``single`` family: one decisive step among noisy ones, exact
true effects from ``synthetic.py``), with the culprit early, in the middle and late.

A confirmed suspect stops the attribution: its answer is right when the suspect is the planted
step (it matters) and the bracket it leaves starts there. A suspect not confirmed leaves the
attribution as it would have been: its answer is right when it names the planted step, as the plain
one does. Calls are resample-function calls (``AttributionResult.step_executions``).

Usage::

    python benchmarks/suspect_bench.py [--instances 3] [--sizes 7,8,16,32,64] \\
        [--positions early,middle,late]
"""

from __future__ import annotations

import argparse
import datetime
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adaptive_bench import judge, make
from synthetic import registry_of, trajectory_of, true_attributions

from otel_replay import Store, UserCode
from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    attribute,
    attribute_stored,
)
from otel_replay.importers import read_path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces" / "incident.otlp.jsonl"
SAMPLE_TOOLS = ROOT / "examples" / "incident" / "tools.py"
SAMPLE_ID = "ef2843ff"
SAMPLE_CULPRIT = 3
SIZES = (7, 8, 16, 32, 64)
POSITIONS = ("early", "middle", "late")


@dataclass(frozen=True, slots=True)
class Case:
    """One run attributed three ways: calls and whether each answer was right."""

    steps: int
    position: str
    plain: int
    right: int
    wrong: int
    plain_ok: bool
    right_ok: bool
    wrong_ok: bool
    confirmed: bool  # the right suspect was confirmed


def _answer(result: AttributionResult, culprit: int, effects: dict[int, float]) -> bool:
    """Right: the planted step named, or a confirmed suspect that is the planted step."""
    if result.suspect is not None and result.suspect.confirmed and result.bracket is not None:
        return result.suspect.step == culprit
    return judge(result.point_of_commitment, effects, result.verdict.value) == "right"


def _three(
    ask: Callable[[AttributionConfig], AttributionResult],
    culprit: int,
    others: Sequence[int],
    seed: int,
) -> tuple[AttributionResult, AttributionResult, AttributionResult]:
    """The run attributed plainly, with the right suspect, and with a wrong one (drawn)."""
    wrong = random.Random(f"suspect-bench:wrong:{seed}").choice(list(others))
    return (
        ask(AttributionConfig(seed=seed)),
        ask(AttributionConfig(seed=seed, suspect=culprit)),
        ask(AttributionConfig(seed=seed, suspect=wrong)),
    )


def case(n: int, position: str, instance: int) -> Case:
    rng = random.Random(f"suspect-bench:{n}:{position}:{instance}")
    for _ in range(1000):  # noise may outdo the planted step: draw again until theory agrees
        model = make("single", n, rng, position)
        effects = true_attributions(model)
        if max(i for i, a in effects.items() if a > 1e-9) == model.planted:
            break
    trajectory = trajectory_of(model, f"suspect-{n}-{position}-{instance}")
    registry = registry_of(model)
    seed = rng.getrandbits(32)
    others = [i for i in effects if i != model.planted]
    results = _three(
        lambda config: attribute(trajectory, registry, config),
        model.planted,
        others,
        seed,
    )
    return _case(n, position, results, model.planted, effects)


def sample_case(store: Store, instance: int) -> Case:
    code = UserCode(resamplers=(str(SAMPLE_TOOLS),))
    seed = random.Random(f"suspect-bench:sample:{instance}").getrandbits(32)
    # the sample's steps: step 3 matters (+0.78), every later one has no effect (the bundled
    # sample's documented answer); the earlier ones are never reached by the plain attribution
    effects = {i: (0.78 if i == SAMPLE_CULPRIT else 0.0) for i in range(7)}
    others = [i for i in range(7) if i != SAMPLE_CULPRIT]
    results = _three(
        lambda config: attribute_stored(store, SAMPLE_ID, config, code),
        SAMPLE_CULPRIT,
        others,
        seed,
    )
    return _case(7, "sample", results, SAMPLE_CULPRIT, effects)


def _case(
    n: int,
    position: str,
    results: tuple[AttributionResult, AttributionResult, AttributionResult],
    culprit: int,
    effects: dict[int, float],
) -> Case:
    plain, right, wrong = results
    return Case(
        n,
        position,
        plain.step_executions,
        right.step_executions,
        wrong.step_executions,
        _answer(plain, culprit, effects),
        _answer(right, culprit, effects),
        _answer(wrong, culprit, effects),
        bool(right.suspect and right.suspect.confirmed),
    )


def table(cases: Sequence[Case]) -> str:
    head = (
        "| steps | culprit | runs | plain calls | right suspect | ×plain | wrong suspect | ×plain "
        "| right answers (plain / right / wrong) | right suspect confirmed |\n"
        "|---:|---|---:|---:|---:|---:|---:|---:|---|---:|"
    )
    rows = [head]
    groups: dict[tuple[int, str], list[Case]] = {}
    for c in cases:
        groups.setdefault((c.steps, c.position), []).append(c)
    for (n, position), group in groups.items():
        plain = statistics.mean(c.plain for c in group)
        right = statistics.mean(c.right for c in group)
        wrong = statistics.mean(c.wrong for c in group)
        k = len(group)
        answers = (
            f"{sum(c.plain_ok for c in group)}/{k} · {sum(c.right_ok for c in group)}/{k} · "
            f"{sum(c.wrong_ok for c in group)}/{k}"
        )
        rows.append(
            f"| {n} | {position} | {k} | {plain:,.0f} | {right:,.0f} | "
            f"{statistics.mean(c.right / c.plain for c in group):.2f} | {wrong:,.0f} | "
            f"{statistics.mean(c.wrong / c.plain for c in group):.2f} | {answers} | "
            f"{sum(c.confirmed for c in group)}/{k} |"
        )
    return "\n".join(rows)


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--positions", default=",".join(POSITIONS))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    positions = args.positions.split(",")
    cases: list[Case] = []
    with tempfile.TemporaryDirectory() as folder:
        with Store.open(Path(folder) / "store.db") as store:
            if 7 in sizes:
                store.put_all(list(read_path(SAMPLE)))
                cases += [sample_case(store, i) for i in range(args.instances)]
        for n in (s for s in sizes if s != 7):
            for position in positions:
                cases += [case(n, position, i) for i in range(args.instances)]
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    print(f"suspect_bench, {today}, commit {_commit()}, {args.instances} runs per row\n")
    print(table(cases))


if __name__ == "__main__":
    main()
