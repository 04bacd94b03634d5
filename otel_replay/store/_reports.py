"""Attribution reports kept for their run, and what ``blame`` adds up across them.

One report is kept per run and question (``config_digest``): the same question asked again
replaces its answer. Table ``reports`` holds each report's JSON as written
(``otel_replay.report.dumps_report``); ``report_steps`` one row per step of each report (its columns
are `REPORT_STEP_COLUMNS`, made by ``otel_replay.fleet``), the rows of each run's newest report
marked ``newest``: what ``blame`` reads across runs.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

import orjson

from otel_replay.store._blobs import stored_json
from otel_replay.store._connection import Connected, chunks

#: The columns of a ``report_steps`` row as `Store.keep_report` is given it, in order (the store
#: adds ``newest``).
REPORT_STEP_COLUMNS = (
    "trajectory_id",
    "config_digest",
    "idx",
    "kind",
    "name",
    "shape",
    "verdict",
    "attribution",
    "ci_low",
    "ci_high",
    "commitment",
    "repaired",
    "repair_success",
)


class Reports(Connected):
    """Kept reports and blame sums (`otel_replay.store.Store` is one, with the other rooms)."""

    def keep_report(
        self,
        trajectory_id: str,
        config_digest: str,
        report: bytes,
        verdict: str | None,
        steps: Iterable[Sequence[Any]] = (),
    ) -> None:
        """Keep an attribution report (its JSON bytes) beside its run, replacing the one kept for
        the same run and question (``config_digest``), with its rows for ``report_steps`` (values
        in `REPORT_STEP_COLUMNS` order): a report with rows is the one ``blame`` adds up for the
        run from now on; one without (a swap question's) leaves that as it was. Inside
        `transaction`, or in one of its own."""
        if not self._db.in_transaction:
            with self.transaction():
                return self.keep_report(trajectory_id, config_digest, report, verdict, steps)
        rows = [tuple(row) for row in steps]
        key = (trajectory_id, config_digest)
        self._db.execute(
            "DELETE FROM report_steps WHERE trajectory_id = ? AND config_digest = ?", key
        )
        if rows:
            self._db.execute("UPDATE report_steps SET newest = 0 WHERE trajectory_id = ?", key[:1])
        self._db.execute(
            "INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?, ?)",
            (*key, time.time_ns(), verdict, report),
        )
        marks = ", ".join("?" * len(REPORT_STEP_COLUMNS))
        self._db.executemany(f"INSERT INTO report_steps VALUES ({marks}, 1)", rows)

    def reported(self, config_digest: str) -> set[str]:
        """The runs that have a report for the question ``config_digest``."""
        if not self._has("reports"):
            return set()
        rows = self._db.execute(
            "SELECT trajectory_id FROM reports WHERE config_digest = ?", (config_digest,)
        )
        return {str(row[0]) for row in rows}

    def blame_sums(self, runs: Collection[str] | None = None) -> list[dict[str, Any]]:
        """What ``blame`` adds up, one pass over each run's newest report rows (of ``runs``, or
        of all): per step (kind, name, shape) and verdict, the runs, commitments, the sum, sum of
        squares and count of the estimates, repairs and their success rates' sum and count."""
        if not self._has("report_steps"):
            return []
        among = "" if runs is None else " AND trajectory_id IN (SELECT value FROM json_each(?))"
        rows = self._db.execute(
            "SELECT kind, name, shape, verdict, count(DISTINCT trajectory_id) AS runs,"
            " sum(commitment) AS commitments, sum(attribution) AS total,"
            " sum(attribution * attribution) AS squares, count(attribution) AS estimated,"
            " sum(repaired) AS repairs, sum(repair_success) AS repair_total,"
            " count(repair_success) AS repair_count"
            f" FROM report_steps WHERE newest = 1{among} GROUP BY 1, 2, 3, 4",
            () if runs is None else (orjson.dumps(list(runs)).decode(),),
        )
        return [dict(row) for row in rows]

    def decided_runs(self, runs: Collection[str] | None = None) -> int:
        """Runs (of ``runs``, or all) whose newest report named a culprit."""
        if not self._has("report_steps"):
            return 0
        among = "" if runs is None else " AND trajectory_id IN (SELECT value FROM json_each(?))"
        row = self._db.execute(
            "SELECT count(DISTINCT trajectory_id) FROM report_steps"
            f" WHERE newest = 1 AND verdict = 'culprit'{among}",
            () if runs is None else (orjson.dumps(list(runs)).decode(),),
        ).fetchone()
        return int(row[0])

    def newest_reports(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each run's newest report: its run id and the report (parsed)."""
        if not self._has("reports"):
            return
        rows = self._db.execute(
            "SELECT trajectory_id, report FROM ("
            "  SELECT trajectory_id, report, row_number() OVER (PARTITION BY trajectory_id"
            "         ORDER BY created_at_unix_nano DESC) AS newest FROM reports"
            ") WHERE newest = 1 ORDER BY trajectory_id"
        )
        for row in rows:
            yield str(row[0]), stored_json(row[1], f"the report kept for run {row[0]}")

    def reports(self, trajectory_id: str) -> list[dict[str, Any]]:
        """The reports kept for a run, newest first: ``config_digest``, ``created_at_unix_nano``,
        ``verdict`` and ``report`` (parsed). A store no report was kept in has none."""
        if not self._has("reports"):
            return []
        rows = self._db.execute(
            "SELECT config_digest, created_at_unix_nano, verdict, report FROM reports "
            "WHERE trajectory_id = ? ORDER BY created_at_unix_nano DESC",
            (trajectory_id,),
        )
        return [
            {
                **dict(row),
                "report": stored_json(row["report"], f"a report kept for run {trajectory_id}"),
            }
            for row in rows
        ]

    def report_counts(self, ids: Collection[str] | None = None) -> dict[str, int]:
        """How many reports are kept for each run that has any (of ``ids``, when given: a page of
        runs asks about its own, by the reports' key)."""
        if not self._has("reports"):
            return {}
        if ids is None:
            rows = self._db.execute("SELECT trajectory_id, count(*) FROM reports GROUP BY 1")
            return {str(row[0]): int(row[1]) for row in rows}
        counts: dict[str, int] = {}
        for chunk in chunks(list(ids)):
            rows = self._db.execute(
                "SELECT trajectory_id, count(*) FROM reports WHERE trajectory_id IN "
                f"({','.join('?' * len(chunk))}) GROUP BY 1",
                chunk,
            )
            counts.update((str(row[0]), int(row[1])) for row in rows)
        return counts
