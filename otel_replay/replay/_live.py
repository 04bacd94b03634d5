"""Record, replay, fork: the agent-driven operations, on top of the two contexts."""

from __future__ import annotations

import dataclasses
import inspect
import os
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.errors import (
    CanonicalJSONError,
    InterventionError,
    NonDeterminismError,
    ReplayError,
    setting,
)
from otel_replay.hashing import canonical_json, check_json_value, digest
from otel_replay.model import SpanNode, Step, StepKind, Trajectory
from otel_replay.replay._cassette import ReplayContext
from otel_replay.replay._diff import TrajectoryDiff, diff
from otel_replay.replay._plan import HOLD, RESAMPLE, Action, Intervention, Plan
from otel_replay.replay._rollout import Rollout, rollout, score
from otel_replay.replay._running import arun_agent, run_agent
from otel_replay.replay._steps import RecordingContext
from otel_replay.replay._tracing import RecordedSpans, emit_spans
from otel_replay.replay._values import Redactor, lossy
from otel_replay.resamplers import Registry
from otel_replay.resamplers._context import RolloutSeed
from otel_replay.resamplers._registry import describe

AgentFunction = Callable[..., Any]
OutcomeFunction = Callable[[Trajectory], Any]


def _json_or_repr(value: Any) -> Any:
    try:
        check_json_value(value)
        return value
    except CanonicalJSONError:
        return lossy(value)


@dataclass(frozen=True, slots=True)
class Recording:
    trajectory: Trajectory
    spans: RecordedSpans
    answer: Any
    error: str | None  # the agent raised: "Type: message" (the run is recorded up to there)


def record(
    agent: AgentFunction,
    *,
    arguments: Any = None,
    seed: int = 0,
    registry: Registry | None = None,
    lax: bool = False,
    outcome: OutcomeFunction | None = None,
    agent_spec: str = "",
    redact: Sequence[str] = (),
    ledger: Callable[[Trajectory], None] | None = None,
) -> Recording:
    """Run ``agent`` live, recording every step and emitting its spans. Text matching any of the
    ``redact`` patterns is replaced with ``[REDACTED]`` in what is recorded (steps' inputs and
    outputs, the run's input and answer) before it is hashed; a replay applies them again.

    ``ledger`` is handed the run so far each time a step completes (`partial_run`: its id fixed
    for the recording, marked as ended early), so a caller that stores it keeps every whole step
    of a run whose process is killed."""
    ctx = RecordingContext(seed, registry, lax=lax, redact=redact)
    started = time.time_ns()
    if ledger is not None:
        scrub_input = Redactor(redact)(_json_or_repr(arguments))
        partial = partial_id(agent_spec, started)

        def so_far(steps: Sequence[Step]) -> None:
            ledger(partial_run(partial, steps, agent_spec, scrub_input, seed, redact))

        ctx.on_step = so_far
    answer, error = run_agent(agent, ctx, arguments)
    ended = time.time_ns()
    steps = ctx.ledger.steps
    answer = _json_or_repr(answer)
    scrub = Redactor(redact)
    answer = scrub(answer)
    metadata: dict[str, Any] = {
        "source": "record",
        "format": "agent",
        "agent": agent_spec,
        "input": scrub(_json_or_repr(arguments)),
        "seed": seed,
        "answer": answer,
    }
    if redact:
        metadata["redact"] = list(redact)
    if error is not None:
        metadata["agent_error"] = error
    if ctx.ledger.lossy:
        metadata["lossy_steps"] = list(ctx.ledger.lossy)
    draft = Trajectory.build("recording", steps, metadata=metadata)
    value = score(outcome, draft) if outcome is not None else None
    if value is None and error is not None:
        value = 0.0
    name = getattr(agent, "__name__", "agent")
    spans = emit_spans(
        steps,
        agent_name=name,
        arguments=metadata["input"],
        answer=answer,
        outcome=value,
        started=started,
        ended=ended,
        error=error,
        seed=seed,
        agent_spec=agent_spec,
    )
    span_ids = _span_ids(spans)
    linked = [
        dataclasses.replace(
            step.unlinked(),
            span_id=span_ids[i + 1] if i + 1 < len(span_ids) else None,
            parent_span_id=span_ids[0] if span_ids else None,
        )
        for i, step in enumerate(steps)
    ]
    nodes = [SpanNode(span_ids[0], None, name, "agent", started, ended)] if span_ids else []
    nodes += [
        SpanNode(
            step.span_id or f"#{i}",
            step.parent_span_id,
            f"{step.kind.value} {step.name}",
            "step",
            step.start_time_unix_nano,
            step.end_time_unix_nano,
            step.status,
            i,
        )
        for i, step in enumerate(linked)
    ]
    trajectory = Trajectory.build(
        spans.trace_id, linked, outcome=value, metadata=metadata, spans=nodes
    )
    return Recording(trajectory, spans, answer, error)


def is_built_in(agent: AgentFunction) -> bool:
    """Whether ``agent`` is one of agent-replay's own (the chat loop): it never changes what it is
    served, and an operation nothing can run is served as recorded rather than stopping it (see
    `ReplayContext`)."""
    return getattr(agent, "built_in", False) is True


def _span_ids(spans: RecordedSpans) -> list[str]:
    """Root first, then one per step, in step order (the SDK exports the root last)."""
    ids = [
        s.span_id.hex()
        for rs in spans.request.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    ]
    return ids[-1:] + ids[:-1] if ids else []


@dataclass(frozen=True, slots=True)
class Replay:
    original: Trajectory
    trajectory: Trajectory  # the replayed run, as far as it got
    diff: TrajectoryDiff
    nondeterminism: NonDeterminismError | None
    ending: str | None = None  # how the end differs when every step matched (answer, crash)
    answer: Any = None  # what the agent returned in the replay

    @property
    def identical(self) -> bool:
        return self.nondeterminism is None and self.diff.identical and self.ending is None


def _redacted(trajectory: Trajectory) -> list[str]:
    """The patterns a recording was redacted with (a replay applies them to its calls too)."""
    patterns = trajectory.metadata.get("redact") or []
    return [p for p in patterns if isinstance(p, str)]


def _inputs_of(trajectory: Trajectory, agent: AgentFunction | None) -> tuple[Any, int]:
    """The recorded run's input and seed. The input was the recorded agent's: the built-in chat
    loop, which rebuilds its opening from the record, is given none (a run recorded with
    ``record --agent`` and attributed without its agent used to hand the loop that agent's
    arguments, and every rollout failed before its first step)."""
    meta = trajectory.metadata
    seed = meta.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ReplayError(
            f"{trajectory.id} has seed {seed!r} in its metadata; a recorded run's seed is an integer"
        )
    return (None if agent is not None and is_built_in(agent) else meta.get("input")), seed


def replay(
    original: Trajectory,
    agent: AgentFunction,
    *,
    registry: Registry | None = None,
    live_kinds: Collection[StepKind] = (),
    on_miss: str = "error",
) -> Replay:
    """Re-run ``agent`` with the recorded outputs served; compare the two ledgers. A call the
    record does not hold stops the replay (``on_miss="error"``) or runs live (``"resample"``)."""
    arguments, seed = _inputs_of(original, agent)
    ctx = ReplayContext(
        original,
        seed,
        registry=registry,
        on_miss=on_miss,
        live_kinds=live_kinds,
        redact=_redacted(original),
    )
    problem: NonDeterminismError | None = None
    answer: Any = None
    error: str | None = None
    try:
        answer, error = run_agent(agent, ctx, arguments)
    except NonDeterminismError as exc:
        problem = exc
    ending = None
    if problem is None:
        recorded_error = original.metadata.get("agent_error")
        if error != recorded_error:
            ending = f"the agent {'raised ' + error if error else 'returned'} after the last step (recorded: {'raised ' + str(recorded_error) if recorded_error else 'returned'})"
        elif (
            "answer" in original.metadata
            and Redactor(_redacted(original))(_json_or_repr(answer)) != original.metadata["answer"]
        ):
            ending = f"the answer differs: {_json_or_repr(answer)!r} (recorded: {original.metadata['answer']!r})"
    replayed = Trajectory.build(
        original.id,
        ctx.ledger.steps,
        outcome=original.outcome,
        metadata={**original.metadata, "answer": _json_or_repr(answer), "source": "replay"},
    )
    return Replay(original, replayed, diff(original, replayed), problem, ending, answer)


@dataclass(frozen=True, slots=True)
class Resumed:
    """A run continued from where it ended: the new run, how many of its steps were served from
    the record (the frontier), and how the agent ended this time."""

    trajectory: Trajectory
    frontier: int
    served: int
    answer: Any
    error: str | None


def ended_early(run: Trajectory) -> str | None:
    """Why ``run`` ended before its agent returned (killed mid-run, the agent raised), or None."""
    meta = run.metadata
    if meta.get("ended_early"):
        return str(meta["ended_early"])
    if meta.get("agent_error"):
        return f"the agent raised {meta['agent_error']}"
    return None


def resume(
    original: Trajectory,
    agent: AgentFunction,
    *,
    registry: Registry | None = None,
    outcome: OutcomeFunction | None = None,
    ledger: Callable[[Trajectory], None] | None = None,
    agent_spec: str = "",
) -> Resumed:
    """Continue a run that ended early: re-run ``agent`` with every recorded step served (nothing
    of the record runs again), then live from the frontier on, recording the continuation. The
    result is a new run (``resume-…``) whose metadata names the run it resumed and the frontier;
    ``ledger`` keeps its steps as they complete, as `record`'s does. With the built-in chat loop
    as ``agent`` (an imported tool-calling run), a run whose record stops before a final answer
    has ended early too, and the model's resample function makes the continuation."""
    why = ended_early(original)
    if why is None and is_built_in(agent) and original.final_answer is None:
        why = "the record stops before a final answer"
    if why is None:
        raise ReplayError(
            f"run {original.id} finished (its agent returned): there is nothing to resume; "
            "`replay` re-runs it, `fork` changes it"
        )
    arguments, seed = _inputs_of(original, agent)
    ctx = ReplayContext(
        original, seed, registry=registry, on_miss="resample", redact=_redacted(original)
    )
    frontier = len(original.steps)
    run_id = f"resume-{digest(canonical_json([original.id, frontier, agent_spec]))[:24]}"
    if ledger is not None:
        spec = agent_spec or str(original.metadata.get("agent", ""))

        def so_far(steps: Sequence[Step]) -> None:
            ledger(partial_run(run_id, steps, spec, arguments, seed, _redacted(original)))

        ctx.on_step = so_far
    answer, error = run_agent(agent, ctx, arguments)
    kept = {k: v for k, v in original.metadata.items() if k not in _ENDING}
    metadata: dict[str, Any] = {
        **kept,
        "source": "resume",
        "resumed_from": original.id,
        "frontier": frontier,
        "answer": Redactor(_redacted(original))(_json_or_repr(answer)),
    }
    if agent_spec:
        metadata["agent"] = agent_spec
    if error is not None:
        metadata["agent_error"] = error
    draft = Trajectory.build(run_id, [s.unlinked() for s in ctx.ledger.steps], metadata=metadata)
    value = score(outcome, draft) if outcome is not None else None
    if value is None and error is not None:
        value = 0.0
    served = sum(m is not None for m in ctx.ledger.matched)
    trajectory = dataclasses.replace(draft, outcome=value)
    return Resumed(trajectory, frontier, served, answer, error)


#: What a run's metadata says of how it ended, which a resumed run says afresh.
_ENDING = frozenset({"ended_early", "agent_error", "answer", "lossy_steps"})


def partial_id(agent_spec: str, started_ns: int) -> str:
    """The id of a recording's partial run: fixed for the recording, apart from every other."""
    return f"partial-{digest(f'{agent_spec}:{started_ns}:{os.getpid()}'.encode())[:24]}"


def partial_run(
    run_id: str,
    steps: Sequence[Step],
    agent_spec: str,
    arguments: Any,
    seed: int,
    redact: Sequence[str] = (),
) -> Trajectory:
    """A recording so far: its whole steps, marked ``ended_early`` (what the store holds of a
    recording whose process died before it finished; `resume` continues it)."""
    metadata: dict[str, Any] = {
        "source": "record",
        "format": "agent",
        "agent": agent_spec,
        "input": arguments,
        "seed": seed,
        "ended_early": "the recording stopped before the agent returned",
    }
    if redact:
        metadata["redact"] = list(redact)
    return Trajectory.build(run_id, [s.unlinked() for s in steps], outcome=None, metadata=metadata)


def _plan(original: Trajectory, at: int, intervention: Intervention, *, then: Intervention) -> Plan:
    """A fork's plan: the intervention at ``at``, or from it on for a swapped model."""
    if intervention.move == "swap-model":
        model = str(intervention.output["model"])
        turns = [s.index for s in original.steps if s.kind is StepKind.LLM]
        return Plan.swapped(len(original.steps), at, model, turns=turns, then=then)
    return Plan.intervene(len(original.steps), at, intervention, then=then)


def _check_swappable(original: Trajectory, plan: Plan, registry: Registry) -> None:
    """A swapped model answers through the model's resample function: the trace walk needs one
    for every model turn it swaps."""
    if plan.model_from is None:
        return
    start, model = plan.model_from
    for step in original.steps[start:]:
        if step.kind is StepKind.LLM and registry.lookup(step) is None:
            raise InterventionError(
                f"{setting('swap_model')} asks model turn {step.index} of {model!r} through the "
                f"model's resample function, and there is none (register one, or "
                f"{setting('llm', 'openai')})"
            )


def fork_id(
    original: Trajectory,
    at: int,
    intervention: Intervention,
    driver: str = "",
    seed: int | None = None,
) -> str:
    """``fork-`` and a digest of everything that makes the fork what it is: its own namespace, so a
    prefix of the original's id stays unique."""
    what = canonical_json(
        [
            original.id,
            at,
            intervention.action.value,
            intervention.output,
            intervention.error,
            driver,
            seed,
            *([intervention.move] if intervention.move else []),
        ]
    )
    return f"fork-{digest(what)[:24]}"


def fork(
    original: Trajectory,
    at: int,
    intervention: Intervention,
    *,
    agent: AgentFunction | None = None,
    registry: Registry | None = None,
    outcome: OutcomeFunction | None = None,
    seed: int | None = None,
) -> Trajectory:
    """Hold the steps before ``at``, inject at ``at``, and let the run continue.

    With ``agent``: the live code continues, served from the record wherever a call still matches.
    Without: later steps are resampled where a resample function exists, else held and listed in
    ``metadata["stale_steps"]`` (their recorded outputs may no longer follow from what came before).
    """
    if not 0 <= at < len(original.steps):
        raise InterventionError(
            f"{setting('at', at)} is not a step of {original.id} (it has {len(original.steps)})"
        )
    registry = registry or Registry()
    arguments, recorded_seed = _inputs_of(original, agent)
    metadata: dict[str, Any] = {
        **original.metadata,
        "source": "fork",
        "format": "fork",
        "forked_from": original.id,
        "fork_at": at,
        "injected": {"output": intervention.output, "error": intervention.error},
    }
    if intervention.move is not None:
        metadata["move"] = intervention.move
    if agent is not None:
        driver = f"agent:{describe(agent)}"
        if is_built_in(agent):  # its rollouts run the registered functions: they make the fork
            driver += ":" + ",".join(registry.descriptions())
        plan = _plan(original, at, intervention, then=HOLD)
        # the recorded seed throughout unless --seed asks for new randomness where the run diverges
        streams = RolloutSeed.of(recorded_seed if seed is None else seed, plan)
        ctx = ReplayContext(
            original,
            recorded_seed,
            plan=plan,
            registry=registry,
            on_miss="resample",
            rollout=streams,
            fresh_seed=None if seed is None else streams.of_agent(),
            redact=_redacted(original),
            holds=lambda position: True,
            shares_record=is_built_in(agent),
            holds_observed_only=is_built_in(agent),
        )
        answer, error = run_agent(agent, ctx, arguments)
        steps = ctx.ledger.steps
        metadata["answer"] = _json_or_repr(answer)
        if error is not None:
            metadata["agent_error"] = error
        if ctx.ledger.diverged_at is not None:
            metadata["diverged_at"] = ctx.ledger.diverged_at
        # later calls that still matched were served from the record: for a stateful tool the
        # recorded output may no longer be what the world would answer
        metadata["served_after_fork"] = [
            position
            for position, matched in enumerate(ctx.ledger.matched)
            if position > at and matched is not None and matched != at
        ]
    else:
        driver = "resamplers:" + ",".join(registry.descriptions())
        plan = _plan(original, at, intervention, then=RESAMPLE)
        _check_swappable(original, plan, registry)
        result = rollout(original, plan, registry, seed or 0, 0)
        steps = list(result.trajectory.steps)
        metadata["stale_steps"] = [
            s.index for s in original.steps if s.index > at and registry.lookup(s) is None
        ]
    fresh = [s.unlinked() for s in steps]
    draft = Trajectory.build("fork", fresh, metadata=metadata)
    value = score(outcome, draft) if outcome is not None else None
    if value is None and registry.verifier is not None:
        value = score(registry.verifier, draft)
    return Trajectory.build(
        fork_id(original, at, intervention, driver, seed), fresh, outcome=value, metadata=metadata
    )


def agent_driver(
    factual: Trajectory, agent: AgentFunction, registry: Registry, seed: int
) -> AgentDriver:
    """Rollouts that run the live agent under the replay context (attribution with ``--agent``)."""
    return AgentDriver(factual, agent, registry, seed)


class AgentDriver:
    """``driver(plan, index)`` rolls the live agent out once; an ``async def`` agent also offers
    `arollout`, which runs on the caller's event loop, so many rollouts share one."""

    def __init__(
        self, factual: Trajectory, agent: AgentFunction, registry: Registry, seed: int
    ) -> None:
        self.factual, self.agent, self.registry, self.seed = factual, agent, registry, seed
        self.arguments, self.recorded_seed = _inputs_of(factual, agent)
        self.built_in = is_built_in(agent)
        # served from the record even where a plan resamples them (see ReplayContext._decide)
        self.observed_only = {s.index for s in factual.steps if not s.resamplable}
        self.asynchronous = inspect.iscoroutinefunction(agent)

    def __call__(self, plan: Plan, index: int) -> Rollout:
        ctx = self._context(plan, index)
        return self._rollout(plan, index, ctx, *run_agent(self.agent, ctx, self.arguments))

    async def arollout(self, plan: Plan, index: int) -> Rollout:
        ctx = self._context(plan, index)
        answer, error = await arun_agent(self.agent, ctx, self.arguments)
        return self._rollout(plan, index, ctx, answer, error)

    def _context(self, plan: Plan, index: int) -> ReplayContext:
        def holds(position: int) -> bool:  # held and forced positions replay the recorded draws
            return position < len(plan.interventions) and plan.at(position).action in (
                Action.HOLD,
                Action.FORCE,
            )

        streams = RolloutSeed.of(self.seed, plan, index)
        return ReplayContext(
            self.factual,
            self.recorded_seed,
            plan=plan,
            registry=self.registry,
            on_miss="resample",
            rollout=streams,
            fresh_seed=streams.of_agent(),
            holds=holds,
            redact=_redacted(self.factual),
            shares_record=self.built_in,
            holds_observed_only=self.built_in,
        )

    def _rollout(
        self, plan: Plan, index: int, ctx: ReplayContext, answer: Any, error: str | None
    ) -> Rollout:
        live = sum(  # what ran: calls the record does not hold, and resampled recorded steps
            1
            for matched in ctx.ledger.matched
            if matched is None
            or (plan.at(matched).action is Action.RESAMPLE and matched not in self.observed_only)
        )
        meta = {"plan": plan.identity, "rollout": index, "answer": _json_or_repr(answer)}
        if error is not None:
            meta["agent_error"] = error
        trajectory = Trajectory(self.factual.id, tuple(ctx.ledger.steps), metadata=meta)
        return Rollout(plan, index, trajectory, live)
