"""Issue 42, item 1: a lucky record behind a real early culprit. Step 4 arms the run (+0.65), a
middle step drew a 1-in-100 luck that made the crash all but impossible (−0.98), and a later step
crashed anyway (+0.99): the Point of Commitment (`long_runs.LUCKY_BEHIND`, and the same at 48
steps). Naming step 4 is wrong: a later step's effect passes the margin. The search that cleared
the steps after the culprit together, with no look inside the dip between the luck and the crash,
named it on a share of seeds far beyond the stated bound; the statistical tier runs the default
(the walk, since) over seeds and holds it to the bound."""

from __future__ import annotations

import pytest

from otel_replay.attribution import AttributionConfig, attribute
from otel_replay.attribution._contrastive import ERROR_BOUND
from tests.attribution.long_runs import LUCKY_BEHIND, LUCKY_BEHIND_48, LongRun

MARGIN = 0.1  # the default --margin
#: Seeds per model: 23 seconds for both models with the old search (2026-12-06, which named the
#: early culprit on 12 and 13 seeds of 40).
SEEDS = 40
#: (model, the early culprit, the lucky step, the crash)
CASES = {
    "32 steps": (LUCKY_BEHIND, 4, 20, 22),
    "48 steps": (LUCKY_BEHIND_48, 4, 33, 36),
}


@pytest.mark.parametrize("name", CASES)
def test_the_models_are_what_they_are_built_to_be(name: str) -> None:
    model, culprit, luck, crash = CASES[name]
    effects = model.effects()
    assert effects[culprit] == pytest.approx(0.66 * 0.9901)  # +0.65
    assert effects[luck] == pytest.approx(-0.9801)
    assert effects[crash] == pytest.approx(0.99)
    others = [a for i, a in enumerate(effects) if i not in (culprit, luck, crash)]
    assert others == pytest.approx([0.0] * len(others))
    # the early culprit is a wrong name, the crash the right one
    assert model.wrongly_named(culprit, MARGIN) and not model.wrongly_named(crash, MARGIN)
    # every plan from the luck to the crash fails 1 time in 100: a dip inside an otherwise
    # certain failure, from the culprit to the end of the run
    rates = [model.failure_rate(q) for q in range(len(model.rules) + 1)]
    assert all(rates[q] == pytest.approx(0.01) for q in range(luck + 1, crash + 1))
    assert all(rates[q] > 0.98 for q in range(culprit + 1, luck + 1))


def _named(model: LongRun) -> list[int | None]:
    trajectory, registry = model.trajectory(), model.registry()
    return [
        attribute(trajectory, registry, AttributionConfig(seed=seed)).point_of_commitment
        for seed in range(SEEDS)
    ]


@pytest.mark.statistical
@pytest.mark.parametrize("name", CASES)
def test_a_lucky_record_behind_an_early_culprit_keeps_the_stated_bound(name: str) -> None:
    """With room, as the simulation tier allows: a rule wrong at the bound's rate would pass this
    about two times in five at 40 seeds; the prefix search was wrong on about a third of them. The
    walk's band cannot accept the dip (every plan in it fails 1 time in 100), so it names the
    crash every time."""
    model, crash = CASES[name][0], CASES[name][3]
    named = _named(model)
    wrong = [step for step in named if step is not None and model.wrongly_named(step, MARGIN)]
    assert len(wrong) <= ERROR_BOUND * SEEDS / 2, (len(wrong), SEEDS, named)
    assert named.count(crash) >= 0.95 * SEEDS, named
