"""Which runs a view asks for: a filter, an order and a page, read into parameterized SQL.

The filter is the one language every ``--where`` reads (``list``, ``lint``, ``attribute``,
``score``, ``sweep``, ``blame``: the fleet selects its runs through `Store.runs`) and the
viewer's run list, answered by SQLite so a page of 100,000 runs reads only its page. The
language's page is docs/many-runs.md ("The filter language"), with the examples a test runs
through each command. Conditions are joined by ``and`` (or by spaces alone), each one of:

* ``FIELD OP VALUE``, FIELD one of `FIELDS`, OP one of ``< <= > >= = == != ~`` (``~``: the value
  is a regular expression searched in the field) and VALUE a number or a string, quoted or bare.
  A run whose field is unknown (no outcome) matches no comparison on it;
* ``FIELD^PREFIX``: the field starts with PREFIX (a run id prefix, as ``show`` takes one);
* ``failed``, ``passed``, ``unknown``: the run's outcome (below `FAIL_THRESHOLD`, at or above
  it, none recorded);
* any other word: the run's id, source or task (its first user message) contains it, in any case
  (the viewer's search box, which callers pass as ``search`` so its words are never read as
  conditions).

Every value reaches SQLite as a bound parameter, never as SQL text; what the language does not
read is a `QueryError` naming the part. A ``~`` pattern is RE2's (`otel_replay._regex`: time
linear in the text, whatever the pattern), and a filter is at most `MAX_FILTER` characters and
`MAX_CONDITIONS` conditions (a page's offset and size at most `MAX_ROWS`): past those, SQLite
would refuse the query as if the store were damaged. An order is a key and a direction
(``steps:desc``); ``newest`` and ``oldest`` name the start time's two directions. Every order ends
on the run id, so a page boundary is the same however often it is asked, and a cursor (``after``:
a run id) is read in the same order. Runs with no start time (or no outcome) sort as the smallest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from otel_replay._regex import PatternError, compiled, searches
from otel_replay.errors import StoreError, preview, setting
from otel_replay.model import FAIL_THRESHOLD


class QueryError(StoreError, ValueError):
    """A filter or an order the store cannot read; the message names the part it could not."""


class QueryTimeout(StoreError):
    """A query interrupted at its time limit (`otel_replay.store.Store.time_limit`)."""


#: The columns a filter reads, by the names users write.
FIELDS = {
    "id": "id",
    "outcome": "outcome",
    "steps": "n_steps",
    "source": "source",
    "format": "format",
    "start": "start_time_unix_nano",
    "replayability": "replayability",
    "task": "task",
}
NUMBERS = frozenset({"outcome", "steps", "start"})
#: The orders a view offers: key -> (column, the direction a key alone means).
SORTS = {
    "newest": ("start_time_unix_nano", "desc"),
    "oldest": ("start_time_unix_nano", "asc"),
    "steps": ("n_steps", "desc"),
    "outcome": ("outcome", "asc"),
    "id": ("id", "asc"),
}
DEFAULT_SORT = "newest"
#: The longest filter (and the longest search) read, in characters.
MAX_FILTER = 10_000
#: The most conditions (search words included) one filter holds.
MAX_CONDITIONS = 100
#: The largest offset or page size: SQLite's largest integer.
MAX_ROWS = 2**63 - 1

_VALUE = r"""'[^']*'|"[^"]*"|[^\s'"]+"""
_OPS = r"<=|>=|!=|==|<|>|=|~|\^"
_CONDITION = re.compile(rf"(?P<field>[A-Za-z_]+)\s*(?P<op>{_OPS})\s*(?P<value>{_VALUE})")
#: A field and an operator with no value after them (``outcome <``, ``task ~ 'unclosed``).
_NO_VALUE = re.compile(rf"[A-Za-z_]+\s*(?:{_OPS})")
_WORD = re.compile(_VALUE)
_SQL_OPS = {"==": "=", "~": "REGEXP"}
_WORDS = {
    "failed": f"outcome < {FAIL_THRESHOLD!r}",
    "passed": f"outcome >= {FAIL_THRESHOLD!r}",
    "unknown": "outcome IS NULL",
}
_SEARCH = "id LIKE ? ESCAPE '\\' OR source LIKE ? ESCAPE '\\' OR task LIKE ? ESCAPE '\\'"
_HOW = (
    f"; a condition is FIELD OP VALUE, FIELD one of {', '.join(FIELDS)}, OP one of "
    "< <= > >= = != ~ ^ (e.g. 'outcome < 0.5 and steps > 5'), or failed, passed, unknown"
)


def regexp(pattern: str, value: object) -> bool | None:
    """SQLite's ``value REGEXP pattern``: RE2's search in the value's text, as the fleet's ``~``."""
    return None if value is None else searches(pattern, str(value))


@dataclass(frozen=True, slots=True)
class Filter:
    """A filter read: the SQL condition (``1`` for none) and its bound parameters."""

    sql: str
    params: tuple[object, ...]
    text: str = ""


@dataclass(frozen=True, slots=True)
class Order:
    """An order read: its column and direction (the run id breaks ties the same way)."""

    column: str
    descending: bool
    text: str = DEFAULT_SORT

    @property
    def sql(self) -> str:
        way = "DESC" if self.descending else "ASC"
        if self.column == "id":
            return f"id {way}"
        return f"{self.column} {way}, id {way}"


def parse_filter(text: str | None, search: str | None = None) -> Filter:
    """``text`` in the filter language, and the words of a search box, as an SQL condition; a
    `QueryError` names a part it cannot read."""
    conditions: list[str] = []
    params: list[object] = []
    position, text = 0, text or ""
    for name, given in (("where", text), ("search", search or "")):
        if len(given) > MAX_FILTER:
            raise QueryError(
                f"{setting(name)}: the filter is too long ({len(given):,} characters; at most "
                f"{MAX_FILTER:,})"
            )
        if not _is_text(given):
            raise QueryError(f"{setting(name, given, quoted=True)}: holds bytes that are not UTF-8")
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        found = _CONDITION.match(text, position)
        if found is None and _NO_VALUE.match(text, position):
            raise QueryError(f"{_where(text)}: cannot read {_part(text[position:])}{_HOW}")
        found = found or _WORD.match(text, position)
        if found is None:  # an unclosed quote
            raise QueryError(f"{_where(text)}: cannot read {_part(text[position:])}{_HOW}")
        position = found.end()
        if found.group().lower() == "and":
            continue
        if len(conditions) == MAX_CONDITIONS:
            raise QueryError(
                f"{setting('where')}: the filter has too many conditions (at most {MAX_CONDITIONS})"
            )
        sql, values = _condition(found, text)
        conditions.append(sql)
        params.extend(values)
    if search and search.strip():
        like = f"%{_like_escaped(search.strip())}%"
        conditions.append(_SEARCH)
        params.extend((like, like, like))
    return Filter(" AND ".join(f"({c})" for c in conditions) or "1", tuple(params), text)


def _where(text: str) -> str:
    return setting("where", text, quoted=True)


def _part(text: str) -> str:
    """The part of a filter a message names: quoted, and cut short when it is long (the whole
    filter is in the message already)."""
    return preview(text, 120)


def _condition(found: re.Match[str], text: str) -> tuple[str, tuple[object, ...]]:
    part = found.group()
    if "field" not in found.re.groupindex:  # a word
        if part.lower() in _WORDS:
            return _WORDS[part.lower()], ()
        if any(c in part for c in "<>=!~^"):
            raise QueryError(f"{_where(text)}: cannot read {_part(part)}{_HOW}")
        like = f"%{_like_escaped(part.strip(chr(39) + chr(34)))}%"
        return _SEARCH, (like, like, like)
    field, op, raw = found["field"].lower(), found["op"], found["value"].strip("'\"")
    if field not in FIELDS:
        raise QueryError(f"{_where(text)}: no field {_part(field)}; fields: {', '.join(FIELDS)}")
    column = FIELDS[field]
    if op == "^":
        if field in NUMBERS:
            raise QueryError(f"{_where(text)}: {_part(part)}: ^ (starts with) is for text fields")
        return f"{column} GLOB ?", (_glob_escaped(raw) + "*",)
    if op == "~":
        try:
            compiled(raw)
        except PatternError as exc:
            raise QueryError(
                f"{_where(text)}: {_part(raw)} is not a regular expression: {exc}"
            ) from None
        return f"{column} REGEXP ?", (raw,)
    value: object = raw
    if field in NUMBERS:
        try:
            value = float(raw)
        except ValueError:
            raise QueryError(f"{_where(text)}: {field} is a number, got {_part(raw)}") from None
        if value != value:  # NaN: every comparison false, silently
            raise QueryError(f"{_where(text)}: {field} is a number, got {_part(raw)}")
    return f"{column} {_SQL_OPS.get(op, op)} ?", (value,)


def check_page(limit: int | None, offset: int) -> None:
    """A page's size (None: every run) and offset as SQLite can take them; a `QueryError` names a
    bad one."""
    if limit is not None and not 0 <= limit <= MAX_ROWS:
        raise QueryError(f"{setting('limit', limit)}: a page holds 0 to {MAX_ROWS:,} runs")
    if not 0 <= offset <= MAX_ROWS:
        raise QueryError(f"{setting('offset', offset)}: a page starts at run 0 to {MAX_ROWS:,}")


def parse_sort(text: str | None) -> Order:
    """``KEY`` or ``KEY:asc`` / ``KEY:desc`` as an order; a `QueryError` names a bad one."""
    text = (text or DEFAULT_SORT).strip()
    key, _, way = text.lower().partition(":")
    if key not in SORTS:
        raise QueryError(
            f"{setting('sort', text, quoted=True)}: there is no order {key!r} "
            f"(orders: {', '.join(SORTS)}, each with :asc or :desc)"
        )
    column, default = SORTS[key]
    if way and way not in ("asc", "desc"):
        raise QueryError(
            f"{setting('sort', text, quoted=True)}: the direction is asc or desc, not {way!r}"
        )
    return Order(column, (way or default) == "desc", text)


def _is_text(value: str) -> bool:
    """Whether ``value`` is Unicode text SQLite can hold (no lone surrogate: the undecodable bytes
    of a command line's argument are kept as such)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _like_escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _glob_escaped(value: str) -> str:
    """``value`` matched as itself by GLOB (which, unlike LIKE, is case-sensitive as ids are and
    can use the id's index for a prefix)."""
    return re.sub(r"([*?\[])", r"[\1]", value)
