"""Regular expressions a user or a trace supplies, compiled by RE2: time linear in the text searched.

Python's `re` backtracks: ``(\\w+)+!`` searched in forty word characters runs for hours, holding
the interpreter's lock, so one filter in a viewer's address froze every page and the process's
signal handlers with it. RE2 (Google's engine, the ``google-re2`` package) never backtracks; what
it cannot promise that for (backreferences such as ``\\1``, lookarounds such as ``(?=...)``) it does
not compile, and `compiled` says so in one line. Its syntax is Python's otherwise, with two
differences a pattern may meet: ``\\w``, ``\\d`` and ``\\b`` are ASCII, and ``\\Z`` is written ``\\z``.

Every pattern from outside the code goes through `compiled`: ``--where``'s ``~`` (the store's filter
and the fleet's selection), the viewer's filter, ``--success-if`` and ``--fail-if``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

__all__ = ["SYNTAX", "PatternError", "compiled", "searches"]

#: What the documentation and the errors call the syntax patterns are written in.
SYNTAX = "RE2 syntax"
#: The longest pattern compiled: RE2's program grows with it, and no filter needs more.
MAX_PATTERN = 10_000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would also print each error on stderr: the caller says it once
_OPTIONS.max_mem = 64 << 20  # RE2's budget for one pattern's program and its matching caches

_UNSUPPORTED = (
    ("invalid perl operator: (?=", "lookaheads ((?=...), (?!...)) are not supported"),
    ("invalid perl operator: (?!", "lookaheads ((?=...), (?!...)) are not supported"),
    ("invalid perl operator: (?<", "lookbehinds ((?<=...), (?<!...)) are not supported"),
)


class PatternError(ValueError):
    """A pattern RE2 does not compile; the message says why in a few words (the caller names the
    setting or field it came from)."""


@lru_cache(maxsize=128)
def compiled(pattern: str) -> Any:
    """``pattern`` compiled by RE2 (a ``re2._Regexp``: ``search``, ``finditer``, ``sub`` as `re`'s
    pattern has them). A `PatternError` says why one does not compile."""
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"longer than {MAX_PATTERN:,} characters")
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raise PatternError(_reason(exc)) from None
    except UnicodeEncodeError:
        raise PatternError("it holds a lone surrogate, which is not text") from None


def searches(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (compiled once and cached) is found anywhere in ``text`` (a lone
    surrogate in it, which RE2's UTF-8 cannot hold, read as ``?``)."""
    regex = compiled(pattern)
    try:
        return regex.search(text) is not None
    except UnicodeEncodeError:
        return regex.search(text.encode("utf-8", "replace").decode("utf-8")) is not None


def _reason(error: Exception) -> str:
    said = error.args[0] if error.args else str(error)
    reason = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    for start, plain in _UNSUPPORTED:
        if reason.startswith(start):
            return f"{plain} in {SYNTAX}, which runs in time linear in the text"
    if reason.startswith("invalid escape sequence: \\Z"):
        return f"\\Z is written \\z in {SYNTAX}"
    if reason.startswith("invalid escape sequence: \\") and reason[-1:].isdigit():
        return f"backreferences (\\1...) are not supported in {SYNTAX}, which runs in time linear in the text"
    return f"{reason} ({SYNTAX})"
