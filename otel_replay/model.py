"""The data model every layer shares: `Step`, `Trajectory`, `SpanNode` and the step kinds.

All three are frozen. A trajectory is built with `Trajectory.build`, which numbers the steps and chains
their hashes; nothing else assigns ``index``, ``op_key`` or ``hash``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from otel_replay.hashing import GENESIS, link_hash, op_key, result_digest

__all__ = ["SpanNode", "Step", "StepKind", "StepStatus", "Trajectory"]


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
    def duration_ns(self) -> int | None:
        start, end = self.start_time_unix_nano, self.end_time_unix_nano
        if start and end and end >= start:
            return end - start
        return None


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
            key = op_key(step.kind.value, step.name, step.inputs)
            previous = link_hash(
                previous, key, result_digest(step.output, step.status.value, step.error)
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
    def failed(self) -> bool | None:
        """Whether the outcome marks a failure (outcome < 0.5); ``None`` when unknown."""
        return None if self.outcome is None else self.outcome < 0.5
