"""Recorded outcomes as a world model: ``--tools recorded``.

A tool call is resampled by drawing from the results the store holds for the same tool called with
the same arguments (the same ``op_key``, which leaves the call's id out) across every stored run —
its outputs and its failures, each as often as it was recorded — whether or not the attributed run
made that call: a rollout that takes another path (a lookup drawn a success, then a policy check
the failing run never reached) is served what the run that did reach it was answered. A call of
the attributed run with no other recorded result is held (served as recorded). No code, no tool
access: what production already answered is what a rollout may see.

The draws are for the tools the run uses: those it called and those its model turns were offered.
A call nothing recorded is never given a made-up value: it raises `UnservableError` (attribution
holds the rollout as unservable, counts it and names the call), or with the faults fallback
(``--tools recorded,faults``) it fails as a flaky dependency would (`injected_fault`).

The store is read lazily: a call's results are looked up the first time a rollout makes it (one
indexed query by op_key, ``steps_by_op_key``; a key with no results is remembered too) and kept for
the rest of the attribution. The function travels to worker processes by pickling: what it has
looked up goes along, and a worker on this machine opens the store read-only for what it has not.
Workers elsewhere (a Ray cluster) are sent it `complete`: every result of the run's tools, read
in the parent, so no worker reads the store; both give the same draws.

Each draw is noted in the rollout's log (`otel_replay.resamplers._draws.drawing`), so a report can
say how many draws came from which run.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from otel_replay.errors import UnservableError, setting
from otel_replay.hashing import canonical_json, op_key
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.resamplers._context import RolloutContext, StepFailed
from otel_replay.resamplers._draws import Call, noted_draw, noted_fault, noted_free
from otel_replay.resamplers._faults import injected_fault
from otel_replay.store import RecordedResult, Store


class _Known(NamedTuple):
    results: tuple[RecordedResult, ...]
    distinct: int  # how many different (output, status, error) among them


_NOTHING = _Known((), 0)


class RecordedOutcomes:
    """The resample function of ``--tools recorded`` (its description counts each tool's recorded
    alternatives among the run's own calls). Made by `recorded_outcomes`."""

    def __init__(
        self,
        path: Path,
        tools: frozenset[str],
        known: Mapping[str, Sequence[RecordedResult]],
        alternatives: Mapping[str, int],
        *,
        fallback: bool = False,
        complete: bool = False,
    ) -> None:
        self._path = path
        self._tools = tools
        self._known = {key: _known(results) for key, results in known.items()}
        self._complete = complete  # every result of ``tools`` is known: the store is not read
        self._fallback = fallback
        self._lock = threading.Lock()
        self.lookups = 0  # queries made to the store by this copy (tests read it)
        shown = ", ".join(f"{name}: {n}" for name, n in sorted(alternatives.items()))
        then = "; then faults" if fallback else ""
        self.__qualname__ = f"recorded_outcomes({shown}{then})"
        self.__module__ = "builtin"

    @property
    def tools(self) -> frozenset[str]:
        """The tools draws are made for: the run's, and those its model turns were offered."""
        return self._tools

    def __getstate__(self) -> dict[str, Any]:
        state = {k: getattr(self, k) for k in _STATE}
        state["__qualname__"] = self.__qualname__
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._lock = threading.Lock()
        self.lookups = 0
        self.__module__ = "builtin"

    def results(self, key: str) -> tuple[RecordedResult, ...]:
        """Every result the store recorded for the operation ``key``, in store order."""
        return self._lookup(key).results

    def alternatives(self, step: Step) -> tuple[RecordedResult, ...]:
        """The distinct results a rollout resampling ``step`` of the attributed run may be served
        (one of each, in store order): none or one means the step is held as recorded, so
        resampling it cannot vary it."""
        if step.name not in self._tools:
            return ()
        seen: dict[bytes, RecordedResult] = {}
        for result in self.results(step.op_key or _key(step)):
            seen.setdefault(canonical_json([result.output, result.status, result.error]), result)
        return tuple(seen.values())

    def runs(self, step: Step) -> frozenset[str]:
        """The stored runs that recorded ``step``'s call."""
        return frozenset(r.run for r in self.results(step.op_key or _key(step)))

    def _lookup(self, key: str) -> _Known:
        known = self._known.get(key)
        if known is not None:
            return known
        if self._complete:
            return _NOTHING
        with self._lock:  # one query per key, whichever rollout asks first
            known = self._known.get(key)
            if known is None:
                with Store.open(self._path, create=False, read_only=True) as store:
                    known = _known(store.recorded_results([key])[key])
                self.lookups += 1
                self._known[key] = known
        return known

    def __call__(self, step: Step, ctx: RolloutContext) -> Any:
        key = step.op_key or op_key(step.kind.value, step.name, step.inputs)
        recorded = ctx.recorded
        own = recorded is not None and key == (recorded.op_key or _key(recorded))
        known = self._lookup(key) if step.name in self._tools else _NOTHING
        if own and known.distinct < 2:  # nothing else to draw: hold the step
            output, status, error = step.output, step.status.value, step.error
        elif known.results:
            output, status, error, run = ctx.rng.choice(known.results)
            noted_draw(run)
        elif self._fallback:
            noted_fault(call_of(step))
            noted_free()
            injected_fault(step, ctx)
        else:
            raise _unservable(step, self.__qualname__)
        noted_free()  # answered from the store (or as a fault): no tool was called
        if status == StepStatus.ERROR.value:
            raise StepFailed(error or "failed")
        return output


#: What a `RecordedOutcomes` sends to another process (its lock is made anew there).
_STATE = ("_path", "_tools", "_known", "_complete", "_fallback")


def recorded_outcomes(
    store: Store, trajectory: Trajectory, *, fallback: bool = False, complete: bool = False
) -> RecordedOutcomes:
    """Draws for the tool calls rollouts of ``trajectory`` make, from everything ``store``
    recorded for the same call. The results of the run's own calls are read now; others when a
    rollout first makes them, or with ``complete`` now, every result of the run's tools (for
    workers that cannot read the store). ``fallback``: a call nothing recorded fails as an
    injected fault, instead of making its rollout unservable."""
    calls = [s for s in trajectory.steps if s.kind is StepKind.TOOL]
    tools = frozenset({s.name for s in calls} | set(offered_tools(trajectory)))
    known: dict[str, list[RecordedResult]] = (
        store.tool_results(tools) if complete else store.recorded_results(s.op_key for s in calls)
    )
    alternatives: Counter[str] = Counter()
    for name in {s.name for s in calls}:
        keys = {s.op_key for s in calls if s.name == name}
        alternatives[name] = sum(_known(known.get(k, ())).distinct for k in keys)
    if complete:  # every own key, found or not, so no lookup is ever needed
        known = {**{s.op_key: [] for s in calls}, **known}
    return RecordedOutcomes(
        store.path.resolve(), tools, known, alternatives, fallback=fallback, complete=complete
    )


def offered_tools(trajectory: Trajectory) -> Iterator[str]:
    """The names of the tools ``trajectory``'s model turns were offered (``inputs.tools``, or
    under ``parameters``): OpenAI's ``{"function": {"name"}}`` and the flat ``{"name"}`` shapes."""
    for step in trajectory.steps:
        if step.kind is not StepKind.LLM:
            continue
        parameters = step.inputs.get("parameters")
        for tools in (
            step.inputs.get("tools"),
            parameters.get("tools") if isinstance(parameters, dict) else None,
        ):
            for tool in tools if isinstance(tools, list) else ():
                if not isinstance(tool, dict):
                    continue
                function = tool.get("function")
                name = function.get("name") if isinstance(function, dict) else tool.get("name")
                if isinstance(name, str):
                    yield name


def call_of(step: Step) -> Call:
    """``step``'s call as draws and reports name it."""
    return Call(step.name, canonical_json(step.inputs.get("arguments")).decode())


def _unservable(step: Step, function: str) -> UnservableError:
    call = call_of(step)
    shown = call.arguments if len(call.arguments) <= 120 else call.arguments[:117] + "..."
    return UnservableError(
        f"step {step.index} (tool {step.name!r}): no stored run recorded the call "
        f"{step.name}({shown}); import a run that made it, or let such calls fail as injected "
        f"faults ({setting('tools', 'recorded,faults')})",
        step_index=step.index,
        function=f"builtin.{function}",
        tool=call.tool,
        arguments=call.arguments,
    )


def _known(results: Sequence[RecordedResult]) -> _Known:
    """``results`` with each distinct result one shared object: what a worker is sent pickles each
    once (the 2,727 results a 1,008-run fleet holds of its three calls pickle to 80 KiB, not 842)."""
    first: dict[bytes, RecordedResult] = {}
    kept = []
    for result in results:
        same = first.setdefault(
            canonical_json([result.output, result.status, result.error]), result
        )
        kept.append(result if same is result else same._replace(run=result.run))
    return _Known(tuple(kept), len(first))


def _key(step: Step) -> str:
    return op_key(step.kind.value, step.name, step.inputs)
