"""agent-replay: import agent traces from OpenTelemetry, replay them, and find why a run failed."""

from __future__ import annotations

from typing import Any

from otel_replay.errors import (
    CanonicalJSONError,
    NotFoundError,
    ReplayError,
    StoreError,
    TraceFormatError,
)
from otel_replay.importers import Format, ReadOptions, read_path
from otel_replay.model import SpanNode, Step, StepKind, StepStatus, Trajectory
from otel_replay.store import Store

__all__ = [
    "CanonicalJSONError",
    "Format",
    "NotFoundError",
    "ReadOptions",
    "ReplayError",
    "SpanNode",
    "Step",
    "StepKind",
    "StepStatus",
    "Store",
    "StoreError",
    "TraceFormatError",
    "Trajectory",
    "read_path",
    "steps_frame",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # polars is heavy to import; load it only for people who ask for the DataFrame
    if name == "steps_frame":
        from otel_replay.frame import steps_frame

        return steps_frame
    raise AttributeError(f"module 'otel_replay' has no attribute {name!r}")
