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
    from otel_replay.report._html import Question, html_report, question, report_body
    from otel_replay.report._json import REPORT_VERSION, build_report, dumps_report, read_report
    from otel_replay.report._page import data_script, esc, page
    from otel_replay.report._runs import (
        diff_record,
        fork_record,
        recorded_record,
        replay_record,
        resumed_record,
    )
    from otel_replay.report._schema import REPORT_SCHEMA
    from otel_replay.report._timeline import Mark, run_data, run_section, span_tree, timeline
    from otel_replay.report._view import chat

__all__ = [
    "REPORT_SCHEMA",
    "REPORT_VERSION",
    "Mark",
    "Question",
    "build_report",
    "chat",
    "data_script",
    "diff_record",
    "dumps_report",
    "esc",
    "fork_record",
    "html_report",
    "page",
    "question",
    "read_report",
    "recorded_record",
    "replay_record",
    "report_body",
    "resumed_record",
    "run_data",
    "run_section",
    "span_tree",
    "timeline",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
