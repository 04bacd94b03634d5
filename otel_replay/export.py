"""Trajectories out as native JSONL: one `Trajectory.to_record` per line.

The record is what `otel_replay.importers.read_jsonl` reads back; a round trip keeps every step hash.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO

import orjson

from otel_replay.model import Trajectory

__all__ = ["write_jsonl"]


def write_jsonl(trajectories: Iterable[Trajectory], out: IO[bytes]) -> int:
    """Write one JSON line per trajectory (keys in recorded order); return how many were written."""
    count = 0
    for trajectory in trajectories:
        out.write(orjson.dumps(trajectory.to_record()))
        out.write(b"\n")
        count += 1
    return count
