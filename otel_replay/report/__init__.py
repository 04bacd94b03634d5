"""Reports: the versioned JSON report of an attribution and its JSON Schema, the same report as one
self-contained HTML page, and the pieces of that page the viewer shares (the run's timeline)."""

from otel_replay.report._html import Question, html_report, question, report_body
from otel_replay.report._json import REPORT_VERSION, build_report, dumps_report, read_report
from otel_replay.report._page import data_script, esc, page
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
    "dumps_report",
    "esc",
    "html_report",
    "page",
    "question",
    "read_report",
    "report_body",
    "run_data",
    "run_section",
    "span_tree",
    "timeline",
]
