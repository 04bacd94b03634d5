"""Which stored runs a many-run command works on: ids, ``--where``, ``--since``, ``--limit``.

``--where`` is the store's filter language, read by the store alone (`Store.runs`: the language
``list --where`` and the viewer read, one parser and one set of errors; its page is
docs/many-runs.md, "The filter language"). What this adds is the many-run choices around it: ids,
``--since``, failing below a threshold, newest first and a limit.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from otel_replay.errors import SettingError, setting
from otel_replay.store import Store, TrajectorySummary

_AGO = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

Condition = Callable[[TrajectorySummary], bool]


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
        raise SettingError(
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
            raise SettingError(f"{setting('limit', self.limit)} must be at least 1")
        # the store reads the filter (a mistake in it is its `QueryError`, before any id is
        # resolved) and answers it from its indexes
        matching = None if self.where is None else list(store.runs(self.where))
        tests: list[Condition] = []
        if self.failing:
            threshold = self.fail_threshold
            tests.append(lambda s: s.outcome is not None and s.outcome < threshold)
        if self.since is not None:
            moment = parse_since(self.since)
            tests.append(lambda s: (s.start_time_unix_nano or 0) >= moment)
        if self.ids:
            chosen = list(dict.fromkeys(store.resolve(i) for i in self.ids))
            summaries = [s for s in (store.summary(i) for i in chosen) if s is not None]
            if matching is not None:
                admitted = {s.id for s in matching}
                summaries = [s for s in summaries if s.id in admitted]
        else:
            everything = store.summaries() if matching is None else matching
            summaries = sorted(everything, key=_newest_first)
        picked = [s.id for s in summaries if all(test(s) for test in tests)]
        return picked[: self.limit] if self.limit is not None else picked


def _newest_first(summary: TrajectorySummary) -> tuple[int, str]:
    return (-(summary.start_time_unix_nano or 0), summary.id)


def described(ids: Sequence[str]) -> str:
    return ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
