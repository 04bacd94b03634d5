"""Plans: one intervention per recorded step, and the plan families attribution is built from.

A plan's ``identity`` names it completely (``ablate_from:3``, ``coalition:p7a:2``, ...); rollout ``r``
of a plan draws its randomness from ``(seed, stream, r)``, so results never depend on the order in
which rollouts run. A plan's ``stream`` is its identity, except in the family of plans that resample
from a step on (`Plan.ablate_from`), which share one: rollout ``r`` of ``ablate_from:3`` and of
``ablate_from:5`` draw the same numbers at the same step, so two of them differ only where their
interventions do (common random numbers). The tests that compare two such plans read their
rollouts in pairs (`otel_replay.attribution._stats.paired_difference_bounds`), and need far fewer
of them to show that a step changes nothing. Identities are made here and nowhere else: a plan
compares and hashes by its identity, so the plan itself is the key of its outcomes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from otel_replay.hashing import canonical_json, digest


class Action(str, Enum):
    HOLD = "hold"  # serve the recorded output
    RESAMPLE = "resample"  # call the resample function (observed-only steps are held instead)
    FORCE = "force"  # do(output): inject an output
    REMOVE = "remove"  # drop the step from the counterfactual run
    EDIT = "edit"  # edit-context: run the step again on its inputs with a JSON Patch applied


@dataclass(frozen=True, slots=True)
class Intervention:
    """One step's intervention. ``move`` names a FORCE in the intervention algebra: ``do`` (the
    agent's action is replaced: a model turn's output, a tool call's arguments by way of the turn
    that asked for it) or ``observe`` (the action kept, what came back replaced); the mechanics
    are the same, served at the step, and the name goes with the plan, the fork and the diff."""

    action: Action
    output: Any = None  # for FORCE
    error: str | None = None  # for FORCE: inject a failure instead of an output
    move: str | None = None  # for FORCE: "do" or "observe"

    @classmethod
    def force(cls, output: Any) -> Intervention:
        return cls(Action.FORCE, output)

    @classmethod
    def fail(cls, error: str) -> Intervention:
        return cls(Action.FORCE, None, error)

    @classmethod
    def do(cls, output: Any) -> Intervention:
        """do(action): the step's output is the agent's new action (a model turn's message)."""
        return cls(Action.FORCE, output, move="do")

    @classmethod
    def edit(cls, patch: list[Any]) -> Intervention:
        """edit-context: the step's inputs with ``patch`` (RFC 6902) applied, the step run again
        on them (a new operation: never served the old output)."""
        return cls(Action.EDIT, patch, move="edit")

    @classmethod
    def swap_model(cls, model: str) -> Intervention:
        """swap-model: every model turn from the step on is answered by ``model`` (through the
        model's resample function, which finds it in ``step.inputs["model"]``)."""
        return cls(Action.RESAMPLE, {"model": model}, move="swap-model")

    @classmethod
    def observe(cls, output: Any = None, error: str | None = None) -> Intervention:
        """mock-observe: the recorded call kept, ``output`` (or a failure, ``error``) returned."""
        return cls(Action.FORCE, None if error is not None else output, error, move="observe")

    @property
    def name(self) -> str:
        """The move in the algebra: hold, resample, do, observe, edit, remove or swap-model (an
        unnamed FORCE is a forced output: ``force``)."""
        return self.move or self.action.value

    def describe(self) -> str:
        """One line for a person: what the step gets under this intervention."""
        if self.action is Action.HOLD:
            return "hold: served as recorded"
        if self.action is Action.REMOVE:
            return "remove: left out of the run"
        if self.move == "swap-model":
            return f"swap-model: asked anew of {self.output['model']}"
        if self.action is Action.RESAMPLE:
            return "resample: run again through its resample function"
        if self.action is Action.EDIT:
            ops = ", ".join(f"{o.get('op')} {o.get('path')}" for o in self.output or ())
            return f"edit: run again on its inputs patched ({ops or 'no operation'})"
        what = f"fails with {self.error!r}" if self.error is not None else "returns this output"
        if self.move == "do":
            return "do: the agent's action replaced (the turn's new message)"
        if self.move == "observe":
            return f"observe: the recorded call kept, it {what}"
        return f"force: the step {what}"


HOLD = Intervention(Action.HOLD)
RESAMPLE = Intervention(Action.RESAMPLE)
REMOVE = Intervention(Action.REMOVE)


@dataclass(frozen=True, slots=True)
class Plan:
    """One intervention per recorded step, under an identity that names the plan completely (two
    plans with one identity are the same plan: equality and hashing use the identity alone)."""

    identity: str
    interventions: tuple[Intervention, ...] = field(compare=False)
    #: A plan-level model override: every model turn from this step on that the plan runs again
    #: (resampled, edited, or new where the run diverged) is asked of this model, through the
    #: model's resample function; held and forced turns are not.
    model_from: tuple[int, str] | None = field(default=None, compare=False)
    #: the random streams its rollouts draw from, when not its own (module docstring)
    stream: str = field(default="", compare=False)

    @property
    def randomness(self) -> str:
        """What rollout ``r``'s random streams are derived from, with the seed and ``r``."""
        return self.stream or self.identity

    def resampled(self, indices: Collection[int]) -> list[int]:
        """Which of ``indices`` this plan resamples (each is one resample-function call a rollout)."""
        return [i for i in indices if self.interventions[i].action is Action.RESAMPLE]

    @property
    def resamples_nothing(self) -> bool:
        """No step is resampled: the trace walk of this plan is deterministic."""
        return all(i.action is not Action.RESAMPLE for i in self.interventions)

    def at(self, index: int) -> Intervention:
        return self.interventions[index]

    def under_model(self, model: str, start: int = 0) -> Plan:
        """This plan with every model turn it runs again (resampled, edited, or new) from step
        ``start`` on answered by ``model``: the counterfactual world of ``attribute --swap-model``.
        Held and forced steps are untouched, so a plan that holds everything still reproduces the
        record."""
        at = f"@{start}" if start else ""
        stream = f"{self.stream}@{model}{at}" if self.stream else ""
        return Plan(f"{self.identity}@{model}{at}", self.interventions, (start, model), stream)

    def describe(self) -> str:
        """One line for a person: the plan's interventions, runs of one move run together."""
        parts: list[str] = []
        start = 0
        for i in range(1, len(self.interventions) + 1):
            if i == len(self.interventions) or self.interventions[i] != self.interventions[start]:
                steps = f"step {start}" if i - 1 == start else f"steps {start}-{i - 1}"
                parts.append(f"{steps}: {self.interventions[start].name}")
                start = i
        if self.model_from is not None:
            first, model = self.model_from
            parts.append(
                f"model turns run again from step {first} on: asked of {model}"
                if first
                else f"model turns run again: asked of {model}"
            )
        return "; ".join(parts) or "no step"

    @classmethod
    def factual(cls, n_steps: int) -> Plan:
        """Hold everything: the recorded run."""
        return cls("factual", (HOLD,) * n_steps)

    @classmethod
    def ablate_from(cls, n_steps: int, start: int) -> Plan:
        """Hold steps before ``start``, resample the rest."""
        return cls(
            f"ablate_from:{start}",
            tuple(HOLD if i < start else RESAMPLE for i in range(n_steps)),
            stream="ablate_from",
        )

    @classmethod
    def coalition(cls, n_steps: int, kept: Collection[int], label: str) -> Plan:
        """Hold the steps in ``kept``, resample every other step (``label`` names the coalition)."""
        return cls(
            f"coalition:{label}", tuple(HOLD if i in kept else RESAMPLE for i in range(n_steps))
        )

    @classmethod
    def permutation_coalition(
        cls, n_steps: int, kept: Collection[int], *, permutation: int, size: int
    ) -> Plan:
        """The coalition of the first ``size`` players of Shapley permutation number
        ``permutation``. Permutations come in antithetic pairs: an even number is pair
        ``permutation // 2``'s order, the odd one after it that order reversed."""
        pair, reverse = divmod(permutation, 2)
        return cls.coalition(n_steps, kept, f"p{pair}{'ab'[reverse]}:{size}")

    @classmethod
    def coalition_end(cls, n_steps: int, players: Collection[int], *, kept: bool) -> Plan:
        """Every player held (``kept``) or every player resampled: the two ends Shapley efficiency
        is checked against, estimated apart from the permutations."""
        label = "efficiency:all" if kept else "efficiency:none"
        return cls.coalition(n_steps, players if kept else (), label)

    @classmethod
    def forced(
        cls, n_steps: int, index: int, output: Any, *, then: Intervention = RESAMPLE
    ) -> Plan:
        """Hold before ``index``, inject ``output`` at it, ``then`` after (a repair trial, a fork)."""
        return cls.intervene(n_steps, index, Intervention.force(output), then=then)

    @classmethod
    def intervene(
        cls, n_steps: int, index: int, at: Intervention, *, then: Intervention = RESAMPLE
    ) -> Plan:
        """Hold before ``index``, apply ``at`` to it, ``then`` to every later step."""
        interventions = tuple(
            HOLD if i < index else at if i == index else then for i in range(n_steps)
        )
        named = [at.action.value, at.output, at.error] + ([at.move] if at.move else [])
        what = digest(canonical_json(named))[:16]
        return cls(f"forced:{index}:{what}:{then.action.value}", interventions)

    @classmethod
    def faulted(cls, n_steps: int, index: int, fault: str, at: Intervention) -> Plan:
        """A cell of the fragility map (``sweep``): hold before ``index``, inject the fault named
        ``fault`` there (``at``: what it does), resample every later step."""
        made = cls.intervene(n_steps, index, at)
        what = made.identity.split(":")[2]
        return cls(f"fault:{index}:{fault}:{what}", made.interventions)

    @classmethod
    def swapped(
        cls,
        n_steps: int,
        start: int,
        model: str,
        *,
        turns: Collection[int] = (),
        then: Intervention = RESAMPLE,
    ) -> Plan:
        """Hold before ``start``; from it on, every model turn (``turns``: the recorded ones, and
        any new one) asked anew of ``model``, every other step ``then``."""
        interventions = tuple(
            HOLD if i < start else RESAMPLE if i in turns else then for i in range(n_steps)
        )
        return cls(f"swap:{start}:{model}:{then.action.value}", interventions, (start, model))

    def repair_baseline(self, index: int) -> Plan:
        """This plan's interventions under an identity of their own: rollouts independent of this
        plan's, the fresh baseline a repair of step ``index`` is judged against (the estimate that
        picked the step is biased by having been picked)."""
        return Plan(f"repair-baseline:{index}", self.interventions)
