"""agent-replay's own format: JSON Lines of trajectories, steps and outcomes.

Each line is one of::

    {"trajectory_id": str, "outcome": float|null, "metadata": {}, "steps": [step, ...]}   a trajectory
    {"trajectory_id": str, "kind": str, "name": str, "inputs": {}, "output": any, ...}    one step
    {"trajectory_id": str, "outcome": float|null}                                         an outcome

Steps of a trajectory are taken in file order (whole-trajectory steps first, then step lines). A step
has ``kind`` (a `StepKind` value), ``name``, ``inputs`` (object), ``output`` (any JSON), ``status``
(``ok``/``error``), ``error`` (string or null) and optionally ``start_time_unix_nano``,
``end_time_unix_nano``, ``span_id``, ``parent_span_id``, ``resamplable``; ``index``, ``op_key`` and
``hash`` may be present (export writes them) and are recomputed on import.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_replay.errors import CanonicalJSONError, TraceFormatError
from otel_replay.hashing import check_json_value
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._source import open_trace_file
from otel_replay.model import SpanNode, Step, StepKind, StepStatus, Trajectory

_STEP_FIELDS = frozenset(
    {
        "trajectory_id",
        "kind",
        "name",
        "inputs",
        "output",
        "status",
        "error",
        "start_time_unix_nano",
        "end_time_unix_nano",
        "span_id",
        "parent_span_id",
        "resamplable",
        "index",
        "op_key",
        "hash",
    }
)
_TRAJECTORY_FIELDS = frozenset(
    {"trajectory_id", "outcome", "metadata", "steps", "spans", "final_hash"}
)
_KINDS = ", ".join(k.value for k in StepKind)


@dataclass
class _Pending:
    outcome: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    spans: list[SpanNode] = field(default_factory=list)
    whole: bool = False


def read_jsonl(path: str | Path, options: ReadOptions | None = None) -> Iterator[Trajectory]:
    """Yield the trajectories of a native JSONL file, in the order each id first appears."""
    path = Path(path)
    options = options or ReadOptions()
    pending: dict[str, _Pending] = {}
    with open_trace_file(path) as (stream, raw):
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                _read_line(line, pending)
            except TraceFormatError as exc:
                options.invalid(exc.located(path=path, line=number))
                continue
            options.report.records += 1
        if options.progress:
            options.progress(raw.tell())
    for trajectory_id, item in pending.items():
        yield Trajectory.build(
            trajectory_id,
            item.steps,
            outcome=item.outcome,
            metadata={**item.metadata, "source": str(path), "format": "jsonl"},
            spans=item.spans,
        )


def _refuse_constant(name: str) -> Any:
    raise TraceFormatError(f"{name} is not JSON")


def _read_line(line: bytes, pending: dict[str, _Pending]) -> None:
    try:
        # the standard decoder keeps integers exact (orjson would turn 2**70 into a float)
        obj = json.loads(line, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"malformed JSON: {exc}") from None
    try:
        check_json_value(obj, "line")
    except CanonicalJSONError as exc:
        raise TraceFormatError(str(exc)) from None
    if not isinstance(obj, dict):
        raise TraceFormatError(f"expected a JSON object, got {_short(obj)}")
    trajectory_id = obj.get("trajectory_id")
    if not isinstance(trajectory_id, str) or not trajectory_id:
        raise TraceFormatError(
            f"'trajectory_id' must be a non-empty string, got {_short(trajectory_id)}"
        )
    # everything is validated before anything is filed: a skipped line leaves no trace behind
    if "steps" in obj:
        _check_fields(obj, _TRAJECTORY_FIELDS, "trajectory")
        existing = pending.get(trajectory_id)
        if existing is not None and existing.whole:
            raise TraceFormatError(f"trajectory {trajectory_id!r} is defined twice")
        steps = obj["steps"]
        if not isinstance(steps, list):
            raise TraceFormatError(f"'steps' must be a list, got {_short(steps)}")
        new_steps = [_step(s, f"steps[{i}]") for i, s in enumerate(steps)]
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise TraceFormatError(f"'metadata' must be an object, got {_short(metadata)}")
        spans = [_span_node(s, f"spans[{i}]") for i, s in enumerate(obj.get("spans") or [])]
        outcome = _outcome(obj["outcome"]) if "outcome" in obj else None
        item = pending.setdefault(trajectory_id, _Pending())
        item.whole = True
        item.steps[:0] = new_steps
        item.metadata = metadata
        item.spans = spans
        if "outcome" in obj:
            item.outcome = outcome
    elif "kind" in obj:
        _check_fields(obj, _STEP_FIELDS, "step")
        step = _step(obj, "step")
        pending.setdefault(trajectory_id, _Pending()).steps.append(step)
    elif "outcome" in obj and set(obj) <= {"trajectory_id", "outcome"}:
        outcome = _outcome(obj["outcome"])
        pending.setdefault(trajectory_id, _Pending()).outcome = outcome
    else:
        keys = ", ".join(sorted(obj))
        raise TraceFormatError(
            f"line is neither a trajectory (has 'steps'), a step (has 'kind') nor an outcome "
            f"line; keys: {keys}"
        )


def _check_fields(obj: dict[str, Any], known: frozenset[str], what: str) -> None:
    unknown = sorted(set(obj) - known)
    if unknown:
        raise TraceFormatError(
            f"unknown {what} field {unknown[0]!r}; known: {', '.join(sorted(known))}"
        )


def _step(obj: Any, where: str) -> Step:
    if not isinstance(obj, dict):
        raise TraceFormatError(f"{where} must be an object, got {_short(obj)}")
    _check_fields(obj, _STEP_FIELDS, "step")
    kind = obj.get("kind")
    try:
        step_kind = StepKind(kind)
    except ValueError:
        raise TraceFormatError(
            f"{where}.kind = {kind!r} is not a step kind; known kinds: {_KINDS}"
        ) from None
    name = obj.get("name")
    if not isinstance(name, str):
        raise TraceFormatError(f"{where}.name must be a string, got {_short(name)}")
    inputs = obj.get("inputs", {})
    if not isinstance(inputs, dict):
        raise TraceFormatError(f"{where}.inputs must be an object, got {_short(inputs)}")
    status = obj.get("status", "ok")
    if status not in ("ok", "error"):
        raise TraceFormatError(f"{where}.status = {status!r}; expected 'ok' or 'error'")
    error = obj.get("error")
    if error is not None and not isinstance(error, str):
        raise TraceFormatError(f"{where}.error must be a string or null, got {_short(error)}")
    resamplable = obj.get("resamplable", True)
    if not isinstance(resamplable, bool):
        raise TraceFormatError(
            f"{where}.resamplable must be true or false, got {_short(resamplable)}"
        )
    return Step(
        kind=step_kind,
        name=name,
        inputs=inputs,
        output=obj.get("output"),
        status=StepStatus(status),
        error=error,
        start_time_unix_nano=_optional_int(obj, "start_time_unix_nano", where),
        end_time_unix_nano=_optional_int(obj, "end_time_unix_nano", where),
        span_id=_optional_str(obj, "span_id", where),
        parent_span_id=_optional_str(obj, "parent_span_id", where),
        resamplable=resamplable,
    )


def _span_node(obj: Any, where: str) -> SpanNode:
    if not isinstance(obj, dict) or not isinstance(obj.get("span_id"), str):
        raise TraceFormatError(f"{where} must be an object with a 'span_id', got {_short(obj)}")
    step_index = obj.get("step_index")
    return SpanNode(
        span_id=obj["span_id"],
        parent_span_id=_optional_str(obj, "parent_span_id", where),
        name=str(obj.get("name", "")),
        role=str(obj.get("role", "span")),
        start_time_unix_nano=_optional_int(obj, "start_time_unix_nano", where),
        end_time_unix_nano=_optional_int(obj, "end_time_unix_nano", where),
        status=StepStatus.ERROR if obj.get("status") == "error" else StepStatus.OK,
        step_index=step_index if isinstance(step_index, int) else None,
    )


def _optional_int(obj: dict[str, Any], key: str, where: str) -> int | None:
    value = obj.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        if value is not None and not 0 <= value < 1 << 63:
            raise TraceFormatError(
                f"{where}.{key} = {value} is not a time in nanoseconds (0 to 2**63)"
            )
        return value
    raise TraceFormatError(f"{where}.{key} must be an integer or null, got {_short(value)}")


def _optional_str(obj: dict[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise TraceFormatError(f"{where}.{key} must be a string or null, got {_short(value)}")


def _outcome(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TraceFormatError(f"'outcome' must be a number or null, got {_short(value)}")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
