"""Many runs: attribute a selection of stored runs over an executor, keep each report in the store,
blame steps across the reports, and export contrastive pairs. Exports load on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.fleet._batch import Attributed, RunsWork, attribute_runs, pending
    from otel_replay.fleet._blame import IDENTITY, blame, finite
    from otel_replay.fleet._kept import keep, report_rows, shape
    from otel_replay.fleet._pairs import pairs
    from otel_replay.fleet._select import (
        FIELDS,
        Selection,
        described,
        parse_since,
        parse_where,
    )

__all__ = [
    "FIELDS",
    "IDENTITY",
    "Attributed",
    "RunsWork",
    "Selection",
    "attribute_runs",
    "blame",
    "described",
    "finite",
    "keep",
    "pairs",
    "parse_since",
    "parse_where",
    "pending",
    "report_rows",
    "shape",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
