"""How a recorded run was made, as its metadata keeps it, and how its agent ended when it raised.

`record` keeps with the run what making it again needs: the agent (``agent``), its input and seed,
the SDKs instrumented while it ran (``instrument``), the verifier that scored it (``verifier``, a
``module:function`` or ``file.py:function`` spec) and the ``redact`` patterns (never what they
matched). `replay`, `fork` and `resume` use them unless told otherwise (`instrument_for`,
`scoring`); a fork or a resumed run keeps them in its own metadata.

`AgentRaised` is an agent that raised: the step it raised at, the exception's type and message. A
run's metadata keeps it as ``agent_error`` ("Type: message") and ``agent_error_step``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

from otel_replay.errors import (
    CanonicalJSONError,
    PluginLoadError,
    UnreplayableError,
    setting,
)
from otel_replay.hashing import check_json_value, digest
from otel_replay.model import Step, StepStatus, Trajectory
from otel_replay.redaction import Redactor, patterns_of
from otel_replay.replay._steps import AgentContext, StepError
from otel_replay.replay._values import lossy
from otel_replay.resamplers import USER_MODULE_PREFIX, Registry

AgentFunction = Callable[..., Any]
OutcomeFunction = Callable[[Trajectory], Any]


class AsRecorded(Enum):
    """The default verifier of `fork` and `resume`: the one the run was recorded with."""

    VERIFIER = "the recorded verifier"


AS_RECORDED = AsRecorded.VERIFIER
#: A verifier as `fork` and `resume` take it: a function, the recorded one, or none (None).
Verifying = OutcomeFunction | AsRecorded | None


def is_built_in(agent: AgentFunction) -> bool:
    """Whether ``agent`` is one of agent-replay's own (the chat loop): it never changes what it is
    served, and an operation nothing can run is served as recorded rather than stopping it (see
    `ReplayContext`)."""
    return getattr(agent, "built_in", False) is True


def json_or_repr(value: Any) -> Any:
    """``value`` if it is JSON, else its lossy copy (an answer is kept either way)."""
    try:
        check_json_value(value)
        return value
    except CanonicalJSONError:
        return lossy(value)


def redacted(run: Trajectory) -> list[str]:
    """The patterns a recording was redacted with (a replay applies them to its calls too)."""
    return patterns_of(run)


def instrumented_with(run: Trajectory) -> tuple[str, ...]:
    """The SDKs ``run`` was recorded through (``record --instrument``)."""
    sdks = run.metadata.get("instrument") or []
    return tuple(s for s in sdks if isinstance(s, str))


def remembered_verifier(verifier: OutcomeFunction | None, spec: str | None) -> dict[str, Any]:
    """How a run's metadata remembers the verifier that scored it: ``verifier``, the spec that
    loads it, or for ``--success-if`` / ``--fail-if`` ``answer_verifier``, their patterns (nothing
    for a verifier nothing names)."""
    from otel_replay.resamplers import AnswerVerifier

    if isinstance(verifier, AnswerVerifier):
        return {"answer_verifier": dict(verifier.patterns)}
    return {"verifier": spec} if verifier is not None and spec else {}


#: The metadata keys `remembered_verifier` writes.
VERIFIER_KEYS = frozenset({"verifier", "answer_verifier"})


#: The sources of runs agent-replay made itself, whose remembered verifier it uses. A trace
#: imported from a file is untrusted input: code it names is never imported unasked.
MADE_HERE = frozenset({"record", "fork", "resume"})


def recorded_answer(run: Trajectory) -> dict[str, str | None] | None:
    """The ``--success-if`` / ``--fail-if`` patterns that scored ``run`` (a run agent-replay made,
    `MADE_HERE`), or None."""
    patterns = run.metadata.get("answer_verifier")
    if not isinstance(patterns, dict) or run.metadata.get("source") not in MADE_HERE:
        return None
    found = {k: patterns.get(k) for k in ("success_if", "fail_if")}
    if not all(v is None or isinstance(v, str) for v in found.values()) or not any(found.values()):
        return None
    return found


def recorded_verifier(run: Trajectory) -> str | None:
    """The spec of the verifier that scored ``run`` when it was recorded (or forked, resumed);
    None for a run agent-replay did not make (`MADE_HERE`)."""
    spec = run.metadata.get("verifier")
    made_here = run.metadata.get("source") in MADE_HERE
    return spec if made_here and isinstance(spec, str) and spec else None


class RunInputs(NamedTuple):
    """What a recorded run's agent was called with: its ``arguments`` and its ``seed``."""

    arguments: Any
    seed: int


def run_inputs(run: Trajectory, agent: AgentFunction | None) -> RunInputs:
    """The recorded run's input and seed. The input was the recorded agent's: the built-in chat
    loop, which rebuilds its opening from the record, is given none (a run recorded with
    ``record --agent`` and attributed without its agent used to hand the loop that agent's
    arguments, and every rollout failed before its first step)."""
    meta = run.metadata
    seed = meta.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise UnreplayableError(
            f"{run.id} has seed {seed!r} in its metadata; a recorded run's seed is an integer"
        )
    return RunInputs(None if agent is not None and is_built_in(agent) else meta.get("input"), seed)


def instrument_for(run: Trajectory, agent: AgentFunction, sdks: Sequence[str] | None) -> None:
    """Instrument the SDKs ``agent`` is served through: ``sdks``, or when None those ``run`` was
    recorded through (none for the built-in chat loop, which calls no SDK). An SDK instrumented
    runs untouched outside a recording or replay; ``()`` instruments none (and leaves those
    already instrumented in this process as they are)."""
    from otel_replay.replay._instrument import instrument

    chosen = instrumented_with(run) if sdks is None else tuple(sdks)
    if chosen and not is_built_in(agent):
        instrument(*chosen)


def verifier_name(function: OutcomeFunction) -> str | None:
    """The spec that loads ``function`` again (``module:name``, ``file.py:name`` for a function of
    a file loaded by path), or None when nothing names it (a lambda, a nested function, a function
    of ``__main__``)."""
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str) or not name.isidentifier():
        return None
    if module.startswith(USER_MODULE_PREFIX):
        path = getattr(sys.modules.get(module), "__file__", None)
        return f"{path}:{name}" if path else None
    return None if module == "__main__" else f"{module}:{name}"


class Scoring(NamedTuple):
    """A verifier a new run is scored with (None: none), and the spec its metadata keeps."""

    verifier: OutcomeFunction | None
    spec: str | None


def scoring(run: Trajectory, outcome: Verifying, registry: Registry, spec: str = "") -> Scoring:
    """The verifier a fork or a resumed run of ``run`` is scored with, and its spec (kept in the
    new run's metadata): ``outcome`` (``spec`` is what it was loaded by); else the registry's;
    else, by default (`AS_RECORDED`), the one ``run`` was recorded with, loaded by its spec, so
    the new run's outcome compares with the old. ``outcome=None``: the registry's, or none.
    Only a run agent-replay made (`MADE_HERE`) has its verifier remembered so."""
    if callable(outcome):
        return Scoring(outcome, spec or verifier_name(outcome))
    if registry.verifier is not None:
        return Scoring(registry.verifier, verifier_name(registry.verifier))
    if outcome is None:
        return Scoring(None, None)
    remembered, answer = recorded_verifier(run), recorded_answer(run)
    if remembered is None:
        from otel_replay.resamplers import answer_verifier

        return Scoring(None if answer is None else answer_verifier(**answer), None)
    from otel_replay.resamplers import load_object

    try:
        return Scoring(load_object(remembered, "the recorded verifier"), remembered)
    except PluginLoadError as exc:
        raise PluginLoadError(
            f"{run.id} was scored with the verifier {remembered!r}, which does not load ({exc}); "
            f"name another, or {setting('outcome', None)} for none"
        ) from None


def partial_id(agent_spec: str, started_ns: int) -> str:
    """The id of a recording's partial run: fixed for the recording, apart from every other."""
    return f"partial-{digest(f'{agent_spec}:{started_ns}:{os.getpid()}'.encode())[:24]}"


def partial_run(run_id: str, steps: Sequence[Step], metadata: dict[str, Any]) -> Trajectory:
    """A run so far (a recording's, a resumed run's): its whole steps and the ``metadata`` the run
    will have, marked ``ended_early`` (what the store holds of a run whose process died before
    its agent returned; `resume` continues it)."""
    marked = {**metadata, "ended_early": "the recording stopped before the agent returned"}
    return Trajectory.build(run_id, [s.unlinked() for s in steps], outcome=None, metadata=marked)


#: What a run's metadata says of how it ended, which a fork or a resumed run says afresh.
ENDING = frozenset(
    {
        "ended_early",
        "agent_error",
        "agent_error_step",
        "answer",
        "lossy_steps",
        "recorder_error",  # the recorder failed: the new run was recorded afresh
        "outcome_source",  # where the outcome came from: the new run is scored afresh
    }
)


@dataclass(frozen=True, slots=True)
class AgentRaised:
    """The agent raised ``type``: ``message`` at step ``step``: the step whose failure it let
    out (``failed`` names that operation, ``"llm 'gpt-4o'"``), else the step it would have made
    next (it raised after its last recorded step; 0: before any)."""

    step: int
    type: str
    message: str
    failed: str | None = None

    def __str__(self) -> str:
        if self.failed is not None:
            where = f"at step {self.step}: {self.failed} failed"
        elif self.step == 0:
            where = "at step 0, before any recorded step"
        else:
            where = f"at step {self.step}, after its last recorded step"
        return f"the agent raised {self.error} ({where})"

    @property
    def error(self) -> str:
        """``Type: message``, as a run's ``agent_error`` keeps it."""
        return f"{self.type}: {self.message}"

    def to_record(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "type": self.type,
            "message": self.message,
            "failed": self.failed,
        }

    @classmethod
    def of(cls, run: Trajectory) -> AgentRaised | None:
        """How ``run``'s agent raised, as its metadata keeps it (None: it did not)."""
        error = run.metadata.get("agent_error")
        if not isinstance(error, str):
            return None
        step = run.metadata.get("agent_error_step")
        if isinstance(step, bool) or not isinstance(step, int):  # kept before the step was
            last = run.steps[-1] if run.steps else None
            failed = last is not None and error == f"StepError: {last.error}"
            step = len(run.steps) - 1 if failed else len(run.steps)
        return cls.at(step, error, run.steps)

    @classmethod
    def at(cls, step: int, error: str, steps: Sequence[Step]) -> AgentRaised:
        kind, _, message = error.partition(": ")
        failed = None
        if step < len(steps) and steps[step].status is StepStatus.ERROR:
            failed = f"{steps[step].kind.value} {steps[step].name!r}"
        return cls(step, kind, message, failed)


def raised_in(ctx: AgentContext, redact: Collection[str]) -> AgentRaised | None:
    """How the agent ``run_agent`` ran under ``ctx`` raised (None: it returned), its message
    redacted as the run is. The step: the failed operation whose `StepError` it raised (or raised
    another exception from) when that was its last, else the step after its last."""
    exc = ctx.raised
    if exc is None:
        return None
    steps = ctx.ledger.steps
    step = len(steps)
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, StepError) and cause.step_index == len(steps) - 1:
            step = cause.step_index
            break
        cause = cause.__cause__ or cause.__context__
    message = Redactor(tuple(redact))(str(exc))
    return AgentRaised.at(step, f"{type(exc).__name__}: {message}", steps)
