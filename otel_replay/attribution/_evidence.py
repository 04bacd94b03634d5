"""What the rollouts of an attribution could not tell, and where ``--tools recorded`` drew from:
the `Evidence` of a result, and the words its explanation gains from it.

A rollout that could not be served or whose agent crashed is no evidence about the task
(`otel_replay.attribution._engine.Outcome.counts`). The evidence is *missing* when the engine
stopped for it, or when half the rollouts (or half of those of a plan an estimate reads) were
left out: what is left is not a fair sample of what the run could have done (the rollouts left
out are those that took another path, often the very ones that would have succeeded), so the
verdict is ``no-evidence`` and nothing is named or cleared. Fewer left out, the verdict stands on
the rest and says so.
"""

from __future__ import annotations

from collections import Counter
from typing import TypeVar

from otel_replay.attribution._contrastive import Localisation
from otel_replay.attribution._engine import Engine, EvidenceMissing
from otel_replay.attribution._results import Evidence, Proportion
from otel_replay.errors import setting
from otel_replay.resamplers import Call

T = TypeVar("T", str, Call)


def evidence_of(engine: Engine, found: Localisation | None, stopped: bool) -> Evidence:
    """What the engine's rollouts could not tell and where the draws came from; ``missing`` when
    the engine ``stopped`` for it, or half the rollouts or more were left out, or half of those
    of a plan an estimate reads."""
    left_out = engine.left_out
    read: list[Proportion] = []
    if found is not None:
        read += [p for s in found.steps for p in (s.kept, s.ablated) if p is not None]
        read += [p for t in found.search for p in (t.comparison.kept, t.comparison.ablated)]
    missing = stopped or (
        left_out > 0
        and (2 * left_out >= engine.rollouts or any(p.left_out and p.left_out >= p.n for p in read))
    )
    return Evidence(
        unservable=_most_first(engine.unservable),
        crashed=engine.crashes,
        first_crash=engine.first_crash,
        draws=_most_first(engine.draws),
        faults=_most_first(engine.faults),
        missing=missing,
        spent=engine.left_out_spend,
        simulated=_most_first(engine.simulated),
        simulated_tokens=engine.simulated_tokens,
    )


def _most_first(counts: Counter[T]) -> tuple[tuple[T, int], ...]:
    """``counts`` from the largest down, ties in their natural order (the same on any executor)."""
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def told(
    explanation: str, rollouts: int, evidence: Evidence, stopped: EvidenceMissing | None
) -> str:
    """``explanation`` told what the evidence lacks: in place of it when the evidence is missing
    (``stopped``: the engine stopped on it), how many rollouts were left out and why after it
    when the rest could still decide, and how many calls the faults fallback failed."""
    if evidence.left_out:
        explanation = _left_out(explanation, rollouts, evidence, stopped)
    if evidence.faults and not evidence.missing:
        failed = sum(n for _, n in evidence.faults)
        explanation += (
            f" {failed} calls that no stored run recorded failed as injected faults "
            f"({setting('tools', 'recorded,faults')}): the estimates take those tools to fail."
        )
    if evidence.simulated and not evidence.missing:
        tools = ", ".join(sorted({call.tool for call, _ in evidence.simulated}))
        explanation += (
            f" The rollouts' results of {tools} were played by the model "
            f"({evidence.simulations} simulated calls, {setting('tools', 'simulate')}): the "
            "verdict rests on what the model made up for those tools, not on results the world "
            "gave."
        )
    return explanation


def _left_out(
    explanation: str, rollouts: int, evidence: Evidence, stopped: EvidenceMissing | None
) -> str:
    reasons = []
    if evidence.unservable:
        calls = "; ".join(
            f"{call.tool}({_cut(call.arguments)})" + (f" in {n} rollouts" if n > 1 else "")
            for call, n in evidence.unservable[:3]
        )
        more = len(evidence.unservable) - 3
        calls += f"; and {more} more calls" if more > 0 else ""
        reasons.append(
            f"{evidence.unservable_rollouts} could not be served (no stored run recorded {calls})"
        )
    if evidence.crashed:
        reasons.append(f"{evidence.crashed} crashed (the agent raised {evidence.first_crash})")
    why = " and ".join(reasons)
    if not evidence.missing:
        return (
            f"{explanation} {evidence.left_out} of {rollouts} rollouts are left out, neither "
            f"successes nor failures: {why}; the rates are those of the rest."
        )
    fixes = []
    if evidence.unservable:
        fixes.append(
            f"import runs that made those calls, or let them fail as injected faults "
            f"({setting('tools', 'recorded,faults')})"
        )
    if evidence.crashed:
        fixes.append("make the agent run (its model server, its code) and attribute again")
    among = f"{evidence.left_out} of {rollouts} rollouts"
    if stopped is not None and stopped.plan is not None:
        among = (
            f"{stopped.left_out} of the {stopped.ran} rollouts of the plan "
            f"'{stopped.plan.describe()}' ({evidence.left_out} of {rollouts} in all)"
        )
    return (
        f"No evidence: {among} could not be used: {why}. "
        "What is left is not a fair sample of what the run could have done, so no step is named "
        f"and none is cleared; {' and '.join(fixes)}."
    )


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
