"""The data model every layer shares: `Step`, `Trajectory`, `SpanNode` and the step kinds.

All three are frozen. A trajectory is built with `Trajectory.build`, which numbers the steps and chains
their hashes; nothing else assigns ``index``, ``op_key`` or ``hash``.

Each value's record form lives here, beside it: ``to_record()`` gives the plain JSON object the native
JSONL format, the store and ``show --json`` use, and ``from_record()`` reads one back, checking every
field and naming the offending value (`TraceFormatError`). Copies with a new result (`Step.with_result`)
or without their place in a chain (`Step.unlinked`) are made here too, so adding a field touches this
file and the store's schema, nothing else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from otel_replay.errors import TraceFormatError, preview
from otel_replay.hashing import (
    CORRELATION_KEYS,
    GENESIS,
    canonical_json,
    content_form,
    digest,
    link_hash,
    operation_keys,
    result_digest,
)
from otel_replay.messages import assistant_message

__all__ = [
    "ENVIRONMENT_STEPS",
    "FAIL_THRESHOLD",
    "SpanNode",
    "Step",
    "StepKind",
    "StepStatus",
    "Trajectory",
    "is_failure",
    "step_contents",
]

#: An outcome below this is a failure (1.0 success … 0.0 failure); attribution can be told otherwise.
FAIL_THRESHOLD = 0.5


def is_failure(outcome: float | None) -> bool | None:
    """Whether ``outcome`` marks a failure (below `FAIL_THRESHOLD`); ``None`` when unknown."""
    return None if outcome is None else outcome < FAIL_THRESHOLD


class StepKind(str, Enum):
    """What kind of nondeterministic operation a step is."""

    LLM = "llm"
    TOOL = "tool"
    RETRIEVER = "retriever"
    EMBEDDING = "embedding"
    RERANKER = "reranker"
    GUARDRAIL = "guardrail"
    OTHER = "other"


class StepStatus(str, Enum):
    OK = "ok"
    ERROR = "error"


_KINDS = ", ".join(k.value for k in StepKind)

#: The names of the ``other`` steps that read the agent's environment: ``ctx.now()``,
#: ``ctx.uuid()``, ``ctx.random()``, and what ``record --instrument time,uuid`` records of an agent
#: not written for agent-replay. They are recorded and served like any step (a replay is hash for
#: hash the record), but they are the world, not a decision: no attribution candidate, and the
#: values they read are no part of a run's content (`step_contents`), so two runs recorded at
#: other times, or a fork made later, compare as the same run.
ENVIRONMENT_STEPS = frozenset(
    {
        "ctx.now",
        "ctx.uuid",
        "ctx.random",
        "time.time",
        "time.time_ns",
        "datetime.now",
        "datetime.utcnow",
        "uuid.uuid4",
    }
)


@dataclass(frozen=True, slots=True)
class Step:
    """One operation at the agent's boundary.

    ``inputs`` is a JSON object and ``output`` any JSON value. ``index``, ``op_key`` and ``hash`` are
    assigned by `Trajectory.build`; a step made by hand has ``index == -1`` until then.
    """

    kind: StepKind
    name: str
    inputs: dict[str, Any]
    output: Any = None
    status: StepStatus = StepStatus.OK
    error: str | None = None
    start_time_unix_nano: int | None = None
    end_time_unix_nano: int | None = None
    span_id: str | None = None
    parent_span_id: str | None = None
    resamplable: bool = True
    index: int = -1
    op_key: str = ""
    hash: str = ""

    @property
    def reads_environment(self) -> bool:
        """Whether the step read the agent's environment (`ENVIRONMENT_STEPS`): a clock, a fresh
        id, a random number from outside the run, not a decision."""
        return self.kind is StepKind.OTHER and self.name in ENVIRONMENT_STEPS

    @property
    def duration_ns(self) -> int | None:
        start, end = self.start_time_unix_nano, self.end_time_unix_nano
        if start and end and end >= start:
            return end - start
        return None

    # --- copies ------------------------------------------------------------------------------------

    def with_result(self, output: Any, status: StepStatus, error: str | None) -> Step:
        """The same operation with another result. Its chain hash no longer describes it and is
        cleared (``index`` and ``op_key`` stay: the operation is the same)."""
        # direct construction: dataclasses.replace costs twice as much, and a rollout calls this
        # once per step (measured in benchmarks/attribution_bench.py)
        return Step(
            self.kind,
            self.name,
            self.inputs,
            output,
            status,
            error,
            self.start_time_unix_nano,
            self.end_time_unix_nano,
            self.span_id,
            self.parent_span_id,
            self.resamplable,
            self.index,
            self.op_key,
            "",
        )

    def unlinked(self) -> Step:
        """A copy outside any trajectory (no index, op_key or hash), ready for `Trajectory.build`."""
        return dataclasses.replace(self, index=-1, op_key="", hash="")

    # --- record form -------------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """Plain JSON form (keys in this order: the native JSONL format and ``show --json``)."""
        return {
            "index": self.index,
            "kind": self.kind.value,
            "name": self.name,
            "inputs": self.inputs,
            "output": self.output,
            "status": self.status.value,
            "error": self.error,
            "start_time_unix_nano": self.start_time_unix_nano,
            "end_time_unix_nano": self.end_time_unix_nano,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "resamplable": self.resamplable,
            "op_key": self.op_key,
            "hash": self.hash,
        }

    @classmethod
    def from_record(
        cls, record: Any, where: str = "step", *, extra_fields: Collection[str] = ()
    ) -> Step:
        """Read a step's record form, checking every field (`TraceFormatError` names the bad one).

        Only ``kind`` and ``name`` are required. ``index``, ``op_key`` and ``hash`` are kept when
        well-formed (the store's own rows) and otherwise ignored: `Trajectory.build` computes them
        afresh. ``extra_fields``
        are keys the caller's format adds around the record (tolerated, not read).
        """
        if not isinstance(record, dict):
            raise TraceFormatError(f"{where} must be an object, got {preview(record)}")
        _check_fields(record, STEP_FIELDS, extra_fields, "step")
        kind = record.get("kind")
        try:
            step_kind = StepKind(kind)
        except ValueError:
            raise TraceFormatError(
                f"{where}.kind = {kind!r} is not a step kind; known kinds: {_KINDS}"
            ) from None
        name = record.get("name")
        if not isinstance(name, str):
            raise TraceFormatError(f"{where}.name must be a string, got {preview(name)}")
        inputs = record.get("inputs", {})
        if not isinstance(inputs, dict):
            raise TraceFormatError(f"{where}.inputs must be an object, got {preview(inputs)}")
        status = record.get("status", "ok")
        if status not in ("ok", "error"):
            raise TraceFormatError(f"{where}.status = {status!r}; expected 'ok' or 'error'")
        error = record.get("error")
        if error is not None and not isinstance(error, str):
            raise TraceFormatError(f"{where}.error must be a string or null, got {preview(error)}")
        resamplable = record.get("resamplable", True)
        if not isinstance(resamplable, bool):
            raise TraceFormatError(
                f"{where}.resamplable must be true or false, got {preview(resamplable)}"
            )
        # recomputed by `Trajectory.build`; kept as given only for the store's own rows
        index, key, chained = record.get("index"), record.get("op_key"), record.get("hash")
        return cls(
            kind=step_kind,
            name=name,
            inputs=inputs,
            output=record.get("output"),
            status=StepStatus(status),
            error=error,
            start_time_unix_nano=_optional_time(record, "start_time_unix_nano", where),
            end_time_unix_nano=_optional_time(record, "end_time_unix_nano", where),
            span_id=_optional_str(record, "span_id", where),
            parent_span_id=_optional_str(record, "parent_span_id", where),
            resamplable=resamplable,
            index=index if isinstance(index, int) and not isinstance(index, bool) else -1,
            op_key=key if isinstance(key, str) else "",
            hash=chained if isinstance(chained, str) else "",
        )


#: The keys of a step's record form.
STEP_FIELDS = tuple(f.name for f in dataclasses.fields(Step))


def step_contents(steps: Iterable[Step]) -> Iterator[tuple[dict[str, Any], Any]]:
    """Each step's inputs and output as content: correlation ids (`CORRELATION_KEYS`) left out,
    and a model call's volatile fields (`otel_replay.hashing.content_form`: response and tool-call
    ids, clocks) taken out of both, its ids ranked across the steps in order, so two runs compare
    up to a consistent renaming of their ids. Tools' inputs and outputs are content as they are.
    A step that read the environment (`Step.reads_environment`: a clock, a fresh id) has no
    output as content: the read is, the value is not (a value passed on into a later call is
    that call's content)."""
    names: dict[str, str] = {}
    for step in steps:
        inputs = step.inputs
        if not CORRELATION_KEYS.isdisjoint(inputs):
            inputs = {k: v for k, v in inputs.items() if k not in CORRELATION_KEYS}
        if step.kind is StepKind.LLM:
            yield content_form(inputs, names), content_form(step.output, names)
        elif step.kind is StepKind.OTHER and step.name in ENVIRONMENT_STEPS:
            yield inputs, None
        else:
            yield inputs, step.output


@dataclass(frozen=True, slots=True)
class SpanNode:
    """One span of the imported trace, kept for display (``show`` draws the tree from these).

    ``role`` is ``"step"`` for the span a step came from, otherwise what the span was taken to be
    (``agent``, ``chain``, ``llm`` for a recognised operation that contains others, ``span`` for
    unrecognised plumbing).
    """

    span_id: str
    parent_span_id: str | None
    name: str
    role: str
    start_time_unix_nano: int | None = None
    end_time_unix_nano: int | None = None
    status: StepStatus = StepStatus.OK
    step_index: int | None = None

    def to_record(self) -> dict[str, Any]:
        """Plain JSON form (the store and the native JSONL format use it)."""
        return {
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "name": self.name,
            "role": self.role,
            "start_time_unix_nano": self.start_time_unix_nano,
            "end_time_unix_nano": self.end_time_unix_nano,
            "status": self.status.value,
            "step_index": self.step_index,
        }

    @classmethod
    def from_record(cls, record: Any, where: str = "span") -> SpanNode:
        """Read a span's record form. Only ``span_id`` is required: the span tree is for display,
        so a name or role that is not a string is shown as text rather than refused."""
        if not isinstance(record, dict) or not isinstance(record.get("span_id"), str):
            raise TraceFormatError(
                f"{where} must be an object with a 'span_id', got {preview(record)}"
            )
        step_index = record.get("step_index")
        name, role = record.get("name"), record.get("role")
        return cls(
            span_id=record["span_id"],
            parent_span_id=_optional_str(record, "parent_span_id", where),
            name="" if name is None else str(name),
            role="span" if role is None else str(role),
            start_time_unix_nano=_optional_time(record, "start_time_unix_nano", where),
            end_time_unix_nano=_optional_time(record, "end_time_unix_nano", where),
            status=StepStatus.ERROR if record.get("status") == "error" else StepStatus.OK,
            step_index=step_index if _is_index(step_index) else None,
        )


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One run: its ordered steps, outcome (1.0 success … 0.0 failure, or unknown) and metadata."""

    id: str
    steps: tuple[Step, ...]
    outcome: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    spans: tuple[SpanNode, ...] = ()

    @classmethod
    def build(
        cls,
        id: str,
        steps: Iterable[Step],
        *,
        outcome: float | None = None,
        metadata: Mapping[str, Any] | None = None,
        spans: Iterable[SpanNode] = (),
    ) -> Trajectory:
        """Number ``steps`` in the order given and chain their hashes."""
        linked: list[Step] = []
        previous = GENESIS
        for index, step in enumerate(steps):
            key, stored = operation_keys(step.kind.value, step.name, step.inputs)
            previous = link_hash(
                previous, stored, result_digest(step.output, step.status.value, step.error)
            )
            linked.append(dataclasses.replace(step, index=index, op_key=key, hash=previous))
        return cls(
            id=id,
            steps=tuple(linked),
            outcome=outcome,
            metadata=dict(metadata or {}),
            spans=tuple(spans),
        )

    @property
    def final_hash(self) -> str:
        """The hash that identifies the whole run (the genesis hash for an empty run)."""
        return self.steps[-1].hash if self.steps else GENESIS

    @property
    def identity(self) -> str:
        """The run's content identity, beside `final_hash`: the same for two runs that made the
        same calls and got the same answers, whatever response ids, tool-call ids, clocks and
        fingerprints their servers gave (`step_contents`; the genesis hash for an empty run).
        `final_hash` names the stored bytes; this names what happened."""
        previous = GENESIS
        for step, (inputs, output) in zip(self.steps, step_contents(self.steps), strict=True):
            previous = digest(
                canonical_json(
                    [previous, step.kind.value, step.name, inputs, step.status.value, step.error,
                     output]
                )
            )  # fmt: skip
        return previous

    @property
    def final_answer(self) -> str | None:
        """The content of the last model turn that asks for no tool: the run's answer (``None``
        when no model turn answers; text parts of a multi-part content are joined)."""
        for step in reversed(self.steps):
            if step.kind is not StepKind.LLM or step.status is StepStatus.ERROR:
                continue
            message = assistant_message(step.output)
            if message is None or message.get("tool_calls"):
                continue
            return _text(message.get("content"))
        return None

    @property
    def failed(self) -> bool | None:
        """Whether the outcome marks a failure (`is_failure`)."""
        return is_failure(self.outcome)

    # --- record form -------------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The whole-trajectory line of the native JSONL format (and ``show --json``)."""
        return {
            "trajectory_id": self.id,
            "outcome": self.outcome,
            "metadata": dict(self.metadata),
            "steps": [s.to_record() for s in self.steps],
            "spans": [s.to_record() for s in self.spans],
            "final_hash": self.final_hash,
        }

    @classmethod
    def from_record(cls, record: Any, where: str = "trajectory") -> Trajectory:
        """Read a trajectory's record form, checking every field; steps are numbered and their
        hashes chained afresh (a stored ``final_hash`` is informative, not trusted)."""
        if not isinstance(record, dict):
            raise TraceFormatError(f"{where} must be an object, got {preview(record)}")
        _check_fields(record, TRAJECTORY_FIELDS, (), "trajectory")
        trajectory_id = record.get("trajectory_id")
        if not isinstance(trajectory_id, str) or not trajectory_id:
            raise TraceFormatError(
                f"'trajectory_id' must be a non-empty string, got {preview(trajectory_id)}"
            )
        steps = record.get("steps", [])
        if not isinstance(steps, list):
            raise TraceFormatError(f"'steps' must be a list, got {preview(steps)}")
        metadata = record.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            raise TraceFormatError(f"'metadata' must be an object, got {preview(metadata)}")
        rebuilt = metadata.get("reconstructed_steps")  # `show` marks these steps
        if rebuilt is not None and not (
            isinstance(rebuilt, list) and all(_is_index(i) for i in rebuilt)
        ):
            raise TraceFormatError(
                "'metadata.reconstructed_steps' must be a list of step indexes, got "
                f"{preview(rebuilt)}"
            )
        spans = record.get("spans")
        if spans is None:
            spans = []
        elif not isinstance(spans, list):
            raise TraceFormatError(f"'spans' must be a list, got {preview(spans)}")
        return cls.build(
            trajectory_id,
            [
                Step.from_record(s, f"steps[{i}]", extra_fields=("trajectory_id",))
                for i, s in enumerate(steps)
            ],
            outcome=read_outcome(record.get("outcome")),
            metadata=metadata,
            spans=[SpanNode.from_record(s, f"spans[{i}]") for i, s in enumerate(spans)],
        )


#: The keys of a trajectory's record form.
TRAJECTORY_FIELDS = ("trajectory_id", "outcome", "metadata", "steps", "spans", "final_hash")


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "".join(texts) if texts else None
    return None


def read_outcome(value: Any) -> float | None:
    """An outcome as a record holds it: a number, or null for unknown."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TraceFormatError(f"'outcome' must be a number or null, got {preview(value)}")


def _check_fields(
    record: dict[str, Any], known: Collection[str], extra: Collection[str], what: str
) -> None:
    unknown = sorted(k for k in record if k not in known and k not in extra)
    if unknown:
        listed = ", ".join(sorted({*known, *extra}))
        raise TraceFormatError(f"unknown {what} field {unknown[0]!r}; known: {listed}")


def _optional_time(record: dict[str, Any], key: str, where: str) -> int | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TraceFormatError(f"{where}.{key} must be an integer or null, got {preview(value)}")
    if not 0 <= value < 1 << 63:
        raise TraceFormatError(f"{where}.{key} = {value} is not a time in nanoseconds (0 to 2**63)")
    return value


def _is_index(value: Any) -> bool:
    """A step index: a non-negative integer (``true`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _optional_str(record: dict[str, Any], key: str, where: str) -> str | None:
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    raise TraceFormatError(f"{where}.{key} must be a string or null, got {preview(value)}")
