"""Record, replay, fork: the agent-driven operations, on top of the two contexts."""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, cast

from otel_replay.errors import (
    InterventionError,
    NonDeterminismError,
    setting,
)
from otel_replay.hashing import canonical_json, digest
from otel_replay.model import SpanNode, Step, StepKind, Trajectory
from otel_replay.otlp_spans import MADE_ATTRIBUTES
from otel_replay.redaction import Redactor, redact_run
from otel_replay.replay._cassette import Record, ReplayContext
from otel_replay.replay._diff import TrajectoryDiff, diff
from otel_replay.replay._made import (
    AS_RECORDED,
    ENDING,
    VERIFIER_KEYS,
    AgentFunction,
    AgentRaised,
    OutcomeFunction,
    Verifying,
    instrument_for,
    is_built_in,
    json_or_repr,
    partial_id,
    partial_run,
    raised_in,
    redacted,
    remembered_verifier,
    run_inputs,
    scoring,
    verifier_name,
)
from otel_replay.replay._plan import HOLD, RESAMPLE, Action, Intervention, Plan
from otel_replay.replay._rollout import Rollout, rollout, score
from otel_replay.replay._running import arun_agent, run_agent
from otel_replay.replay._steps import Ledger, RecordingContext
from otel_replay.replay._tracing import RecordedSpans, emit_spans
from otel_replay.resamplers import Registry, RolloutSeed, describe


@dataclass(frozen=True, slots=True)
class Recording:
    trajectory: Trajectory
    spans: RecordedSpans
    answer: Any
    error: str | None  # the agent raised: "Type: message" (the run is recorded up to there)
    raised: AgentRaised | None = None  # ... at which step, what


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
    verifier_spec: str = "",
) -> Recording:
    """Run ``agent`` live, recording every step and emitting its spans. Text matching any of the
    ``redact`` patterns is replaced with ``[REDACTED]`` in what is recorded (steps' inputs and
    outputs, the run's input, answer and error) before it is hashed; a replay applies them again,
    and a fork, a resumed run or a kept rollout of the run applies them to all it stores. The
    common secrets are a set of patterns like any other:
    ``redact=[*otel_replay.COMMON_SECRET_PATTERNS, r"tok-\\d+"]``.

    The run's metadata remembers how it was made, for `replay`, `fork` and `resume`: the agent
    (``agent_spec``), its input and seed, the SDKs instrumented in this process
    (`otel_replay.instrument`), the ``redact`` patterns and the verifier ``outcome`` scored it
    with (``verifier_spec``, the spec it was loaded by; default its ``module:name`` where that
    names it).

    ``ledger`` is handed the run so far each time a step completes (`partial_run`: its id fixed
    for the recording, marked as ended early), so a caller that stores it keeps every whole step
    of a run whose process is killed."""
    from otel_replay.replay._instrument import instrumented

    ctx = RecordingContext(seed, registry, lax=lax, redact=redact)
    scrub = Redactor(redact)
    metadata: dict[str, Any] = {
        "source": "record",
        "format": "agent",
        "agent": agent_spec,
        "input": scrub(json_or_repr(arguments)),
        "seed": seed,
    }
    made = {
        "instrument": list(instrumented()),
        **remembered_verifier(outcome, verifier_spec or _named(outcome)),
        "redact": list(redact),
    }
    metadata.update({key: value for key, value in made.items() if value})
    started = time.time_ns()
    if ledger is not None:
        partial = partial_id(agent_spec, started)

        def so_far(steps: Sequence[Step]) -> None:
            ledger(partial_run(partial, steps, metadata))

        ctx.on_step = so_far
    answer, _ = run_agent(agent, ctx, arguments, sole=True)
    ended = time.time_ns()
    steps = ctx.ledger.steps
    answer = scrub(json_or_repr(answer))
    metadata["answer"] = answer
    raised = raised_in(ctx, redact)
    if raised is not None:
        metadata["agent_error"] = raised.error
        metadata["agent_error_step"] = raised.step
    if ctx.ledger.lossy:
        metadata["lossy_steps"] = list(ctx.ledger.lossy)
    draft = Trajectory.build("recording", steps, metadata=metadata)
    value = score(outcome, draft) if outcome is not None else None
    if value is None and raised is not None:
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
        error=raised.error if raised else None,
        seed=seed,
        agent_spec=agent_spec,
        made={key: metadata[key] for key in MADE_ATTRIBUTES if key in metadata},
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
    return Recording(trajectory, spans, answer, raised.error if raised else None, raised)


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
    raised: AgentRaised | None = None  # the agent raised in the replay: where, what

    @property
    def identical(self) -> bool:
        return self.nondeterminism is None and self.diff.identical and self.ending is None

    @property
    def raised_as_recorded(self) -> bool:
        """The agent raised in the replay as it did in the record: same step, same exception."""
        return self.raised is not None and self.raised == AgentRaised.of(self.original)

    @property
    def verdict(self) -> str:
        """One sentence: identical, or what differs first (the agent raising where the record
        did not, the call the record does not hold, the first divergence, the ending)."""
        steps = f"{len(self.original.steps)} step{'' if len(self.original.steps) == 1 else 's'}"
        if self.identical:
            crash = f"; {self.raised}, as recorded" if self.raised else ""
            return f"identical ({steps}, hash {self.original.final_hash[:16]}){crash}"
        if self.nondeterminism is not None:
            return f"diverged: {self.nondeterminism}"
        if self.raised is not None and not self.raised_as_recorded:
            recorded = AgentRaised.of(self.original)
            was = (
                f"it raised {recorded.error} at step {recorded.step}" if recorded else "it returned"
            )
            return f"diverged: {self.raised}; recorded: {steps}, then {was}"
        if self.diff.identical:
            return f"diverged: all {steps} identical, but {self.ending}"
        change = f": {self.diff.change}" if self.diff.change else ""
        return f"diverged at step {self.diff.common} ({', '.join(self.diff.differences)}){change}"


def replay(
    original: Trajectory,
    agent: AgentFunction,
    *,
    registry: Registry | None = None,
    live_kinds: Collection[StepKind] = (),
    on_miss: str = "error",
    instrument: Sequence[str] | None = None,
) -> Replay:
    """Re-run ``agent`` with the recorded outputs served; compare the two ledgers. A call the
    record does not hold stops the replay (``on_miss="error"``) or runs live (``"resample"``).

    The SDKs the run was recorded through (its metadata's ``instrument``) are instrumented first
    (`otel_replay.instrument`), so their calls are served from the record without repeating how
    it was made; ``instrument`` names others (``()``: none). The ``redact`` patterns it was
    recorded with apply to the replay's calls too. An agent that raises is ``raised``: identical
    only when the record's agent raised the same way."""
    arguments, seed = run_inputs(original, agent)
    instrument_for(original, agent, instrument)
    patterns = redacted(original)
    ctx = ReplayContext(
        original,
        seed,
        registry=registry,
        on_miss=on_miss,
        live_kinds=live_kinds,
        redact=patterns,
    )
    problem: NonDeterminismError | None = None
    answer: Any = None
    try:
        answer, _ = run_agent(agent, ctx, arguments, sole=True)
    except NonDeterminismError as exc:
        problem = exc
    raised = raised_in(ctx, patterns) if problem is None else None
    kept_answer = Redactor(patterns)(json_or_repr(answer))  # what may be shown and kept of it
    ending = None
    if problem is None:
        error = raised.error if raised else None
        recorded_error = original.metadata.get("agent_error")
        if error != recorded_error:
            ending = f"the agent {'raised ' + error if error else 'returned'} after the last step (recorded: {'raised ' + str(recorded_error) if recorded_error else 'returned'})"
        elif "answer" in original.metadata and kept_answer != original.metadata["answer"]:
            ending = (
                f"the answer differs: {kept_answer!r} (recorded: {original.metadata['answer']!r})"
            )
    steps = ctx.ledger.steps if problem else in_recorded_order(original, ctx.ledger)
    replayed = Trajectory.build(
        original.id,
        steps,
        outcome=original.outcome,
        metadata={**original.metadata, "answer": kept_answer, "source": "replay"},
    )
    replayed = redact_run(replayed, patterns)  # every call it made, as the record's were
    return Replay(original, replayed, diff(original, replayed), problem, ending, answer, raised)


def in_recorded_order(original: Trajectory, ledger: Ledger) -> list[Step]:
    """The replay's steps, those of a burst in the order the record has them. Calls the record made
    at once (a burst: steps whose times overlap, the parallel tool calls of one turn, a thread
    pool's tasks) reach a replay in whatever order its threads run; served calls whose bursts are
    the record's, position by position, are the same run. Anything else is left as it came: a
    sequential agent that calls in another order diverged."""
    matched = ledger.matched
    if len(matched) != len(original.steps) or None in matched:
        return ledger.steps
    burst = _bursts(original.steps)
    if [burst[cast(int, m)] for m in matched] != burst:
        return ledger.steps
    order = sorted(range(len(matched)), key=lambda position: cast(int, matched[position]))
    return [ledger.steps[position] for position in order]


def _bursts(steps: Sequence[Step]) -> list[int]:
    """Each step's burst number: a step that started before the steps of the burst so far had all
    ended ran with them (steps are recorded in the order they completed); a step without times is
    a burst of its own."""
    bursts: list[int] = []
    ends = 0  # the latest end of the burst so far (0: none open)
    for step in steps:
        start, end = step.start_time_unix_nano, step.end_time_unix_nano
        if bursts and ends and start and end and start < ends:
            bursts.append(bursts[-1])
            ends = max(ends, end)
        else:
            bursts.append(bursts[-1] + 1 if bursts else 0)
            ends = end if start and end else 0
    return bursts


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


#: What a fork says of itself, which a fork of a fork says afresh.
_FORK_KEYS = frozenset(
    {"move", "do_step", "diverged_at", "served_after_fork", "stale_steps", "injected"}
)


def fork(
    original: Trajectory,
    at: int,
    intervention: Intervention,
    *,
    agent: AgentFunction | None = None,
    registry: Registry | None = None,
    outcome: Verifying = AS_RECORDED,
    seed: int | None = None,
    instrument: Sequence[str] | None = None,
    verifier_spec: str = "",
) -> Trajectory:
    """Hold the steps before ``at``, inject at ``at``, and let the run continue.

    With ``agent``: the live code continues, served from the record wherever a call still matches;
    the SDKs the run was recorded through are instrumented first (``instrument``: others, ``()``
    none). An agent that raises ends the fork there: its metadata keeps ``agent_error`` and
    ``agent_error_step`` (`AgentRaised.of` reads them). Without: later steps are resampled where a
    resample function exists, else held and listed in ``metadata["stale_steps"]`` (their recorded
    outputs may no longer follow from what came before).

    The fork is scored with ``outcome`` (``verifier_spec``: the spec it was loaded by), else the
    registry's verifier, else the one the run was recorded with, so the two outcomes compare
    (``outcome=None``: not that one); its metadata names the verifier that scored it. The
    recording's ``redact`` patterns apply to everything the fork keeps, what was injected included.
    """
    if not 0 <= at < len(original.steps):
        raise InterventionError(
            f"{setting('at', at)} is not a step of {original.id} (it has {len(original.steps)})"
        )
    registry = registry or Registry()
    arguments, recorded_seed = run_inputs(original, agent)
    verifier, spec = scoring(original, outcome, registry, verifier_spec)
    patterns = redacted(original)
    dropped = ENDING | _FORK_KEYS | VERIFIER_KEYS
    metadata: dict[str, Any] = {
        **{k: v for k, v in original.metadata.items() if k not in dropped},
        "source": "fork",
        "format": "fork",
        "forked_from": original.id,
        "fork_at": at,
        "injected": {"output": intervention.output, "error": intervention.error},
    }
    if intervention.move is not None or intervention.action is Action.REMOVE:
        metadata["move"] = intervention.name
    if agent is not None:
        instrument_for(original, agent, instrument)
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
            redact=patterns,
            holds=lambda position: True,
            shares_record=is_built_in(agent),
            holds_observed_only=is_built_in(agent),
        )
        answer, _ = run_agent(agent, ctx, arguments, sole=True)
        steps = ctx.ledger.steps
        metadata["answer"] = Redactor(patterns)(json_or_repr(answer))
        raised = raised_in(ctx, patterns)
        if raised is not None:
            metadata["agent_error"] = raised.error
            metadata["agent_error_step"] = raised.step
        if ctx.ledger.diverged_at is not None:
            metadata["diverged_at"] = ctx.ledger.diverged_at
        # later calls that still matched were served from the record: for a stateful tool the
        # recorded output may no longer be what the world would answer
        metadata["served_after_fork"] = [
            position
            for position, matched in enumerate(ctx.ledger.matched)
            if position > at
            and matched is not None
            and matched != at
            and not steps[position].reads_environment  # read afresh, not served
        ]
    else:
        driver = "resamplers:" + ",".join(registry.descriptions())
        plan = _plan(original, at, intervention, then=RESAMPLE)
        _check_swappable(original, plan, registry)
        result = rollout(original, plan, registry, seed or 0, 0)
        steps = list(result.trajectory.steps)
        metadata["stale_steps"] = [
            s.index
            for s in original.steps
            if s.index > at and registry.lookup(s) is None and not s.reads_environment
        ]
    metadata.update(remembered_verifier(verifier, spec))
    fresh = [s.unlinked() for s in steps]
    draft = Trajectory.build("fork", fresh, metadata=metadata)
    value = score(verifier, draft) if verifier is not None else None
    made = Trajectory.build(
        fork_id(original, at, intervention, driver, seed), fresh, outcome=value, metadata=metadata
    )
    # the recording's patterns cover all the fork stores: what was injected, what resample
    # functions and the live code made of it
    return redact_run(made, patterns)


def _named(outcome: OutcomeFunction | None) -> str | None:
    return None if outcome is None else verifier_name(outcome)


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
        self.arguments, self.recorded_seed = run_inputs(factual, agent)
        self.built_in = is_built_in(agent)
        # served from the record even where a plan resamples them (see ReplayContext._decide)
        self.observed_only = {s.index for s in factual.steps if not s.resamplable}
        self.record = Record(factual)  # what every rollout's context reads of the record
        self.redact = redacted(factual)
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
            self.record,
            self.recorded_seed,
            plan=plan,
            registry=self.registry,
            on_miss="resample",
            rollout=streams,
            fresh_seed=streams.of_agent(),
            holds=holds,
            redact=self.redact,
            shares_record=self.built_in,
            holds_observed_only=self.built_in,
        )

    def _rollout(
        self, plan: Plan, index: int, ctx: ReplayContext, answer: Any, error: str | None
    ) -> Rollout:
        ran = [  # what ran: calls the record does not hold, and resampled recorded steps
            (step, matched)
            for step, matched in zip(ctx.ledger.steps, ctx.ledger.matched, strict=True)
            if matched is None
            or (plan.at(matched).action is Action.RESAMPLE and matched not in self.observed_only)
        ]
        model_steps = tuple(matched for step, matched in ran if step.kind is StepKind.LLM)
        meta = {"plan": plan.identity, "rollout": index, "answer": json_or_repr(answer)}
        if error is not None:  # as the record keeps it: redacted with the record's patterns
            raised = raised_in(ctx, self.redact)
            meta["agent_error"] = raised.error if raised is not None else error
        trajectory = Trajectory(self.factual.id, tuple(ctx.ledger.steps), metadata=meta)
        return Rollout(plan, index, trajectory, len(ran), model_steps=model_steps)
