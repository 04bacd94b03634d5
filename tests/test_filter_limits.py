"""Filters and patterns from users and traces, bounded (issue 40, items 3 and 7).

A ``~`` pattern of ``--where``, and ``--success-if`` / ``--fail-if`` on a model's answer, are run by
RE2 (`otel_replay._regex`), in time linear in the text: ``(\\w+)+!`` on a word of 36 characters,
hours for a backtracking engine, answers at once. What RE2 cannot run so (backreferences,
lookarounds) is one line naming the pattern. A filter too long or of too many conditions for SQLite,
and an offset or page size beyond its integers, are one line saying so, never "the store may be
damaged". The commands that could hang run in processes of their own, so a hang fails the test on
its timeout.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from benchmarks.many_runs import build_store
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.store import Store
from otel_replay.store._query import MAX_FILTER, QueryError
from otel_replay.viewer._server import answer
from tests.cli_helpers import invoke, one_line_error
from tests.conftest import ROOT

CATASTROPHIC = r"(\w+)+!"
LONG_WORD = "x" * 36
#: A command that hangs is cut here (a backtracking engine takes hours); one that does not ends
#: long before, however busy the machine.
PROMPT = 300.0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 seeded runs, and one whose id and answer are a long word."""
    path = build_store(tmp_path_factory.mktemp("limits") / "store.db", 200, seed=40)
    reply = {"role": "assistant", "content": LONG_WORD}
    step = Step(StepKind.LLM, "m", {"model": "m", "messages": []}, output=reply)
    with Store.open(path) as db:
        db.put_all([Trajectory.build(LONG_WORD, [step], outcome=0.0)])
    return path


def _run(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``agent-replay ARGS --store STORE`` in a process of its own; a hang fails at `PROMPT`."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "otel_replay", *args, "--store", str(store)],
            capture_output=True, text=True, cwd=ROOT, timeout=PROMPT,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"agent-replay {' '.join(args)} did not end within {PROMPT} s")
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_list_where_a_catastrophic_pattern_returns_promptly(store: Path) -> None:
    done = _run(store, "list", "--where", f"id~{CATASTROPHIC}", "--json")
    assert done.returncode == 0 and done.stdout == "[]\n", done.stderr
    found = _run(store, "list", "--where", r"id~^(x+)+$", "--json")
    assert found.returncode == 0 and LONG_WORD in found.stdout


def test_score_where_a_catastrophic_pattern_returns_promptly(store: Path) -> None:
    """The fleet's selection (`otel_replay.fleet._select`) reads ``~`` with the same engine."""
    done = _run(store, "score", "--where", f"id~{CATASTROPHIC}", "--success-if", "x")
    assert done.returncode == 1 and "no stored run matches the selection" in done.stderr


def test_success_if_a_catastrophic_pattern_on_a_long_answer_returns_promptly(
    tmp_path: Path,
) -> None:
    """The verifier searches a model's answer, which a model (or a trace) chose."""
    store = tmp_path / "store.db"
    reply = {"role": "assistant", "content": LONG_WORD}
    step = Step(StepKind.LLM, "m", {"model": "m", "messages": []}, output=reply)
    with Store.open(store) as db:
        db.put_all([Trajectory.build("long-answer", [step], outcome=None)])
    done = _run(store, "score", "long-answer", "--success-if", CATASTROPHIC)
    assert done.returncode == 0, done.stderr
    with Store.open(store, read_only=True) as db:
        assert db.get("long-answer").outcome == 0.0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["list", "--where", r"id~(a)\1"], r"'(a)\\1' is not a regular expression: backreferences"),
        (["list", "--where", "task~(?=find)x"], "'(?=find)x' is not a regular expression: lookaheads"),
        (["list", "--where", "task~(?<=a)b"], "is not a regular expression: lookbehinds"),
        (["list", "--where", "w" * 100_000], "the filter is too long (100,000 characters; at most 10,000)"),
        (["list", "--where", " and ".join(["steps > 1"] * 5000)], "the filter is too long"),
        (["list", "--where", " ".join(["id^a"] * 1999)], "the filter has too many conditions (at most 100)"),
        (["list", "--offset", "99999999999999999999999999"], "--offset 99999999999999999999999999: a page starts at run 0 to"),
        (["list", "--limit", "99999999999999999999999999"], "a page holds 0 to"),
        (["score", "--where", r"id~(a)\1", "--success-if", "x"], "backreferences"),
        (["score", "--where", " and ".join(["steps > 1"] * 101), "--success-if", "x"], "too many conditions"),
        (["score", "--where", "w" * 100_000, "--success-if", "x"], "the filter is too long"),
        (["score", "--all", "--success-if", r"(a)\1"], r"--success-if '(a)\\1' is not a regular expression: backreferences"),
        (["score", "--all", "--fail-if", "(?!x)"], "--fail-if '(?!x)' is not a regular expression: lookaheads"),
        (["list", "--where", "id~\udcff"], "holds bytes that are not UTF-8"),
        (["score", "--where", "id~\udcff", "--success-if", "x"], "holds bytes that are not UTF-8"),
    ],
    ids=["backreference", "lookahead", "lookbehind", "long-word", "long-filter", "conditions",
         "offset", "limit", "fleet-backreference", "fleet-conditions", "fleet-long",
         "success-if", "fail-if", "not-utf-8", "fleet-not-utf-8"],
)  # fmt: skip
def test_what_the_filter_will_not_run_is_one_line_saying_why(
    runner: CliRunner, store: Path, args: list[str], says: str
) -> None:
    before = store.read_bytes()
    assert says in one_line_error(invoke(runner, store, *args))
    assert store.read_bytes() == before


_PIECES = st.sampled_from(
    [
        "id", "outcome", "steps", "source", "format", "start", "replayability", "task", "colour",
        "<", "<=", ">", ">=", "=", "==", "!=", "~", "^", " ", " and ", "and", "failed", "passed",
        "unknown", "'", '"', "(", ")", "(?:", "(?=", "(?<!", "\\1", "\\", "\\w+", "+", "*", "?",
        "{1000}", "{2,}", "[", "]", "[^a]", "|", ".*", "%", "_", "0", "1e308", "-5", "nan", "é",
        "\x00", "\ud800", "x" * 300, ",", "9" * 30,
    ]
)  # fmt: skip
_FILTERS = st.builds(
    lambda pieces, times: "".join(pieces) * times,
    st.lists(_PIECES, max_size=40),
    st.sampled_from([1, 1, 1, 2, 50, 400]),
)


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=_FILTERS, search=_FILTERS, offset=st.sampled_from(["", "0", "5", "9" * 25, "-1", "x"]))
def test_no_filter_gives_anything_but_runs_or_one_reason(
    store: Path, where: str, search: str, offset: str
) -> None:
    """Random, long and nested filters: the store answers or raises `QueryError`, the viewer
    answers 200 or 400, never 500 or a traceback, each at once (in processor time, which other
    work on the machine does not stretch)."""
    started = time.process_time()
    with Store.open(store, read_only=True) as db:
        for text, words in ((where, None), ("", search), (where, search)):
            try:
                counted = db.count_runs(text, search=words)
                listed = list(db.runs(text, search=words, limit=5))
            except QueryError as exc:
                message = str(exc)
                assert "\n" not in message and len(message) < 2 * MAX_FILTER + 1000
            else:
                assert len(listed) == min(counted, 5)
    query = urlencode({"where": where, "q": search, "offset": offset}, errors="surrogatepass")
    if len(query) < 60_000:  # what a request line holds
        page = answer(store, "/?" + query)
        assert page.status in (200, 400), page.html[-500:]
    assert time.process_time() - started < 10
