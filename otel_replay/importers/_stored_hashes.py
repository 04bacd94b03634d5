"""The hashes a native JSONL file was written with, checked against its content as it is now.

`export` (and a cassette) writes every step's ``hash``, the Merkle link over the step's kind, name,
inputs as stored (correlation ids aside), status, error and output (`otel_replay.hashing`); the
reader makes them afresh from the content. A stored hash that is not the one made afresh means
the content was edited after it was written: what replay would match and serve is no longer what
was recorded. ``op_key`` is not compared: it is made from the inputs the hash already covers, and
its rule for model calls changed once (store schema 3), so a file exported before that would
differ in op_keys alone. Times and span ids are in no hash, so editing them is no edit of content.

Each step is checked against the hash stored before it, not against the chain made afresh, so an
edit is named at the step it was made in, and the steps chained after it (whose stored hashes
still link to it) are not. A step with no stored hash (a hand-written line) is not checked: a file
written by hand has none, and only what was hashed can have been edited since.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from otel_replay.errors import EditedContentError
from otel_replay.hashing import GENESIS, link_hash, result_digest, stored_key
from otel_replay.model import Step, Trajectory


def edited_steps(steps: Sequence[Step], stored: Sequence[str]) -> list[int]:
    """The positions of ``steps`` (a built chain) whose ``stored`` hash ("" none) is not the link
    of their content to the hash stored before them."""
    edited: list[int] = []
    previous, previous_built = GENESIS, GENESIS
    for position, (step, hash_) in enumerate(zip(steps, stored, strict=True)):
        if hash_:
            if previous == previous_built:  # the usual case: nothing to hash again
                expected = step.hash
            else:
                key = stored_key(step.kind.value, step.name, step.inputs)
                result = result_digest(step.output, step.status.value, step.error)
                expected = link_hash(previous, key, result)
            if hash_ != expected:
                edited.append(position)
        previous, previous_built = hash_ or step.hash, step.hash
    return edited


def edited_content(
    run: Trajectory,
    stored: Sequence[str],
    lines: Sequence[int],
    *,
    path: Path,
    final_hash: str | None,
    final_line: int,
    whole_steps: int,
) -> EditedContentError | None:
    """The warning (or, read strictly, the error) for ``run`` when its content is not what its
    stored hashes say; None when it is, or when it carries none.

    Args:
        run: the run as read, its hashes made afresh.
        stored: each step's stored hash ("" none), in the run's order.
        lines: the line each step was read from.
        final_hash: the ``final_hash`` of the run's trajectory line (None: none given), which names
            the last of that line's ``whole_steps``; a mismatch there with every step matching is
            a step removed from the end, or added.
        final_line: that trajectory line's number.
    """
    edited = edited_steps(run.steps, stored)
    if edited:
        first = run.steps[edited[0]]
        return EditedContentError(
            path=path,
            line=lines[edited[0]],
            run_id=run.id,
            step_index=first.index,
            step_name=first.name,
            others=len(edited) - 1,
        )
    if not final_hash:
        return None
    last = whole_steps - 1
    named = GENESIS if last < 0 else (stored[last] or run.steps[last].hash)
    if final_hash == named:
        return None
    return EditedContentError(path=path, line=final_line, run_id=run.id, step_index=None)
