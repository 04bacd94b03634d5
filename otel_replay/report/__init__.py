"""Reports: the versioned JSON report of an attribution and its JSON Schema."""

from otel_replay.report._json import REPORT_VERSION, build_report, dumps_report
from otel_replay.report._schema import REPORT_SCHEMA

__all__ = ["REPORT_SCHEMA", "REPORT_VERSION", "build_report", "dumps_report"]
