"""What an attribution spent and what its rollouts could not tell, as the terminal says it: the
cost line (the tool calls a model played apart, the rollouts left out's part) and one line each
for the store's draws, the faults fallback's calls, the unservable and the crashed rollouts."""

from __future__ import annotations

from otel_replay.attribution import AttributionResult
from otel_replay.cli._common import plural, short


def cost_line(result: AttributionResult) -> str:
    """What the attribution spent, in what users pay (the judge's calls are on its own line),
    and the part of it the rollouts left out of the estimates spent (every call made is paid)."""
    line = (
        f"cost: {plural(result.rollouts, 'rollout')}; {result.spend.words()} "
        f"({result.step_executions:,} resample-function calls)"
    )
    left_out, spent = result.evidence.left_out, result.evidence.spent
    played = result.evidence.simulations
    if played:
        tokens = result.evidence.simulated_tokens
        counted = f", {tokens:,} tokens" if tokens else ""
        line += (
            f"; {plural(played, 'tool call')} played by the model ({played:,} requests{counted})"
        )
    if result.suspect is not None and result.suspect.source == "judge":
        line += "; of the model calls, 1 named the suspect (--suspect judge)"
    if left_out and spent.calls:
        line += (
            f"; of which {spent.calls_words()} in the {plural(left_out, 'rollout')} left out "
            "(unservable or crashed)"
        )
    return line


def evidence_lines(result: AttributionResult) -> list[str]:
    """What the rollouts left out and where ``--tools recorded`` drew from, one line each."""
    e, lines = result.evidence, []
    if e.draws:
        runs = ", ".join(f"{short(run, 24)} {n}" for run, n in e.draws[:5])
        more = f", {len(e.draws) - 5} more runs" if len(e.draws) > 5 else ""
        total = sum(n for _, n in e.draws)
        lines.append(f"tool results drawn from the store: {total:,} ({runs}{more})")
    if e.faults:
        calls = "; ".join(f"{c.tool}({short(c.arguments, 60)}) {n}x" for c, n in e.faults[:3])
        lines.append(f"calls no run recorded, failed as injected faults: {calls}")
    if e.unservable:
        calls = "; ".join(f"{c.tool}({short(c.arguments, 60)}) in {n}" for c, n in e.unservable[:3])
        more = f"; {len(e.unservable) - 3} more calls" if len(e.unservable) > 3 else ""
        lines.append(
            f"{plural(e.unservable_rollouts, 'rollout')} left out as unservable (no stored run "
            f"recorded the call): {calls}{more}"
        )
    if e.crashed:
        lines.append(
            f"{plural(e.crashed, 'rollout')} left out as crashed (the agent raised; the first: "
            f"{short(e.first_crash or '', 120)})"
        )
    return lines
