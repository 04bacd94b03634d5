"""A run's replayability as the commands say it: ``show``'s lines, and the warning ``replay``,
``fork`` and ``attribute`` give about a partial run before they start."""

from __future__ import annotations

from rich.text import Text

from otel_replay.cli._common import console, err_console, printable
from otel_replay.replayable import Replayability, ReplayabilityVerdict, lacking_note

#: How many of a run's replayability reasons ``show`` lists (``show --json`` has them all).
SHOWN_REASONS = 10

_VERDICT_STYLE = {
    ReplayabilityVerdict.REPLAYABLE: "green",
    ReplayabilityVerdict.PARTIAL: "yellow",
    ReplayabilityVerdict.NOT_REPLAYABLE: "red",
}


def print_replayability(verdict: Replayability, limit: int = SHOWN_REASONS) -> None:
    """The run's replayability verdict, then its first ``limit`` reasons, one a line."""
    line = Text("replayability: ")
    line.append(verdict.verdict.value, style=_VERDICT_STYLE[verdict.verdict])
    console.print(line, highlight=False)
    for reason in verdict.reasons[:limit]:
        console.print(Text(f"  {printable(str(reason))}"), highlight=False)
    if len(verdict.reasons) > limit:
        console.print(Text(f"  … and {len(verdict.reasons) - limit} more (--json lists them all)"))


def warn_partial(verdict: Replayability, run_id: str) -> None:
    """One line on stderr when a run's record lacks something a step needs to be re-run or
    served (a step rebuilt from the conversation lacks neither: it is not warned of)."""
    for note in lacking_note(verdict):
        said = f"warning: run {run_id}: {note} (agent-replay show lists all)"
        err_console.print(Text(printable(said), style="yellow"), highlight=False)
