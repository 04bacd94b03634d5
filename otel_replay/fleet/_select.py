"""Which stored runs a many-run command works on: ids, ``--where``, ``--since``, ``--limit``.

``--where`` is a small language over the run list's columns, never SQL: conditions joined by
``and``, each ``FIELD OP VALUE`` with FIELD one of `FIELDS`, OP one of ``< <= > >= = != ~`` (``~``:
the value is a regular expression searched in the field, in RE2's syntax: `otel_replay._regex`)
and VALUE a number or a string (quoted or bare). A run whose field is unknown (no outcome) matches
no comparison on it. A filter holds at most the store's `MAX_FILTER` characters and
`MAX_CONDITIONS` conditions.
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from otel_replay._regex import PatternError, compiled, searches
from otel_replay.errors import ReplayError, setting
from otel_replay.store import Store
from otel_replay.store._query import MAX_CONDITIONS, MAX_FILTER
from otel_replay.store._trajectories import TrajectorySummary

#: The fields ``--where`` reads, and where each comes from.
FIELDS: dict[str, Callable[[TrajectorySummary], Any]] = {
    "id": lambda s: s.id,
    "outcome": lambda s: s.outcome,
    "steps": lambda s: s.n_steps,
    "source": lambda s: s.source,
    "format": lambda s: s.format,
    "start": lambda s: s.start_time_unix_nano,
    "replayability": lambda s: s.replayability,
    "task": lambda s: s.task,
}
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "!=": operator.ne,
    "==": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
    "=": operator.eq,
    "~": lambda field, pattern: searches(pattern, str(field)),
}
_CONDITION = re.compile(
    r"\s*(?P<field>[a-z_]+)\s*(?P<op><=|>=|!=|==|<|>|=|~)\s*"
    r"(?P<value>'[^']*'|\"[^\"]*\"|[^\s'\"]+)\s*"
)
_AGO = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

Condition = Callable[[TrajectorySummary], bool]


def parse_where(text: str) -> Condition:
    """``--where`` as a test of one run; a mistake is an error naming the part not understood."""
    if len(text) > MAX_FILTER:
        raise ReplayError(
            f"{setting('where')}: the filter is too long ({len(text):,} characters; at most "
            f"{MAX_FILTER:,})"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ReplayError(
            f"{setting('where', text, quoted=True)}: holds bytes that are not UTF-8"
        ) from None
    parts = [part for part in re.split(r"\s+and\s+", text.strip()) if part]
    if len(parts) > MAX_CONDITIONS:
        raise ReplayError(
            f"{setting('where')}: the filter has too many conditions (at most {MAX_CONDITIONS})"
        )
    conditions = [_condition(part, text) for part in parts]
    if not conditions:
        raise ReplayError(
            f"{setting('where', text, quoted=True)} holds no condition (e.g. 'outcome < 0.5')"
        )
    return lambda summary: all(test(summary) for test in conditions)


def _condition(part: str, whole: str) -> Condition:
    found = _CONDITION.fullmatch(part)
    if found is None:
        raise ReplayError(
            f"{setting('where', whole, quoted=True)}: cannot read {part!r}; a condition is FIELD OP "
            "VALUE, FIELD one of "
            f"{', '.join(FIELDS)}, OP one of < <= > >= = != ~ (e.g. 'outcome < 0.5 and steps > 5')"
        )
    field, op, raw = found["field"], found["op"], found["value"].strip("'\"")
    if field not in FIELDS:
        raise ReplayError(
            f"{setting('where', whole, quoted=True)}: no field {field!r}; fields: "
            f"{', '.join(FIELDS)}"
        )
    value: Any = raw
    if op == "~":
        try:
            compiled(raw)
        except PatternError as exc:
            raise ReplayError(
                f"{setting('where', whole, quoted=True)}: {raw!r} is not a regular expression: "
                f"{exc}"
            ) from None
    elif field in ("outcome", "steps", "start"):
        try:
            value = float(raw)
        except ValueError:
            raise ReplayError(
                f"{setting('where', whole, quoted=True)}: {field} is a number, got {raw!r}"
            ) from None
    read, test = FIELDS[field], _OPERATORS[op]

    def matches(summary: TrajectorySummary) -> bool:
        actual = read(summary)
        return actual is not None and bool(test(actual, value))

    return matches


def parse_since(text: str, now_ns: int | None = None) -> int:
    """``--since``: an ISO date or time (``2026-03-14``, ``2026-03-14T15:00``, UTC unless it says),
    or an age (``30m``, ``24h``, ``7d``, ``2w``); the moment as Unix nanoseconds."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    age = re.fullmatch(r"(\d+(?:\.\d+)?)([smhdw])", text.strip())
    if age:
        return now_ns - int(float(age[1]) * _AGO[age[2]] * 1e9)
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ReplayError(
            f"{setting('since', text, quoted=True)} is neither a date or time (2026-03-14, 2026-03-14T15:00) nor an "
            "age (30m, 24h, 7d)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1e9)


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """Which runs: ``ids`` (prefixes will do), or every run matching ``where``, ``failing``
    (outcome below ``fail_threshold``) and ``since``, newest first, at most ``limit``."""

    ids: tuple[str, ...] = ()
    where: str | None = None
    failing: bool = False
    since: str | None = None
    limit: int | None = None
    fail_threshold: float = 0.5

    @property
    def many(self) -> bool:
        """More than one run is meant (or a query that may find any number)."""
        return (
            len(self.ids) != 1 or self.where is not None or self.failing or self.since is not None
        )

    def runs(self, store: Store) -> list[str]:
        """The selected runs' full ids, in order (an id asked for twice counts once)."""
        if self.limit is not None and self.limit < 1:
            raise ReplayError(f"{setting('limit', self.limit)} must be at least 1")
        tests: list[Condition] = []
        if self.where is not None:
            tests.append(parse_where(self.where))
        if self.failing:
            threshold = self.fail_threshold
            tests.append(lambda s: s.outcome is not None and s.outcome < threshold)
        if self.since is not None:
            moment = parse_since(self.since)
            tests.append(lambda s: (s.start_time_unix_nano or 0) >= moment)
        if self.ids:
            chosen = list(dict.fromkeys(store.resolve(i) for i in self.ids))
            summaries = [s for s in (store.summary(i) for i in chosen) if s is not None]
        else:
            summaries = sorted(store.summaries(), key=_newest_first)
        picked = [s.id for s in summaries if all(test(s) for test in tests)]
        return picked[: self.limit] if self.limit is not None else picked


def _newest_first(summary: TrajectorySummary) -> tuple[int, str]:
    return (-(summary.start_time_unix_nano or 0), summary.id)


def described(ids: Sequence[str]) -> str:
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
