"""agent-replay's own format: JSON Lines of trajectories, steps and outcomes.

Each line is one of::

    {"trajectory_id": str, "outcome": float|null, "metadata": {}, "steps": [step, ...]}   a trajectory
    {"trajectory_id": str, "kind": str, "name": str, "inputs": {}, "output": any, ...}    one step
    {"trajectory_id": str, "outcome": float|null}                                         an outcome

Steps of a trajectory are taken in file order (whole-trajectory steps first, then step lines). A step
has ``kind`` (a `StepKind` value), ``name``, ``inputs`` (object), ``output`` (any JSON), ``status``
(``ok``/``error``), ``error`` (string or null) and optionally ``start_time_unix_nano``,
``end_time_unix_nano``, ``span_id``, ``parent_span_id``, ``resamplable``; ``index``, ``op_key`` and
``hash`` may be present (export writes them) and are recomputed on import: a stored ``hash`` that
is not the one recomputed means the step was edited after export (`_stored_hashes`), which the
report notes (``ReadReport.edited``) or, read strictly, refuses (`EditedContentError`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_replay.errors import CanonicalJSONError, TraceFormatError, preview
from otel_replay.hashing import check_json_value
from otel_replay.importers._options import ReadOptions
from otel_replay.importers._source import LongLine, bounded_lines, open_trace_file
from otel_replay.importers._stored_hashes import edited_content
from otel_replay.model import Step, Trajectory, read_outcome


@dataclass
class _Pending:
    whole: Trajectory | None = None  # the trajectory line, if there is one
    steps: list[Step] = field(default_factory=list)  # step lines, in file order
    outcome: float | None = None  # the last outcome given, by either kind of line
    # what the file says the content hashed to, checked once the run is built:
    whole_line: int = 0  # the trajectory line's number
    whole_hashes: list[str] = field(default_factory=list)  # its steps' stored hashes ("" none)
    final_hash: str | None = None  # its final_hash
    step_lines: list[int] = field(default_factory=list)  # each step line's number

    def stored(self) -> tuple[list[str], list[int]]:
        """Each step's stored hash and line, in the run's order (the trajectory line's first)."""
        hashes = [*self.whole_hashes, *(step.hash for step in self.steps)]
        return hashes, [self.whole_line] * len(self.whole_hashes) + self.step_lines


def read_jsonl(path: str | Path, options: ReadOptions | None = None) -> Iterator[Trajectory]:
    """Yield the trajectories of a native JSONL file, in the order each id first appears."""
    path = Path(path)
    options = options or ReadOptions()
    pending: dict[str, _Pending] = {}
    with open_trace_file(path) as (stream, raw):
        for number, line in enumerate(bounded_lines(stream, options.max_record_bytes), start=1):
            if isinstance(line, LongLine):
                options.invalid(options.too_large("a JSON line").located(path=path, line=number))
                continue
            if not line.strip():
                continue
            try:
                _read_line(line, number, pending)
            except TraceFormatError as exc:
                options.invalid(exc.located(path=path, line=number))
                continue
            options.report.records += 1
        if options.progress:
            options.progress(raw.tell())
    for trajectory_id, item in pending.items():
        run = _built(trajectory_id, item, path)
        hashes, lines = item.stored()
        edited = edited_content(
            run,
            hashes,
            lines,
            path=path,
            final_hash=item.final_hash,
            final_line=item.whole_line,
            whole_steps=len(item.whole_hashes),
        )
        if edited is not None:
            if options.strict:
                options.invalid(edited)  # raises, unless the run is skipped and counted
                continue
            options.report.edited.append(edited)
        yield run


def _built(trajectory_id: str, item: _Pending, path: Path) -> Trajectory:
    whole = item.whole
    metadata = {**(whole.metadata if whole else {}), "source": str(path), "format": "jsonl"}
    if whole is not None and not item.steps:  # already numbered and chained
        return dataclasses.replace(whole, outcome=item.outcome, metadata=metadata)
    return Trajectory.build(
        trajectory_id,
        [*(whole.steps if whole else ()), *item.steps],
        outcome=item.outcome,
        metadata=metadata,
        spans=whole.spans if whole else (),
    )


def _stored_hash(record: dict[str, Any]) -> str:
    """The hash a step's record was written with ("" when it has none: written by hand)."""
    stored = record.get("hash")
    return stored if isinstance(stored, str) else ""


def _refuse_constant(name: str) -> Any:
    raise TraceFormatError(f"{name} is not JSON")


def _read_line(line: bytes, number: int, pending: dict[str, _Pending]) -> None:
    try:
        # the standard decoder keeps integers exact (orjson would turn 2**70 into a float)
        obj = json.loads(line, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"malformed JSON: {exc}") from None
    except RecursionError:
        raise TraceFormatError("JSON nested deeper than the reader follows") from None
    except ValueError:  # an integer longer than Python converts (sys.set_int_max_str_digits)
        raise TraceFormatError("an integer with more digits than the reader converts") from None
    try:
        check_json_value(obj, "line")
    except CanonicalJSONError as exc:
        raise TraceFormatError(str(exc)) from None
    if not isinstance(obj, dict):
        raise TraceFormatError(f"expected a JSON object, got {preview(obj)}")
    trajectory_id = obj.get("trajectory_id")
    if not isinstance(trajectory_id, str) or not trajectory_id:
        raise TraceFormatError(
            f"'trajectory_id' must be a non-empty string, got {preview(trajectory_id)}"
        )
    # everything is validated before anything is filed: a skipped line leaves no trace behind
    if "steps" in obj:
        existing = pending.get(trajectory_id)
        if existing is not None and existing.whole is not None:
            raise TraceFormatError(f"trajectory {trajectory_id!r} is defined twice")
        whole = Trajectory.from_record(obj)
        item = pending.setdefault(trajectory_id, _Pending())
        item.whole, item.whole_line = whole, number
        item.whole_hashes = [_stored_hash(record) for record in obj.get("steps", ())]
        final_hash = obj.get("final_hash")
        item.final_hash = final_hash if isinstance(final_hash, str) else None
        if "outcome" in obj:
            item.outcome = whole.outcome
    elif "kind" in obj:
        step = Step.from_record(obj, "step", extra_fields=("trajectory_id",))  # keeps its hash
        item = pending.setdefault(trajectory_id, _Pending())
        item.steps.append(step)
        item.step_lines.append(number)
    elif "outcome" in obj and set(obj) <= {"trajectory_id", "outcome"}:
        outcome = read_outcome(obj["outcome"])
        pending.setdefault(trajectory_id, _Pending()).outcome = outcome
    else:
        keys = ", ".join(sorted(obj))
        raise TraceFormatError(
            f"line is neither a trajectory (has 'steps'), a step (has 'kind') nor an outcome "
            f"line; keys: {keys}"
        )
