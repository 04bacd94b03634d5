"""The run list as ``agent-replay list`` prints it: a table drawn line by line, and JSON written row
by row, both as the store reads the rows.

Rich measures and wraps every cell of every row before it prints the first one (for 100,000 runs,
34 s and 429 MB, nine tenths of it measuring). Here the columns' widths are measured once, on the
first `MEASURED` rows, each cell is cut to its width, and each line is written as soon as its row is
read: the cost of a row is its own, whatever the store holds. Cells pass through `printable` (a
trace's strings never reach the terminal raw); a failed run's row is red on a terminal only.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator, Sequence

import orjson
from rich.cells import cell_len, set_cell_size

from otel_replay.cli._common import console, display_path, plural, printable
from otel_replay.model import is_failure
from otel_replay.store import TrajectorySummary

#: How many rows the column widths are measured on (a page is measured whole).
MEASURED = 1000
#: How many rows of JSON are made at once (orjson is quicker on a list than row by row).
CHUNK = 1000
COLUMNS = ("trajectory id", "steps", "outcome", "replayability", "format", "source")
_RIGHT = (False, True, False, False, False, False)
#: What the replayability column shows of a store older than the verdict (schema version 5).
UNCHECKED = "?"
#: The least room the task column is shown in (the terminal's width left after the others).
TASK_ROOM = 16
_RED, _RESET = "\x1b[31m", "\x1b[0m"


def outcome_cell(summary: TrajectorySummary) -> str:
    """The outcome and, after it, what gave it (``0 judge``, ``1 trace``: the source's kind, the
    part before its colon; ``list --json`` and ``show`` give it whole); ``—`` for none."""
    if summary.outcome is None:
        return "—"
    kind = (summary.outcome_source or "").partition(":")[0]
    return f"{summary.outcome:g} {printable(kind)}" if kind else f"{summary.outcome:g}"


def _cells(summary: TrajectorySummary) -> tuple[str, ...]:
    outcome = outcome_cell(summary)
    return (
        printable(summary.id),
        str(summary.n_steps),
        outcome,
        summary.replayability or UNCHECKED,
        printable(summary.format or ""),
        printable(summary.source or ""),
    )


def task_cell(summary: TrajectorySummary) -> str:
    """The run's task (its first user message) on one line, control characters escaped."""
    return printable(" ".join((summary.task or "").split()))


def _task_width(head: Sequence[TrajectorySummary], widths: Sequence[int]) -> int:
    """How wide the task column is: its widest measured cell, in what the terminal leaves after
    the other columns, or 0 (no column) when that is less than `TASK_ROOM` or no run has a task."""
    widest = max((cell_len(task_cell(s)) for s in head), default=0)
    room = console.width - sum(widths) - 3 * (len(widths) + 1) - 1
    return 0 if widest == 0 or room < TASK_ROOM else max(4, min(widest, room))


def _fit(text: str, width: int, right: bool) -> str:
    """``text`` in exactly ``width`` cells: cut with an ellipsis, padded on the side it leans from."""
    size = len(text) if text.isascii() else cell_len(text)
    if size > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else "…"
    pad = " " * (width - size)
    return pad + text if right else text + pad


def _widths(rows: Sequence[tuple[str, ...]]) -> list[int]:
    """Each column as wide as its widest measured cell, the source getting what the terminal has
    left (at least 8: its file's name shows, `display_path` cuts from the left)."""
    widths = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(COLUMNS)]
    widths[0] = max(widths[0], 32)
    fixed = sum(widths[:5]) + 3 * len(COLUMNS) + 1
    widths[5] = max(8, min(widths[5], console.width - fixed))
    return widths


def _line(left: str, middle: str, right: str, widths: Sequence[int], fill: str) -> str:
    return left + middle.join(fill * (w + 2) for w in widths) + right


def print_table(runs: Iterable[TrajectorySummary]) -> int:
    """Print ``runs`` as a table, each line as its row is read; how many rows were printed."""
    rows = iter(runs)
    head = list(itertools.islice(rows, MEASURED))
    measured = [_cells(s) for s in head]
    widths = _widths(measured)
    spare = sum(widths[:5]) + 3 * len(COLUMNS) + 1 - 66  # what `display_path` leaves other columns
    task = _task_width(head, widths)
    columns, right = (*COLUMNS, "task") if task else COLUMNS, (*_RIGHT, False) if task else _RIGHT
    if task:
        widths.append(task)
    colour = console.is_terminal and console.color_system is not None and not console.no_color
    out = sys.stdout
    out.write(_line("┏", "┳", "┓\n", widths, "━"))
    out.write(
        "┃"
        + "┃".join(f" {_fit(h, w, False)} " for h, w in zip(columns, widths, strict=True))
        + "┃\n"
    )
    out.write(_line("┡", "╇", "┩\n", widths, "━"))
    count = 0
    for summary, cells in _with_cells(head, measured, rows):
        source = printable(display_path(summary.source, spare=spare))
        shown = (*cells[:5], source, task_cell(summary)) if task else (*cells[:5], source)
        line = (
            "│"
            + "│".join(f" {_fit(c, w, r)} " for c, w, r in zip(shown, widths, right, strict=True))
            + "│"
        )
        if colour and is_failure(summary.outcome):
            line = _RED + line + _RESET
        out.write(line + "\n")
        count += 1
    out.write(_line("└", "┴", "┘\n", widths, "─"))
    return count


def _with_cells(
    head: list[TrajectorySummary],
    measured: list[tuple[str, ...]],
    rest: Iterator[TrajectorySummary],
) -> Iterator[tuple[TrajectorySummary, tuple[str, ...]]]:
    yield from zip(head, measured, strict=True)
    for summary in rest:
        yield summary, _cells(summary)


def json_row(summary: TrajectorySummary) -> dict[str, object]:
    """A run as ``list --json`` prints it (``replayability``, ``outcome_source``, ``task``: None
    in a store older than them)."""
    return {
        "id": summary.id,
        "steps": summary.n_steps,
        "outcome": summary.outcome,
        "outcome_source": summary.outcome_source,
        "final_hash": summary.final_hash,
        "source": summary.source,
        "format": summary.format,
        "replayability": summary.replayability,
        "task": summary.task,
    }


def print_json_rows(runs: Iterable[TrajectorySummary]) -> int:
    """``runs`` as one JSON array, written `CHUNK` rows at a time and byte for byte what indenting
    the whole list would print (two spaces, sorted keys); how many rows were written."""
    out = sys.stdout
    options = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
    rows = iter(runs)
    count = 0
    while chunk := [json_row(s) for s in itertools.islice(rows, CHUNK)]:
        text = orjson.dumps(chunk, option=options).decode()  # "[\n  {…},\n  {…}\n]"
        out.write(("[\n" if count == 0 else ",\n") + text[2:-2])
        count += len(chunk)
    out.write("\n]\n" if count else "[]\n")
    return count


class Seen:
    """The runs of a page as they are read, remembering the last one (the next page's cursor)."""

    def __init__(self, runs: Iterable[TrajectorySummary]) -> None:
        self._runs = iter(runs)
        self.last: str | None = None

    def __iter__(self) -> Iterator[TrajectorySummary]:
        for summary in self._runs:
            self.last = summary.id
            yield summary


def page_footer(
    shown: int, total: int, offset: int, after: str | None, last: str | None, sort: str | None
) -> str:
    """What a page says under it: which runs of how many, and how to ask for the next ones."""
    order = f"by {sort}" if sort else "newest first"
    if after is None and offset == 0 and shown == total:
        return f"{plural(total, 'run')} ({order})"
    if after is not None:
        where = f"{shown:,} after {printable(after)}, {order}"
    else:
        where = f"{offset + 1:,}–{offset + shown:,}, {order}" if shown else f"none from {offset:,}"
    footer = f"showing {shown:,} of {total:,} runs ({where})"
    more = after is None and offset + shown < total
    if more and shown:
        footer += f"; --offset {offset + shown} for the next"
    elif after is not None and shown and last is not None:
        footer += f"; --after {printable(last)} for the next"
    return footer
