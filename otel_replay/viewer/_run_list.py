"""The viewer's run list: one page of runs, filtered, ordered and counted by the store.

The page's address holds the question (``/?q=TEXT&outcome=failed&where=steps>10&sort=steps&offset=50``):
``q`` is the search box (the run's id, source or task contains it), ``outcome`` one of the outcome words,
``where`` the filter language ``list --where`` reads (`otel_replay.store._query`), ``sort`` an order
it names. The store answers with `PAGE_SIZE` runs and how many match, so the page weighs the same at
any store size; links lead to the pages before and after. Within a page, the shared script still
filters and sorts the rows as they are typed and clicked.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode

from otel_replay.report import esc, page
from otel_replay.store import (
    MAX_ROWS,
    SORTS,
    Store,
    TrajectorySummary,
    check_page,
    parse_filter,
    parse_sort,
)
from otel_replay.viewer._pages import nav, outcome_class, outcome_text, run_link, utc

#: Runs on one page of the list.
PAGE_SIZE = 50
#: How much of a run's task (its first user message) its row shows; the cell's title holds what
#: the store keeps of it.
TASK_SHOWN = 100
_OUTCOMES = ("failed", "passed", "unknown")


@dataclass(frozen=True, slots=True)
class ListQuery:
    """What the run list's address asks for."""

    q: str = ""
    outcome: str = ""
    where: str = ""
    sort: str = ""
    offset: int = 0

    @classmethod
    def read(cls, query: str) -> ListQuery:
        """The question in a query string (a value that is not one is left out, never guessed; an
        offset of more digits than SQLite's integers have is kept as one past the largest, which
        the store refuses)."""
        values = {k: v[0].strip() for k, v in parse_qs(query).items() if v}
        offset = values.get("offset", "0")
        digits = offset.isascii() and offset.isdigit()
        return cls(
            q=values.get("q", ""),
            outcome=values.get("outcome", "") if values.get("outcome") in _OUTCOMES else "",
            where=values.get("where", ""),
            sort=values.get("sort", ""),
            offset=min(int(offset.lstrip("0")[:20] or "0"), MAX_ROWS + 1) if digits else 0,
        )

    @property
    def filter(self) -> str:
        """The filter in the store's language (the search box's words go apart, as ``search``)."""
        return " ".join(p for p in (self.where, self.outcome) if p)

    def url(self, offset: int) -> str:
        fields = {"q": self.q, "outcome": self.outcome, "where": self.where, "sort": self.sort}
        kept = {k: v for k, v in fields.items() if v}
        if offset:
            kept["offset"] = str(offset)
        return "/?" + urlencode(kept) if kept else "/"


def run_list_page(store: Store, query: str = "") -> str:
    """A page of the runs the address asks for, newest first unless it names an order. A filter or
    order the store cannot read raises its `QueryError` (the server answers 400 with the form)."""
    asked = ListQuery.read(query)
    parse_filter(asked.where, asked.q), parse_sort(asked.sort or None)  # a bad one fails first
    check_page(PAGE_SIZE, asked.offset)
    total = store.count_runs(asked.filter, search=asked.q)
    runs = list(
        store.runs(
            asked.filter, asked.sort or None, search=asked.q, limit=PAGE_SIZE, offset=asked.offset
        )
    )
    counts = store.report_counts([s.id for s in runs])
    place = f'in <span class="mono">{esc(store.path)}</span>'
    if not total and not (asked.filter or asked.q) and asked.offset == 0:
        return page(
            "agent-replay · runs",
            f'<h1>Runs</h1><p class="muted">0 runs {place}</p><p>The store holds no run yet: '
            "<code>agent-replay import TRACES</code> adds some.</p>",
            nav=nav(),
        )
    first, last = asked.offset + 1, asked.offset + len(runs)
    shown = f"{first:,}–{last:,}" if runs else "none"
    where = (
        f'<p class="muted" id="page-place">showing {shown} of {total:,} runs'
        f"{' that match' if asked.filter or asked.q else ''} {place}</p>"
    )
    rows = "".join(_run_row(s, counts.get(s.id, 0)) for s in runs)
    table = f'<table data-filter id="runs"><thead>{_HEAD}</thead><tbody>{rows}</tbody></table>'
    pages = _page_links(asked, total)
    body = f"<h1>Runs</h1>{_form(asked, len(runs))}{where}{pages}{table}{pages}{_STYLE}"
    return page("agent-replay · runs", body, nav=nav())


def query_form_page(query: str, message: str) -> str:
    """The run list's form again, with what the store could not read of it."""
    asked = ListQuery.read(query)
    body = f'<h1>Runs</h1>{_form(asked, 0)}<p class="error" id="query-error">{esc(message)}</p>'
    return page("agent-replay · runs", body, nav=nav())


_HEAD = (
    '<tr><th data-sort="text">run</th><th data-sort="number">steps</th>'
    '<th data-sort="number">outcome</th><th data-sort="text">source</th>'
    '<th data-sort="number">started</th><th data-sort="number">reports</th>'
    '<th data-sort="text">task</th></tr>'
)
_STYLE = (
    "<style>nav.pages{display:flex;gap:1em;margin:.4em 0}nav.pages .off{color:var(--muted)}"
    "p.error{color:var(--bad)}</style>"
)


def _form(asked: ListQuery, on_page: int) -> str:
    outcomes = "".join(
        f'<option value="{o}"{" selected" if asked.outcome == o else ""}>{o}</option>'
        for o in _OUTCOMES
    )
    sorts = "".join(
        f'<option value="{s}"{" selected" if (asked.sort or "newest") == s else ""}>{s}</option>'
        for s in SORTS
    )
    return (
        '<form class="filters" id="run-query" method="get" action="/">'
        f'<input id="filter-text" name="q" type="search" placeholder="id, source or task" '
        f'aria-label="filter by id, source or task" size="24" value="{esc(asked.q)}">'
        '<select id="filter-outcome" name="outcome" aria-label="filter by outcome">'
        f'<option value="">any outcome</option>{outcomes}</select>'
        f'<input id="filter-where" name="where" placeholder="steps&gt;10 format=otlp-json" '
        f'aria-label="filter (as list --where)" size="28" value="{esc(asked.where)}">'
        f'<select id="sort" name="sort" aria-label="order">{sorts}</select>'
        '<button type="submit">search the store</button>'
        f'<span><span id="filter-count">{on_page}</span> shown</span></form>'
    )


def _page_links(asked: ListQuery, total: int) -> str:
    """First, previous, next, last: links while there is a page there, greyed text otherwise."""
    last = max(0, (total - 1) // PAGE_SIZE * PAGE_SIZE)
    previous = max(0, asked.offset - PAGE_SIZE)
    after = asked.offset + PAGE_SIZE
    links = (
        ("first", 0, asked.offset > 0),
        ("previous", previous, asked.offset > 0),
        ("next", after, after < total),
        ("last", last, after < total),
    )
    parts = [
        f'<a rel="{name}" href="{esc(asked.url(offset))}">{name}</a>'
        if live
        else f'<span class="off">{name}</span>'
        for name, offset, live in links
    ]
    return f'<nav class="pages">{"".join(parts)}</nav>'


def _run_row(summary: TrajectorySummary, reports: int) -> str:
    source = summary.source or summary.format or "recorded"
    task = " ".join((summary.task or "").split())  # one line
    search = f"{summary.id} {source} {task}".lower()
    cut = task if len(task) <= TASK_SHOWN else task[: TASK_SHOWN - 1] + "…"
    outcome = "" if summary.outcome is None else f"{summary.outcome:g}"
    started = "" if summary.start_time_unix_nano is None else str(summary.start_time_unix_nano)
    given = (
        f' <span class="muted" title="{esc(summary.outcome_source)}">'
        f"{esc(summary.outcome_source.partition(':')[0])}</span>"
        if summary.outcome_source
        else ""
    )
    return (
        f'<tr data-search="{esc(search)}" data-outcome="{outcome_class(summary.outcome)}">'
        f"<td>{run_link(summary.id)}</td>"
        f'<td class="mono" data-value="{summary.n_steps}">{summary.n_steps}</td>'
        f'<td data-value="{esc(outcome)}">{esc(outcome_text(summary.outcome))}{given}</td>'
        f'<td class="muted">{esc(source)}</td>'
        f'<td class="mono" data-value="{started}">{utc(summary.start_time_unix_nano)}</td>'
        f'<td class="mono" data-value="{reports}">{reports or ""}</td>'
        f'<td class="task" title="{esc(task)}">{esc(cut)}</td></tr>'
    )
