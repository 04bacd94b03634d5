"""What an attribution costs in what users pay: model calls and their tokens, tool calls, and the
draws from the store that cost nothing.

Every rollout calls a resample function for each step its plan resamples. Those calls are not all
alike to a user's bill: a model call is paid per call and per token, a tool call per call (or not
at all), and a ``--tools recorded`` answer drawn from the store costs nothing. `Spend` keeps the
three apart (their sum is the resample-function calls, ``step_executions``), with the tokens of
the model calls: as the model's server counted them when the built-in model made the call
(``measured``), else estimated from the usage the record holds for the step the call stood in for
(``estimated``: a rollout that resamples a model step is taken to cost what the recorded call
did), else unknown (``unpriced``: counted, never taken as 0).

`Pricing` is what a plan's rollouts will cost, read from the record before they run: the same
figures the dry run prints and the sequential strategies check against a budget (`BudgetUnit`).
A budget in tokens charges each model call with no recorded usage the most any recorded model call
of the run used, so that the budget holds whatever those calls cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.attribution._config import BudgetUnit
from otel_replay.errors import AttributionError
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.resamplers import RecordedOutcomes, Registry


@dataclass(frozen=True, slots=True)
class Spend:
    """Resample-function calls split by what they cost, and the model calls' tokens.

    ``model``: calls of llm steps' resample functions; ``tool``: of every other step's (tools,
    retrievals, …) that called something; ``free``: answered by ``--tools recorded`` from the
    store (or as its injected faults), counted but not paid. ``tokens`` adds up the model calls
    whose tokens are known: ``measured`` of them as the server counted them, ``estimated`` from
    the record's usage; ``unpriced`` model calls have no known figure and are not in ``tokens``.
    """

    model: int = 0
    tool: int = 0
    free: int = 0
    tokens: int = 0
    measured: int = 0
    estimated: int = 0
    unpriced: int = 0

    @property
    def calls(self) -> int:
        """Every resample-function call: the unit of ``--budget N``."""
        return self.model + self.tool + self.free

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.model + other.model,
            self.tool + other.tool,
            self.free + other.free,
            self.tokens + other.tokens,
            self.measured + other.measured,
            self.estimated + other.estimated,
            self.unpriced + other.unpriced,
        )

    def __sub__(self, other: Spend) -> Spend:
        return Spend(*(getattr(self, name) - getattr(other, name) for name in _FIELDS))

    def times(self, n: int) -> Spend:
        """``n`` rollouts' worth."""
        return Spend(*(n * getattr(self, name) for name in _FIELDS))

    def at_most(self, unit: BudgetUnit, budget: int | None) -> Spend:
        """This as a bound that a budget also caps: the budget's own count (every count, for a
        budget in calls) no more than the budget."""
        if budget is None:
            return self
        if unit is BudgetUnit.CALLS:
            return Spend(*(min(getattr(self, name), budget) for name in _FIELDS))
        if unit is BudgetUnit.MODEL_CALLS:
            model = min(self.model, budget)
            return Spend(
                model,
                self.tool,
                self.free,
                self.tokens,
                min(self.measured, model),
                min(self.estimated, model),
                min(self.unpriced, model),
            )
        return Spend(
            self.model,
            self.tool,
            self.free,
            min(self.tokens, budget),
            self.measured,
            self.estimated,
            self.unpriced,
        )

    def to_record(self) -> dict[str, Any]:
        """The split as the report and ``--dry-run --json`` write it."""
        return {
            "model_calls": self.model,
            "tool_calls": self.tool,
            "free_draws": self.free,
            "tokens": {
                "total": self.tokens,
                "measured": self.measured,
                "estimated": self.estimated,
                "unknown": self.unpriced,
            },
        }

    @classmethod
    def from_record(cls, record: Any) -> Spend | None:
        """The split as `to_record` wrote it (None: a record without it, an older report's)."""
        if not isinstance(record, Mapping) or not isinstance(record.get("tokens"), Mapping):
            return None
        tokens = record["tokens"]
        counts = [
            record.get("model_calls"),
            record.get("tool_calls"),
            record.get("free_draws"),
            *(tokens.get(k) for k in ("total", "measured", "estimated", "unknown")),
        ]
        if not all(isinstance(n, int) for n in counts):
            return None
        return cls(*(n for n in counts if isinstance(n, int)))

    def words(self, about: bool = False) -> str:
        """The split as a sentence says it: ``40 model calls (≈12,300 tokens, estimated from the
        recorded usage), 20 tool calls, 15 free draws from the store`` (``about``: the calls are
        an estimate too)."""
        said = ("about " if about else "") + _counted(self.model, "model call")
        if self.model:
            said += f" ({self.tokens_words()})"
        said += f", {_counted(self.tool, 'tool call')}"
        if self.free:
            said += f", {_counted(self.free, 'free draw')} from the store"
        return said

    def calls_words(self) -> str:
        """The calls alone, those there are: ``12 model calls, 18 free draws`` (model calls
        always)."""
        said = [_counted(self.model, "model call")]
        if self.tool:
            said.append(_counted(self.tool, "tool call"))
        if self.free:
            said.append(_counted(self.free, "free draw"))
        return ", ".join(said)

    def tokens_words(self) -> str:
        """What the model calls' tokens are, and where the figure comes from."""
        if self.measured + self.estimated == 0:
            return "tokens unknown: no recorded usage"
        if self.estimated == 0:
            head = f"{self.tokens:,} tokens, as the model counted them"
        elif self.measured == 0:
            head = f"≈{self.tokens:,} tokens, estimated from the recorded usage"
        else:
            head = (
                f"≈{self.tokens:,} tokens: {self.measured:,} calls as the model counted them, "
                f"{self.estimated:,} estimated from the recorded usage"
            )
        if self.unpriced:
            head += f"; {_counted(self.unpriced, 'call')} with no recorded usage, not counted"
        return head


def _counted(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


_FIELDS = ("model", "tool", "free", "tokens", "measured", "estimated", "unpriced")

#: Nothing spent.
NOTHING = Spend()


def recorded_tokens(step: Step, trajectory: Trajectory) -> int | None:
    """The tokens (input and output) a recorded model call used: as its span recorded them
    (``token_usage`` in the run's metadata, by span id: `otel_replay.importers._usage`), else as
    the response the SDK returned says (``usage`` of a recorded OpenAI or Anthropic response);
    None when the record does not say. A total alone stands for both; one of the two alone is
    not the call's cost, so it is unknown."""
    usage = trajectory.metadata.get("token_usage")
    counts = usage.get(step.span_id) if isinstance(usage, Mapping) and step.span_id else None
    if not isinstance(counts, Mapping) and isinstance(step.output, Mapping):
        counts = step.output.get("usage")
    if not isinstance(counts, Mapping):
        return None
    both = [_count(counts.get(k)) for k in ("input_tokens", "output_tokens")]
    if None in both:
        both = [_count(counts.get(k)) for k in ("prompt_tokens", "completion_tokens")]
    if None not in both:
        return sum(n for n in both if n is not None)
    return _count(counts.get("total_tokens"))


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


@dataclass(frozen=True, slots=True)
class Pricing:
    """What each resamplable step costs a rollout that resamples it, read from the record:
    ``kinds`` of the resamplable steps, which of them ``--tools recorded`` answers (``free``), and
    each model step's recorded tokens (None: the record does not say)."""

    kinds: Mapping[int, StepKind]
    free: frozenset[int]
    tokens: Mapping[int, int | None]

    @classmethod
    def of(cls, trajectory: Trajectory, registry: Registry, resamplable: Sequence[int]) -> Pricing:
        steps = {s.index: s for s in trajectory.steps}
        free = set()
        for i in resamplable:
            found = registry.lookup(steps[i])
            if found is not None and isinstance(found.function, RecordedOutcomes):
                free.add(i)
        tokens = {
            i: recorded_tokens(steps[i], trajectory)
            for i in resamplable
            if steps[i].kind is StepKind.LLM
        }
        return cls({i: steps[i].kind for i in resamplable}, frozenset(free), tokens)

    @property
    def dearest(self) -> int | None:
        """The most tokens a recorded model call used (None: no model step records any)."""
        known = [n for n in self.tokens.values() if n is not None]
        return max(known) if known else None

    def rollout(self, resampled: Iterable[int], rollouts: int = 1) -> Spend:
        """What ``rollouts`` rollouts that resample the steps ``resampled`` cost."""
        model = tool = free = tokens = priced = unpriced = 0
        for i in resampled:
            if self.kinds.get(i) is StepKind.LLM:
                model += 1
                n = self.tokens.get(i)
                if n is None:
                    unpriced += 1
                else:
                    tokens, priced = tokens + n, priced + 1
            elif i in self.free:
                free += 1
            else:
                tool += 1
        return Spend(model, tool, free, tokens, 0, priced, unpriced).times(rollouts)

    def spent(
        self,
        executions: int,
        model_steps: Sequence[int | None],
        drawn: int,
        measured: Sequence[int],
    ) -> Spend:
        """What one rollout that ran spent: ``executions`` resample-function calls, of them the
        model calls standing in for ``model_steps`` (None: a call the record does not hold),
        ``drawn`` answered free by ``--tools recorded``; ``measured``, the tokens the built-in
        model's server counted for its calls. When every model call was counted, the counts are
        the tokens; otherwise each call is priced from the record."""
        model = len(model_steps)
        tool = max(0, executions - model - drawn)
        if model and len(measured) == model:
            return Spend(model, tool, drawn, sum(measured), model, 0, 0)
        known = [self.tokens.get(i) if i is not None else None for i in model_steps]
        priced = [n for n in known if n is not None]
        return Spend(model, tool, drawn, sum(priced), 0, len(priced), model - len(priced))

    def charge(self, spend: Spend, unit: BudgetUnit) -> int:
        """``spend`` in ``unit``: a model call of unknown tokens is charged `dearest`."""
        if unit is BudgetUnit.CALLS:
            return spend.calls
        if unit is BudgetUnit.MODEL_CALLS:
            return spend.model
        return spend.tokens + spend.unpriced * (self.dearest or 0)

    def check_budget(self, unit: BudgetUnit, trajectory_id: str) -> None:
        """A budget in tokens needs a model step whose usage the record holds."""
        if unit is not BudgetUnit.TOKENS:
            return
        if not self.tokens:
            raise AttributionError(
                f"a budget in tokens counts the tokens of model calls, and no resamplable step of "
                f"run {trajectory_id} is a model call: give the budget in calls"
            )
        if self.dearest is None:
            raise AttributionError(
                f"run {trajectory_id} records no token usage on its model steps, so a budget in "
                "tokens cannot be kept: give it in model calls or in calls"
            )
