"""What an attribution says first, before any rollout (and ``--dry-run`` with it): which steps
resampling can vary, and by what or why not (`otel_replay.attribution._variation`)."""

from __future__ import annotations

from collections.abc import Sequence

from otel_replay.attribution import WORLD, StepAttribution, Told, Variation
from otel_replay.cli._common import console, err_console, plural, shown
from otel_replay.model import Trajectory


def tell(json: bool) -> Told:
    """The first lines of an attribution, before any rollout: which steps it can vary, and by
    what (on standard error when standard output holds the report)."""

    def told(found: tuple[Variation, ...], run: Trajectory) -> None:
        for line in variation_lines(found):
            (err_console if json else console).print(shown(line), highlight=False)

    return told


def variation_lines(found: Sequence[Variation], most: int = 12) -> list[str]:
    """Which steps resampling can vary, and by what or why not, grouped by the reason (at most
    ``most`` groups; each names its steps)."""
    groups: dict[tuple[bool, str], list[Variation]] = {}
    for v in found:
        groups.setdefault((v.varied, v.how), []).append(v)
    varied = sum(1 for v in found if v.varied)
    lines = [
        f"{varied} of {plural(len(found), 'step')} can be varied by resampling (decided before "
        "any rollout):"
    ]
    for (is_varied, how), steps in list(groups.items())[:most]:
        state = "varied by" if is_varied else "not varied:"
        lines.append(f"  {_steps_named(steps)}: {state} {how}")
    if len(groups) > most:
        lines.append(f"  … and {len(groups) - most} more (--dry-run --json lists every step)")
    return lines


def _steps_named(steps: Sequence[Variation]) -> str:
    if len(steps) == 1:
        return f"step {steps[0].index} ({steps[0].kind} {steps[0].name})"
    indices = ", ".join(str(v.index) for v in steps[:10])
    more = f", … ({len(steps)} in all)" if len(steps) > 10 else ""
    kinds = ", ".join(sorted({v.kind for v in steps}))
    return f"steps {indices}{more} ({kinds})"


def held_cells(step: StepAttribution) -> list[str]:
    """The attribution, rates and test cells of a step served from the record in every rollout:
    observed-only, and (in a result that asked) not varied."""
    observed = step.variation is None or step.variation.startswith(WORLD)
    return ["observed-only" if observed else "", "", "" if step.varied is None else "not varied"]
