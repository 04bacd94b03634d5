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

if TYPE_CHECKING:  # lent to the other floors: __inside__
    from otel_replay.report._html import question as question
    from otel_replay.report._html import report_body as report_body
    from otel_replay.report._json import read_report as read_report
    from otel_replay.report._page import esc as esc
    from otel_replay.report._page import page as page
    from otel_replay.report._runs import diff_record as diff_record
    from otel_replay.report._runs import fork_record as fork_record
    from otel_replay.report._runs import recorded_record as recorded_record
    from otel_replay.report._runs import replay_record as replay_record
    from otel_replay.report._runs import resumed_record as resumed_record
    from otel_replay.report._sweep import SWEEP_SCHEMA as SWEEP_SCHEMA
    from otel_replay.report._sweep import build_sweep_report as build_sweep_report
    from otel_replay.report._sweep import dumps_sweep_report as dumps_sweep_report
    from otel_replay.report._sweep import rerun_sweep as rerun_sweep
    from otel_replay.report._sweep import sweep_html as sweep_html
    from otel_replay.report._timeline import run_section as run_section

__all__ = [
    "REPORT_SCHEMA",
    "REPORT_VERSION",
    "build_report",
    "dumps_report",
    "html_report",
]

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "SWEEP_SCHEMA",
    "build_sweep_report",
    "diff_record",
    "dumps_sweep_report",
    "esc",
    "fork_record",
    "page",
    "question",
    "read_report",
    "recorded_record",
    "replay_record",
    "report_body",
    "rerun_sweep",
    "resumed_record",
    "run_section",
    "sweep_html",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
