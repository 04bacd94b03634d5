"""Reports: the versioned JSON report of an attribution and its JSON Schema, the same report as one
self-contained HTML page, the pieces of that page the viewer shares (the run's timeline), and the
JSON records of recorded, replayed, forked, resumed and compared runs.

Exports load on first use (`otel_replay._lazy`): a command that prints a diff's record does not
load the attribution report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.report._html import html_report
    from otel_replay.report._json import REPORT_VERSION, build_report, dumps_report
    from otel_replay.report._schema import REPORT_SCHEMA

__all__ = [
    "REPORT_SCHEMA",
    "REPORT_VERSION",
    "build_report",
    "dumps_report",
    "html_report",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
