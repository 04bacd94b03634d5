"""Many runs: score stored runs with a verifier, attribute a selection of stored runs over an executor, keep each report in the store,
blame steps across the reports, add fragility maps up by step and fault, and export contrastive
pairs. Exports load on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.fleet._batch import attribute_runs
    from otel_replay.fleet._blame import blame
    from otel_replay.fleet._fragility import FragilityRow, fragility
    from otel_replay.fleet._pairs import pairs
    from otel_replay.fleet._score import Scored, score_runs
    from otel_replay.fleet._select import Selection

if TYPE_CHECKING:  # lent to the other floors: __inside__
    from otel_replay.fleet._batch import Attributed as Attributed
    from otel_replay.fleet._batch import pending as pending
    from otel_replay.fleet._kept import keep as keep
    from otel_replay.fleet._pairs import Unpaired as Unpaired
    from otel_replay.fleet._pairs import unpaired as unpaired
    from otel_replay.fleet._score import ScoreStatus as ScoreStatus
    from otel_replay.fleet._score import triage as triage
    from otel_replay.fleet._select import parse_since as parse_since

__all__ = [
    "FragilityRow",
    "Scored",
    "Selection",
    "attribute_runs",
    "blame",
    "fragility",
    "pairs",
    "score_runs",
]

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "Attributed",
    "ScoreStatus",
    "Unpaired",
    "keep",
    "parse_since",
    "pending",
    "triage",
    "unpaired",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
