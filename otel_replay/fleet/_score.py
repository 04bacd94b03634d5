"""Giving stored runs an outcome: a verifier (``--verifier``, ``--success-if``/``--fail-if``,
``--judge``, or the one the user's modules register) scores each run, and the store keeps the
score with where it came from (`otel_replay.store.Store.set_outcome`: ``verifier:NAME`` or
``judge:QUESTION``). A run that has an outcome already (from its trace, its recording, an earlier
score or an attribution) is left as it is unless ``force``.

Runs that arrive as traces often carry no outcome (the root span of most instrumentations has
status OK and no score), so this is what makes ``list --where failed`` and ``attribute
--all-failing`` find them. `triage` is the same scoring as a many-run attribution does it first:
the unscored runs of the selection are scored and stored, and the passing ones are set aside.

Every run is scored before anything is written, then all outcomes are stored in one transaction:
a verifier that is slow (a judge asking a model) never holds the store's write lock, and an
interrupted scoring stores nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from otel_replay.errors import ReplayError, VerifierError, setting
from otel_replay.fleet._kept import unfinished
from otel_replay.fleet._select import Selection
from otel_replay.model import FAIL_THRESHOLD
from otel_replay.replay import score
from otel_replay.resamplers import Judge, UserCode, VerifierFunction, describe
from otel_replay.store import Store


class ScoreStatus(str, Enum):
    """What scoring did with one run."""

    SCORED = "scored"  # it had no outcome; it has the verifier's now
    RESCORED = "rescored"  # it had one; ``force`` replaced it with the verifier's
    SKIPPED = "skipped"  # it had one, kept (no ``force``)
    ERROR = "error"  # the verifier could not score it (its message says why); nothing stored
    # it never finished (its recording stopped, or agent-replay's recorder failed): what it holds
    # is not what its agent did to the end, so no outcome is the agent's; nothing stored
    UNFINISHED = "unfinished"


@dataclass(frozen=True, slots=True)
class Scored:
    """One run scored: its outcome and that outcome's source as the store holds them now, what
    it held before, and what was done."""

    id: str
    status: ScoreStatus
    outcome: float | None
    source: str | None
    before: float | None = None
    before_source: str | None = None
    error: str | None = None

    @property
    def failed(self) -> bool | None:
        """Whether the outcome now stored is a failure (None: unknown)."""
        return None if self.outcome is None else self.outcome < FAIL_THRESHOLD

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "status": self.status.value,
            "outcome": self.outcome,
            "outcome_source": self.source,
            "before": self.before,
            "before_source": self.before_source,
            "error": self.error,
        }


def source_of(verifier: VerifierFunction) -> str:
    """How the store names where a verifier's outcome came from: ``judge:QUESTION`` for a judge,
    else ``verifier:NAME`` (``verifier:builtin.success_if('Booked')``, ``verifier:checks.booked``)."""
    if isinstance(verifier, Judge):
        return f"judge:{verifier.options.question}"
    return f"verifier:{describe(verifier)}"


def _verifier(code: UserCode) -> VerifierFunction:
    """The verifier ``code`` scores with (its mistakes first); none is an error."""
    verifier = code.load().registry.verifier
    if verifier is None:
        raise VerifierError(
            f"nothing to score runs with: give {setting('success_if', 'REGEX', text='REGEX')}, "
            f"{setting('fail_if', 'REGEX', text='REGEX')}, "
            f"{setting('judge', 'QUESTION', text='QUESTION')} or "
            f"{setting('verifier', 'module:function')}, or a module registering an @verifier "
            f"({setting('resamplers', 'FILE', text='FILE')})"
        )
    return verifier


def _chosen(store: Store, runs: Selection | Sequence[str]) -> list[str]:
    """The full ids of ``runs`` (ids or prefixes, each resolved: an unknown one is an error)."""
    if isinstance(runs, Selection):
        return runs.runs(store)
    return list(dict.fromkeys(store.resolve(run) for run in runs))


def score_runs(
    store: Store, runs: Selection | Sequence[str], code: UserCode, *, force: bool = False
) -> list[Scored]:
    """Score the stored ``runs`` (a `Selection`, or ids and unique prefixes) with the verifier
    ``code`` names (or its modules register) and store each outcome with its source. A run with
    an outcome already is skipped unless ``force``. A verifier that cannot score a run (it raised,
    or returned no number) is that run's error; the others are stored. Mistakes in what was asked
    (an unknown id, no verifier, a bad ``where``) raise before anything is scored or stored."""
    verifier = _verifier(code)
    try:
        ids = _chosen(store, runs)
        source = source_of(verifier)
        results: list[Scored] = []
        for run in ids:
            summary = store.summary(run)
            assert summary is not None  # the selection read it
            before, before_source = summary.outcome, summary.outcome_source
            if before is not None and not force:
                results.append(
                    Scored(run, ScoreStatus.SKIPPED, before, before_source, before, before_source)
                )
                continue
            stored = store.get(run)
            why = unfinished(stored)
            if why is not None:
                results.append(
                    Scored(run, ScoreStatus.UNFINISHED, before, before_source, before,
                           before_source, why)
                )  # fmt: skip
                continue
            try:
                outcome = score(verifier, stored)
            except ReplayError as exc:
                results.append(
                    Scored(run, ScoreStatus.ERROR, before, before_source, before, before_source,
                           str(exc))
                )  # fmt: skip
                continue
            status = ScoreStatus.SCORED if before is None else ScoreStatus.RESCORED
            results.append(Scored(run, status, outcome, source, before, before_source))
    finally:
        if isinstance(verifier, Judge):
            verifier.close()
    _store(store, results)
    return results


def _store(store: Store, results: Sequence[Scored]) -> None:
    changed = [r for r in results if r.status in (ScoreStatus.SCORED, ScoreStatus.RESCORED)]
    if not changed:
        return
    with store.transaction():
        for result in changed:
            assert result.outcome is not None and result.source is not None
            store.set_outcome(result.id, result.outcome, result.source)


@dataclass(frozen=True, slots=True)
class Triage:
    """A many-run attribution's selection, scored first: the runs to attribute, the passing runs
    set aside, and the runs whose outcome was stored on the way."""

    runs: list[str]
    passing: list[str]
    scored: list[Scored]


def triage(
    store: Store,
    selection: Selection,
    code: UserCode,
    *,
    skip_passing: bool = True,
) -> Triage:
    """What a many-run attribution with ``code``'s verifier works on. The runs of ``selection``
    without an outcome are scored by the verifier and their outcomes stored; with
    ``selection.failing`` the runs whose outcome (stored, or just scored) is a failure are picked,
    so runs that arrived without one are found, and a run with a passing outcome stored is never
    read. Each run picked is scored by the verifier the attribution uses, and (with
    ``skip_passing``) one it passes is set aside rather than attributed. ``selection.limit``
    counts the runs kept. Without a verifier the selection is taken as it is."""
    verifier = code.registry().verifier
    if verifier is None:
        return Triage(selection.runs(store), [], [])
    try:
        wide = dataclasses.replace(selection, failing=False)
        if selection.failing:
            wide = dataclasses.replace(wide, limit=None)
        source = source_of(verifier)
        kept: list[str] = []
        passing: list[str] = []
        scored: list[Scored] = []
        for run in wide.runs(store):
            summary = store.summary(run)
            stored = None if summary is None else summary.outcome
            if selection.failing and stored is not None and stored >= selection.fail_threshold:
                continue  # not failing: --all-failing never chose it
            read = store.get(run)
            if stored is None and unfinished(read) is not None:
                continue  # never finished: no outcome to find failing (score says why)
            try:
                outcome = score(verifier, read)
            except ReplayError:
                kept.append(run)  # its attribution says what went wrong, as its error
                continue
            if stored is None:
                scored.append(Scored(run, ScoreStatus.SCORED, outcome, source))
                if selection.failing and outcome >= selection.fail_threshold:
                    continue  # scored now, and passing: not chosen
            if outcome < selection.fail_threshold or not skip_passing:
                kept.append(run)
            else:
                passing.append(run)
    finally:
        if isinstance(verifier, Judge):
            verifier.close()
    _store(store, scored)
    if selection.failing and selection.limit is not None:
        kept = kept[: selection.limit]
    return Triage(kept, passing, scored)
