"""What a reader is told (`ReadOptions`) and what it reports back besides trajectories (`ReadReport`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from otel_replay.errors import EditedContentError, TraceFormatError

#: Root-span attributes read as the run's outcome when ``--outcome-attribute`` is not given, in order.
DEFAULT_OUTCOME_ATTRIBUTES = (
    "agent_replay.outcome",
    "outcome",
    "eval.score",
    "gen_ai.evaluation.score.value",
    "mlflow.assessment.outcome",
    "langfuse.score.outcome",
    "langsmith.feedback.outcome",
)

#: The largest record a reader holds in memory: one JSON document, one JSON line, one protobuf
#: message. What pipelines write is far smaller (gRPC refuses messages above 4 MiB unless told
#: otherwise, and the OTLP/HTTP specification advises receivers to refuse bodies above 64 MiB
#: decompressed, as `serve` does: docs/importing.md, "Receive traces as they happen"), so 4x that
#: reads any exporter's batch and a hand-made whole-trace document, while a gzip bomb (kilobytes
#: that inflate to gigabytes in one line) stops at a size a laptop holds: the record's bytes plus,
#: once parsed, a few times as much.
DEFAULT_MAX_RECORD_BYTES = 256 << 20
#: Past this a limit means nothing: no record that large could be held anyway.
MAX_RECORD_BYTES_CEILING = 1 << 40


@dataclass
class ReadReport:
    """Filled in while a reader runs: what was skipped (``--skip-invalid``) and what was noticed.

    ``edited``: the native JSONL runs read although their content no longer matches the hashes
    they were written with (one error per run, naming its first such step), which a caller shows
    as warnings; read strictly they are refused instead (`ReadOptions.strict`)."""

    skipped: list[TraceFormatError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    edited: list[EditedContentError] = field(default_factory=list)
    spans: int = 0
    records: int = 0
    roots: int = 0  # runs built from spans
    outcome_roots: int = 0  # ... whose root span carries the ``--outcome-attribute``
    root_attributes: set[str] = field(default_factory=set)  # what roots carry (for the warning)


@dataclass
class ReadOptions:
    """How to read one file.

    Attributes:
        outcome_attribute: root-span attribute holding the run's score (1.0 success … 0.0 failure);
            ``None`` tries `DEFAULT_OUTCOME_ATTRIBUTES`.
        skip_invalid: skip records that cannot be read (counted in ``report.skipped``) instead of
            raising `TraceFormatError` on the first.
        progress: called with the number of bytes consumed so far.
        report: where skips and warnings are collected.
        max_record_bytes: the largest record (JSON document, JSON line, protobuf message) read into
            memory, decompressed; a larger one is never held whole: it raises `TraceFormatError`,
            or with ``skip_invalid`` is read past and counted where the format can step over it (a
            line, a length-prefixed message).
        strict: refuse a native JSONL run whose steps no longer match their stored hashes (it
            was edited after export): `EditedContentError`, or with ``skip_invalid`` the run is
            skipped and counted. Otherwise it is read with the hashes of its content as it is
            now, and noted in ``report.edited``.
    """

    outcome_attribute: str | None = None
    skip_invalid: bool = False
    progress: Callable[[int], None] | None = None
    report: ReadReport = field(default_factory=ReadReport)
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    strict: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.max_record_bytes <= MAX_RECORD_BYTES_CEILING:
            raise ValueError(
                f"max_record_bytes={self.max_record_bytes!r} must be above 0 and at most "
                f"{MAX_RECORD_BYTES_CEILING} (1 TiB)"
            )

    def outcome_keys(self) -> tuple[str, ...]:
        if self.outcome_attribute is not None:
            return (self.outcome_attribute,)
        return DEFAULT_OUTCOME_ATTRIBUTES

    def missing_outcome(self) -> str | None:
        """The warning when ``outcome_attribute`` was named and no root span carried it."""
        report = self.report
        if self.outcome_attribute is None or not report.roots or report.outcome_roots:
            return None
        carried = ", ".join(sorted(report.root_attributes)[:12]) or "no attributes"
        return (
            f"no root span carries --outcome-attribute {self.outcome_attribute!r}, so no outcome "
            f"came from it; the root spans carry: {carried}"
        )

    def too_large(self, what: str) -> TraceFormatError:
        """The error for a record over ``max_record_bytes``; ``what`` says which kind of record."""
        return TraceFormatError(
            f"record larger than --max-record-bytes {self.max_record_bytes} ({what}); "
            "a larger limit reads it"
        )

    def invalid(self, error: TraceFormatError) -> None:
        """Raise ``error``, or record it when invalid records are being skipped."""
        if not self.skip_invalid:
            raise error
        self.report.skipped.append(error)
