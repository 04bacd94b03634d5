"""What a reader is told (`ReadOptions`) and what it reports back besides trajectories (`ReadReport`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from otel_replay.errors import TraceFormatError

#: Root-span attributes read as the run's outcome when ``--outcome-attribute`` is not given, in order.
DEFAULT_OUTCOME_ATTRIBUTES = (
    "agent_replay.outcome",
    "outcome",
    "eval.score",
    "gen_ai.evaluation.score.value",
)


@dataclass
class ReadReport:
    """Filled in while a reader runs: what was skipped (``--skip-invalid``) and what was noticed."""

    skipped: list[TraceFormatError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
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
    """

    outcome_attribute: str | None = None
    skip_invalid: bool = False
    progress: Callable[[int], None] | None = None
    report: ReadReport = field(default_factory=ReadReport)

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

    def invalid(self, error: TraceFormatError) -> None:
        """Raise ``error``, or record it when invalid records are being skipped."""
        if not self.skip_invalid:
            raise error
        self.report.skipped.append(error)
