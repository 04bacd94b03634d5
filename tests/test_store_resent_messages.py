"""Storing a history resent on every call: a message a step resends unchanged keeps the blob it was
stored as, and one that only looks unchanged to ``==`` is stored as what it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from otel_replay import Step, StepKind, Store, Trajectory


def _run(histories: list[list[dict[str, Any]]]) -> Trajectory:
    steps = [
        Step(StepKind.LLM, "m", {"model": "m", "messages": messages}, output=f"answer {i}")
        for i, messages in enumerate(histories)
    ]
    return Trajectory.build("resent", steps, outcome=1.0)


def _stored(tmp_path: Path, run: Trajectory) -> tuple[Trajectory, int]:
    with Store.open(tmp_path / "store.db") as db:
        db.put(run)
        return db.get(run.id), db.counts()["blobs"]


SYSTEM = {"role": "system", "content": "You answer questions about orders. " * 30}
USER = {"role": "user", "content": "Where is order 1234? café → naïve"}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({"role": "tool", "content": "x", "n": 1}, {"role": "tool", "content": "x", "n": 1.0}),
        ({"role": "tool", "content": "x", "n": 1}, {"role": "tool", "content": "x", "n": True}),
        ({"role": "tool", "content": "x", "n": 0.0}, {"role": "tool", "content": "x", "n": -0.0}),
        ({"role": "tool", "content": "x"}, {"content": "x", "role": "tool"}),
        (
            {"role": "tool", "content": [{"type": "text", "text": "a"}]},
            {"role": "tool", "content": [{"text": "a", "type": "text"}]},
        ),
        ({"role": "tool", "content": "x"}, {"role": "tool", "content": "x", "name": "t"}),
    ],
    ids=[
        "int-then-float",
        "int-then-bool",
        "zero-then-minus-zero",
        "key-order",
        "nested-order",
        "one-more-key",
    ],
)
def test_a_message_equal_but_not_the_same_bytes_is_stored_as_recorded(
    tmp_path: Path, before: dict[str, Any], after: dict[str, Any]
) -> None:
    assert before == after or "name" in after  # what `==` alone would have taken for unchanged
    run = _run([[SYSTEM, USER, before], [SYSTEM, USER, after]])

    stored, _ = _stored(tmp_path, run)

    for original, read in zip(run.steps, stored.steps, strict=True):
        assert orjson.dumps(read.inputs) == orjson.dumps(original.inputs)
    assert stored.final_hash == run.final_hash


def test_a_resent_history_is_stored_once_and_read_back_exactly(tmp_path: Path) -> None:
    history = [SYSTEM, USER]
    histories = []
    for turn in range(6):
        histories.append([dict(m) for m in history])  # new objects, as every span decodes its own
        history = [*history, {"role": "assistant", "content": f"turn {turn} " * 20}]

    stored, blobs = _stored(tmp_path, _run(histories))

    # spans, metadata, and per step: a shell, an output, and the one message it adds (the first
    # step adds two)
    assert blobs == 2 + 6 * 2 + 2 + 5
    assert [s.inputs["messages"] for s in stored.steps] == histories
