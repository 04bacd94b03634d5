"""Two runs side by side: how long they agree, what differs where they first part, and where their
structures part (the operations one run has and the other has not).

Runs are compared as content (`otel_replay.model.step_contents`): timestamps, span ids and the
volatile fields of model calls (response ids, tool-call ids, ``created``, ``system_fingerprint``)
never count, and ids compare up to a consistent renaming: the first id in one run is the first id
in the other."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from otel_replay.hashing import CORRELATION_KEYS, canonical_json
from otel_replay.model import Step, Trajectory, step_contents


@dataclass(frozen=True, slots=True)
class OnlyIn:
    """Steps ``start .. stop - 1`` of one run (``side``: ``left`` or ``right``), operations the other
    run does not perform at that point."""

    side: str
    start: int
    stop: int
    operations: tuple[str, ...]  # "kind name" of each


@dataclass(frozen=True, slots=True)
class TrajectoryDiff:
    left: Trajectory
    right: Trajectory
    common: int  # steps 0 .. common-1 are identical
    differences: tuple[str, ...]  # what differs at step ``common`` (empty when identical)
    structure: tuple[OnlyIn, ...] = ()  # after the common prefix, aligned by operation

    @property
    def identical(self) -> bool:
        return self.common == len(self.left.steps) == len(self.right.steps)

    @property
    def divergence(self) -> int | None:
        return None if self.identical else self.common

    @property
    def change(self) -> str | None:
        """What the first divergence changed, in the intervention algebra's words: ``action
        changed`` (what the agent asked for: a tool called with other arguments, a model turn that
        calls otherwise), ``observation changed`` (the same call, another answer), ``context
        changed`` (a model turn that saw other inputs: an edit), ``model changed`` (the same turn
        asked of another model: a swap), or None."""
        left, right = self.step_pair()
        if left is None or right is None or left.kind is not right.kind or left.name != right.name:
            return None
        inputs = next((d for d in self.differences if d.startswith("inputs")), None)
        if inputs is not None and left.kind.value == "llm":
            return "model changed" if inputs == "inputs (model)" else "context changed"
        if inputs is not None:
            return "action changed"
        if left.kind.value == "llm":
            return "action changed"  # a model turn's output is the agent's next action
        return "observation changed" if self.differences else None

    def step_pair(self) -> tuple[Step | None, Step | None]:
        """The two steps at the first divergence (None where a run has ended)."""
        k = self.common
        left = self.left.steps[k] if k < len(self.left.steps) else None
        right = self.right.steps[k] if k < len(self.right.steps) else None
        return left, right


def flat_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs as a person names them: a tool's ``arguments`` and a model call's ``parameters``
    opened up beside the other keys; correlation ids left out."""
    flat: dict[str, Any] = {}
    for key, value in inputs.items():
        if key in CORRELATION_KEYS:
            continue
        if key in ("arguments", "parameters") and isinstance(value, dict):
            flat.update(value)
        else:
            flat[key] = value
    return flat


Content = tuple[dict[str, Any], Any]  # a step's inputs and output as `step_contents` gives them


def step_differences(
    a: Step, b: Step, contents: tuple[Content, Content] | None = None
) -> tuple[str, ...]:
    """What differs between two steps; timestamps, span ids and volatile fields never count.
    ``contents``: the two steps' `step_contents` within their runs (by default, each step's
    alone)."""
    if contents is None:
        contents = (next(step_contents([a])), next(step_contents([b])))
    (a_inputs, a_output), (b_inputs, b_output) = contents
    found = []
    if a.kind is not b.kind:
        found.append("kind")
    if a.name != b.name:
        found.append("name")
    if canonical_json(a_inputs) != canonical_json(b_inputs):
        left, right = flat_inputs(a_inputs), flat_inputs(b_inputs)
        keys = sorted(
            k
            for k in set(left) | set(right)
            if k not in left
            or k not in right
            or canonical_json(left[k]) != canonical_json(right[k])
        )
        found.append("inputs (" + ", ".join(keys) + ")")
    if a.status is not b.status or a.error != b.error:
        found.append("status")
    if canonical_json(a_output) != canonical_json(b_output):
        found.append("output")
    return tuple(found)


def diff(left: Trajectory, right: Trajectory) -> TrajectoryDiff:
    """Where ``left`` and ``right`` first differ, compared as content (the module docstring)."""
    common = 0
    pairs = zip(step_contents(left.steps), step_contents(right.steps), strict=False)
    for a, b, contents in zip(left.steps, right.steps, pairs, strict=False):
        differences = step_differences(a, b, contents)
        if differences:
            return TrajectoryDiff(left, right, common, differences, _structure(left, right, common))
        common += 1
    if len(left.steps) != len(right.steps):
        return TrajectoryDiff(left, right, common, ("length",), _structure(left, right, common))
    return TrajectoryDiff(left, right, common, ())


def _structure(left: Trajectory, right: Trajectory, common: int) -> tuple[OnlyIn, ...]:
    """The operations (kind and name) one run performs after the common prefix and the other does
    not, aligned as a sequence diff aligns lines."""

    def operations(run: Trajectory) -> list[str]:
        return [f"{s.kind.value} {s.name}" for s in run.steps[common:]]

    a, b = operations(left), operations(right)
    found: list[OnlyIn] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            found.append(OnlyIn("left", common + i1, common + i2, tuple(a[i1:i2])))
        if tag in ("insert", "replace"):
            found.append(OnlyIn("right", common + j1, common + j2, tuple(b[j1:j2])))
    return tuple(found)
