"""Resume: a recorded run that ended early (killed, or its agent raised) continued from its last
whole step, as a new run linked to it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.errors import InterventionError
from otel_replay.hashing import canonical_json, digest
from otel_replay.model import Step, Trajectory
from otel_replay.redaction import Redactor, redact_run
from otel_replay.replay._cassette import ReplayContext
from otel_replay.replay._made import (
    AS_RECORDED,
    ENDING,
    VERIFIER_KEYS,
    AgentFunction,
    AgentRaised,
    Verifying,
    instrument_for,
    is_built_in,
    json_or_repr,
    partial_run,
    raised_in,
    redacted,
    remembered_verifier,
    run_inputs,
    scoring,
)
from otel_replay.replay._rollout import score
from otel_replay.replay._running import run_agent
from otel_replay.resamplers import Registry


@dataclass(frozen=True, slots=True)
class Resumed:
    """A run continued from where it ended: the new run, how many of its steps were served from
    the record (the frontier), and how the agent ended this time."""

    trajectory: Trajectory
    frontier: int
    served: int
    answer: Any
    error: str | None
    raised: AgentRaised | None = None  # the agent raised again: where, what


def ended_early(run: Trajectory) -> str | None:
    """Why ``run`` ended before its agent returned (killed mid-run, the agent raised), or None."""
    meta = run.metadata
    if meta.get("ended_early"):
        return str(meta["ended_early"])
    raised = AgentRaised.of(run)
    return str(raised) if raised else None


def resume(
    original: Trajectory,
    agent: AgentFunction,
    *,
    registry: Registry | None = None,
    outcome: Verifying = AS_RECORDED,
    ledger: Callable[[Trajectory], None] | None = None,
    agent_spec: str = "",
    verifier_spec: str = "",
    instrument: Sequence[str] | None = None,
) -> Resumed:
    """Continue a run that ended early: re-run ``agent`` with every recorded step served (nothing
    of the record runs again), then live from the frontier on, recording the continuation. The
    frontier is the end of the record, or the failed operation whose error the agent raised: that
    one runs again (the server it could not reach may be back). The result is a new run
    (``resume-…``) whose metadata names the run it resumed and the frontier, and says afresh how
    it ended; ``ledger`` keeps its steps as they complete (each kept so far with that metadata,
    marked as ended early), as `record`'s does. With the built-in chat loop as ``agent`` (an
    imported tool-calling run), a run whose record stops before a final answer has ended early
    too, and the model's resample function makes the continuation.

    As the run was made, unless told otherwise: the SDKs it was recorded through are instrumented
    (``instrument``: others, ``()`` none), and the new run is scored with ``outcome``, else the
    registry's verifier, else the one it was recorded with (``outcome=None``: not that one)."""
    why = ended_early(original)
    if why is None and is_built_in(agent) and original.final_answer is None:
        why = "the record stops before a final answer"
    if why is None:
        raise InterventionError(
            f"run {original.id} finished (its agent returned): there is nothing to resume; "
            "`replay` re-runs it, `fork` changes it"
        )
    arguments, seed = run_inputs(original, agent)
    registry = registry or Registry()
    verifier, spec = scoring(original, outcome, registry, verifier_spec)
    instrument_for(original, agent, instrument)
    crashed = AgentRaised.of(original)
    frontier = crashed.step if crashed and crashed.failed else len(original.steps)
    served_from = dataclasses.replace(original, steps=original.steps[:frontier])
    patterns = redacted(original)
    ctx = ReplayContext(served_from, seed, registry=registry, on_miss="resample", redact=patterns)
    run_id = f"resume-{digest(canonical_json([original.id, frontier, agent_spec]))[:24]}"
    metadata: dict[str, Any] = {
        **{k: v for k, v in original.metadata.items() if k not in ENDING | VERIFIER_KEYS},
        "source": "resume",
        "resumed_from": original.id,
        "frontier": frontier,
    }
    if agent_spec:
        metadata["agent"] = agent_spec
    metadata.update(remembered_verifier(verifier, spec))
    if ledger is not None:

        def so_far(steps: Sequence[Step]) -> None:
            ledger(partial_run(run_id, steps, metadata))

        ctx.on_step = so_far
    answer, _ = run_agent(agent, ctx, arguments, sole=True)
    metadata["answer"] = Redactor(patterns)(json_or_repr(answer))
    raised = raised_in(ctx, patterns)
    if raised is not None:
        metadata["agent_error"] = raised.error
        metadata["agent_error_step"] = raised.step
    draft = Trajectory.build(run_id, [s.unlinked() for s in ctx.ledger.steps], metadata=metadata)
    value = score(verifier, draft) if verifier is not None else None
    if value is None and raised is not None:
        value = 0.0
    served = sum(m is not None for m in ctx.ledger.matched)
    trajectory = redact_run(dataclasses.replace(draft, outcome=value), patterns)
    return Resumed(trajectory, frontier, served, answer, raised.error if raised else None, raised)
