"""What an attribution is asked to do (`AttributionConfig`) and the choices it offers."""

from __future__ import annotations

import dataclasses
import math
import re
import shlex
import warnings
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, NamedTuple

from otel_replay.errors import AttributionError, setting
from otel_replay.hashing import canonical_json, digest
from otel_replay.model import FAIL_THRESHOLD
from otel_replay.replay import Driver
from otel_replay.resamplers import UserCode


class Method(str, Enum):
    CONTRASTIVE = "contrastive"
    SHAPLEY = "shapley"
    ALL = "all"


#: How many Shapley permutations a ``shapley_se`` target may add up to (or ``permutations``, when
#: larger): 2048 antithetic pairs put a typical standard error near 0.007; a target beyond the cap's
#: reach stops there, and the summary's note says so.
MAX_PERMUTATIONS = 4096


class Strategy(str, Enum):
    """How the contrastive method spends rollouts. ``fixed`` was named ``sweep`` before (the
    fragility command's name): ``Strategy.SWEEP`` and the value ``"sweep"`` are still read as
    ``fixed`` for a release, and the question's digest keeps the old name
    (`AttributionConfig.canonical`), so a question asked before is the same question."""

    ADAPTIVE = "adaptive"  # walk back from the end, clearing by the band, testing the rest alone
    SCAN = "scan"  # from the last step back, each in growing batches until its tests decide
    FIXED = "fixed"  # every resamplable step at ``rollouts`` rollouts per plan
    SWEEP = "fixed"  # the old name of FIXED (an alias: the same member)

    @property
    def sequential(self) -> bool:
        """Decides as it goes, in growing batches (and so can keep a budget)."""
        return self is not Strategy.FIXED

    @classmethod
    def _missing_(cls, value: object) -> Strategy | None:
        if value == "sweep":
            warnings.warn(
                "the strategy 'sweep' is named 'fixed' now", DeprecationWarning, stacklevel=2
            )
            return cls.FIXED
        return None


class OnSuccess(str, Enum):
    ERROR = "error"  # attributing a passing run is a mistake: say so
    CREDIT = "credit"  # attribute the success instead: which step saved the run


class OnResamplerError(str, Enum):
    FAIL = "fail"  # stop, naming the step, the function and the exception
    FAIL_ROLLOUT = "fail-rollout"  # count that rollout as a failure, and report how many


class BudgetUnit(str, Enum):
    """What a ``budget`` counts."""

    CALLS = "calls"  # resample-function calls of every kind (free draws too): the default
    MODEL_CALLS = "model-calls"  # calls of llm steps' resample functions
    TOKENS = "tokens"  # the model calls' tokens (input and output)

    @property
    def words(self) -> str:
        """The unit as a sentence names it."""
        return {
            BudgetUnit.CALLS: "calls",
            BudgetUnit.MODEL_CALLS: "model calls",
            BudgetUnit.TOKENS: "tokens",
        }[self]


#: ``N`` or ``N:UNIT``: N digits (``_`` between them allowed), or a decimal or ``e`` notation.
_BUDGET = re.compile(r"(?P<amount>[0-9][0-9_]*(?:\.[0-9]+)?(?:e[0-9]+)?)(?::(?P<unit>.*))?", re.I)


class Budget(NamedTuple):
    """A budget as `parse_budget` reads it: how many of what."""

    amount: int
    unit: BudgetUnit


def parse_budget(text: str) -> Budget:
    """A budget as the command line gives it: ``N`` (resample-function calls), ``N:calls``,
    ``N:model-calls`` or ``N:tokens``; N a whole number, 1 or more (``1e6`` and ``1_000_000``
    too)."""
    given = text.strip()
    found = _BUDGET.fullmatch(given)
    units = ", ".join(u.value for u in BudgetUnit)
    if found is None:
        raise AttributionError(
            f"{setting('budget', text, quoted=True)} is not a budget: give N (resample-function "
            f"calls) or N:UNIT, UNIT one of {units} (e.g. 500:model-calls, 1e6:tokens)"
        )
    given_unit = found.group("unit")
    unit_text = BudgetUnit.CALLS.value if given_unit is None else given_unit.strip().lower()
    try:
        unit = BudgetUnit(unit_text)
    except ValueError:
        raise AttributionError(
            f"{setting('budget', text, quoted=True)}: {unit_text!r} is not a unit of budget; "
            f"known units: {units}"
        ) from None
    digits = found.group("amount").replace("_", "")
    amount = int(digits) if digits.isdigit() else float(digits)
    if not math.isfinite(amount) or amount != int(amount) or amount < 1:
        raise AttributionError(
            f"{setting('budget', text, quoted=True)} must be a whole number of {unit.words}, 1 or more"
        )
    return Budget(int(amount), unit)


def budget_settings(text: str | None) -> dict[str, Any]:
    """``budget`` and ``budget_unit`` of `AttributionConfig` from ``--budget`` (`parse_budget`;
    None: no budget)."""
    if text is None:
        return {"budget": None}
    budget = parse_budget(text)
    return {"budget": budget.amount, "budget_unit": budget.unit}


def suspect_setting(text: str | None) -> int | Literal["judge"] | None:
    """``suspect`` of `AttributionConfig` from ``--suspect``: a step index, or ``judge``."""
    if text is None:
        return None
    given = text.strip().lower()
    if given == "judge":
        return "judge"
    if not given.isdigit():
        raise AttributionError(
            f"{setting('suspect', text, quoted=True)} is neither a step index (0 or more) nor judge"
        )
    return int(given)


def budget_words(budget: int, unit: BudgetUnit) -> str:
    """The budget as a sentence says it: ``5,000 calls``, ``500 model calls``."""
    return f"{budget:,} {unit.words}"


def budget_text(budget: int, unit: BudgetUnit) -> str:
    """The budget as ``--budget`` takes it back (`parse_budget`)."""
    return str(budget) if unit is BudgetUnit.CALLS else f"{budget}:{unit.value}"


@dataclass(frozen=True, slots=True)
class AttributionConfig:
    """
    Attributes:
        rollouts: rollouts per plan of the fixed strategy (``strategy=Strategy.FIXED``), and of
            each repair trial.
        strategy: the walk from the end back, clearing steps by the band and testing the others
            alone in growing batches (adaptive, the default), every step from the end back
            tested alone (scan), or every step at ``rollouts`` (fixed)
            (`otel_replay.attribution._adaptive`).
        max_rollouts: the sequential strategies' most rollouts per plan.
        budget: the most the sequential strategies spend, in ``budget_unit`` (None: no limit);
            a question stops before a batch that would pass it.
        budget_unit: what ``budget`` counts: resample-function calls (``calls``, every kind),
            model calls (``model-calls``), or the model calls' tokens (``tokens``: the usage the
            record holds for each model step, `otel_replay.attribution._spend`).
        permutations: Shapley permutations (rounded up to an even number: antithetic pairs); with
            ``shapley_se``, the first batch.
        shapley_se: add antithetic pairs until every Shapley standard error is below this
            (None: run ``permutations`` and stop); at most `MAX_PERMUTATIONS`.
        seed: every random draw derives from it; same seed, same report.
        method: contrastive (Point of Commitment), shapley, or all.
        fail_threshold: a run fails when its outcome is below this.
        margin: equivalence margin: a later step "has no effect" when its interval lies in ±margin.
        repair: search for the smallest repair of the culprit's output.
        max_repair_candidates: how many candidate outputs the repair search tries at most.
        on_success, on_resampler_error: see the enums.
        workers: threads running rollouts (results are identical for any number).
        concurrency: rollouts of an ``async def`` live agent run at once on one event loop
            (results are identical for any number; other drivers use ``workers``).
        driver: without a live agent, walk the record (``trace``), re-drive the tool-calling loop
            (``chat``), or the loop whenever the record is a tool-calling chat (``auto``).
        max_turns: model turns a rollout of the loop may take (default twice the recorded turns).
        swap_model: ask the swap question instead: every model turn a plan runs again is
            answered by this model (`Plan.under_model`), so the located step is the latest one
            from which the run re-run with it is saved, and each step's estimate is the credit of
            starting the swap there rather than one step later.
        swap_from: with ``swap_model``, the first step whose model turns it answers (earlier
            ones, run again, are asked of the recorded model).
        keep_rollouts: keep the first this many rollouts of each plan, their runs and the plan
            they rolled out (`AttributionResult.kept`), to be sent out or looked at; it changes
            nothing the attribution finds.
        root_cause: the sequential strategies also look for the root cause, the earliest step
            that matters (`AttributionResult.root_cause`), step by step from the start of the run;
            it costs calls on top of the Point of Commitment's, shown apart. The fixed strategy
            estimates every step, so it always reports one.
        suspect: a step suspected of the failure, its test run first (`_suspect`): its index
            as the table shows it, or ``"judge"`` (one model call reads the run and names one).
            Confirmed, the attribution stops there; not confirmed, it goes on as without one.
    """

    rollouts: int = 100
    permutations: int = 32
    seed: int = 0
    method: Method = Method.CONTRASTIVE
    fail_threshold: float = FAIL_THRESHOLD
    margin: float = 0.1
    repair: bool = False
    max_repair_candidates: int = 8
    on_success: OnSuccess = OnSuccess.ERROR
    on_resampler_error: OnResamplerError = OnResamplerError.FAIL
    workers: int = 1
    concurrency: int = 1
    driver: Driver = Driver.AUTO
    max_turns: int | None = None
    shapley_se: float | None = None
    strategy: Strategy = Strategy.ADAPTIVE
    max_rollouts: int = 640
    budget: int | None = None
    budget_unit: BudgetUnit = BudgetUnit.CALLS
    swap_model: str | None = None
    swap_from: int = 0
    keep_rollouts: int = 0
    root_cause: bool = False
    suspect: int | Literal["judge"] | None = None

    def __post_init__(self) -> None:
        index = isinstance(self.suspect, int) and not isinstance(self.suspect, bool)
        if self.suspect not in (None, "judge") and not (index and int(self.suspect or 0) >= 0):
            raise AttributionError(
                f"{setting('suspect', self.suspect)} must be a step index (0 or more) or judge"
            )
        if self.swap_model is not None and not self.swap_model.strip():
            raise AttributionError(
                f"{setting('swap_model', '', quoted=True)} names no model: give the model to swap in"
            )
        if self.swap_from < 0:
            raise AttributionError(
                f"{setting('swap_from', self.swap_from)} must be a step index (0 or more)"
            )
        if self.swap_from and self.swap_model is None:
            raise AttributionError(
                f"{setting('swap_from', self.swap_from)} says from which step "
                f"{setting('swap_model')} answers: give the model too"
            )
        if self.rollouts < 1:
            raise AttributionError(f"{setting('rollouts', self.rollouts)} must be at least 1")
        if self.keep_rollouts < 0:
            raise AttributionError(
                f"{setting('keep_rollouts', self.keep_rollouts)} must be 0 or more"
            )
        if self.permutations < 1:
            raise AttributionError(
                f"{setting('permutations', self.permutations)} must be at least 1"
            )
        if self.workers < 1:
            raise AttributionError(f"{setting('workers', self.workers)} must be at least 1")
        if self.concurrency < 1:
            raise AttributionError(f"{setting('concurrency', self.concurrency)} must be at least 1")
        if self.max_rollouts < 1:
            raise AttributionError(
                f"{setting('max_rollouts', self.max_rollouts)} must be at least 1"
            )
        if not isinstance(self.budget_unit, BudgetUnit):
            try:  # the unit's name as text is the unit (a Python caller's "tokens")
                object.__setattr__(self, "budget_unit", BudgetUnit(self.budget_unit))
            except ValueError:
                raise AttributionError(
                    f"{setting('budget_unit', self.budget_unit, quoted=True)} is not a unit of "
                    f"budget; known units: {', '.join(u.value for u in BudgetUnit)}"
                ) from None
        if self.budget is not None and (
            isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1
        ):
            raise AttributionError(
                f"{setting('budget', self.budget)} must be a whole number, at least 1 "
                f"({self.budget_unit.words})"
            )
        if self.budget is not None and not self.strategy.sequential:
            raise AttributionError(
                f"{setting('budget', self.budget)} needs the adaptive or the scan strategy, which stop early; the "
                f"fixed strategy's cost is set by rollouts (see {setting('dry_run')})"
            )
        if self.max_turns is not None and self.max_turns < 1:
            raise AttributionError(f"{setting('max_turns', self.max_turns)} must be at least 1")
        if not 0.0 < self.fail_threshold <= 1.0:
            raise AttributionError(
                f"{setting('fail_threshold', self.fail_threshold, text=f'{self.fail_threshold:g}')} must be above 0 and at most 1 (outcomes run "
                "from 0.0, failure, to 1.0, success)"
            )
        if not 0.0 < self.margin < 1.0:
            raise AttributionError(f"{setting('margin', self.margin)} must be between 0 and 1")
        if self.shapley_se is not None:
            if not 0.0 < self.shapley_se < 1.0:  # false for NaN too
                raise AttributionError(
                    f"{setting('shapley_se', self.shapley_se, text=f'{self.shapley_se:g}')} must be above 0 and below 1 (a standard "
                    "error of Shapley values, which lie between -1 and 1)"
                )
            if self.method is Method.CONTRASTIVE:
                raise AttributionError(
                    f"{setting('shapley_se', self.shapley_se, text=f'{self.shapley_se:g}')} is a target for Shapley values: use it with "
                    "method shapley or all"
                )

    def canonical(self) -> dict[str, Any]:
        """Every setting that can change a result, as plain JSON (``workers`` and
        ``concurrency`` never do, so they are left out): what identifies the question asked."""
        canonical = {
            item.name: _plain(getattr(self, item.name))
            for item in dataclasses.fields(self)
            if item.name not in _SPEED_ONLY
        }
        if self.budget_unit is BudgetUnit.CALLS:  # the unit every budget had before it was asked
            del canonical["budget_unit"]  # for: the questions asked before keep their digests
        if self.strategy is Strategy.FIXED:
            canonical["strategy"] = "sweep"  # its name before: the questions keep their digests
        if self.suspect is None:  # only when given: the questions asked before keep their digests
            del canonical["suspect"]
        return canonical

    def flags(self) -> list[str]:
        """The command-line options that set this configuration (``--workers`` never changes
        results, so it is left out)."""
        flags = [
            "--method",
            self.method.value,
            "--rollouts",
            str(self.rollouts),
            "--permutations",
            str(self.permutations),
            "--seed",
            str(self.seed),
            "--fail-threshold",
            f"{self.fail_threshold:g}",
            "--margin",
            f"{self.margin:g}",
            "--on-success",
            self.on_success.value,
            "--on-resampler-error",
            self.on_resampler_error.value,
        ]
        if self.driver is not Driver.AUTO:
            flags += ["--driver", self.driver.value]
        if self.max_turns is not None:
            flags += ["--max-turns", str(self.max_turns)]
        if self.shapley_se is not None:
            flags += ["--shapley-se", repr(self.shapley_se)]
        flags += ["--strategy", self.strategy.value]
        if self.strategy.sequential:
            flags += ["--max-rollouts", str(self.max_rollouts)]
            if self.budget is not None:
                flags += ["--budget", budget_text(self.budget, self.budget_unit)]
        if self.swap_model is not None:
            flags += ["--swap-model", self.swap_model]
        if self.swap_from:
            flags += ["--from", str(self.swap_from)]
        if self.root_cause and self.strategy.sequential:
            flags += ["--root-cause"]
        if self.suspect is not None:
            flags += ["--suspect", str(self.suspect)]
        return [*flags, "--repair"] if self.repair else flags


def rerun_command(trajectory_id: str, config: AttributionConfig, code: UserCode) -> str:
    """The ``agent-replay attribute`` command line that reproduces an attribution."""
    return shlex.join(["agent-replay", "attribute", trajectory_id, *code.flags(), *config.flags()])


#: Settings that change how fast an attribution runs, or what it keeps besides, never what it finds.
_SPEED_ONLY = frozenset({"workers", "concurrency", "keep_rollouts"})


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def config_digest(config: AttributionConfig, code: UserCode) -> str:
    """What identifies the question an attribution asks, apart from the run: the digest of the
    canonical JSON of its configuration (`AttributionConfig.canonical`) and of the code it runs
    (`otel_replay.resamplers.UserCode.canonical`), however either was given (the command line,
    Python). Two attributions with one digest asked the same question (the store keeps one
    report per run and digest)."""
    question = {"attribution": config.canonical(), "code": code.canonical()}
    return digest(canonical_json(question))
