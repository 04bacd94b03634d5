"""No request holds the viewer (issue 40, items 3 and 7): ``agent-replay ui`` started for real on
loopback, sent what any web page the user opens could send it.

``(\\w+)+!`` searched by a backtracking engine in a run id of 36 word characters takes hours
holding the interpreter's lock: the viewer then answered no other page and ignored SIGTERM. The
server runs in a process of its own here, so a test of a viewer that freezes fails on its timeout
rather than freezing the test run.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from benchmarks.many_runs import build_store
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.store import Store
from otel_replay.viewer._server import answer
from tests.conftest import ROOT

#: Searched by `re`, this pattern never ends on a long word: every split of it is tried.
CATASTROPHIC = r"id~(\w+)+!"
LONG_WORD = "x" * 36
#: What a page that does not freeze is answered within, however busy the machine (a frozen viewer
#: takes hours).
PROMPT = 120.0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = build_store(tmp_path_factory.mktemp("one-request") / "store.db", 300, seed=40)
    step = Step(StepKind.TOOL, LONG_WORD, {"arguments": {}}, output=LONG_WORD)
    with Store.open(path) as db:
        db.put_all([Trajectory.build(LONG_WORD, [step], outcome=0.0)])
    return path


class Ui:
    """``agent-replay ui --port 0`` in a process of its own, and its port."""

    def __init__(self, store: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "otel_replay", "ui", "--port", "0", "--store", str(store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.fullmatch(
            r"agent-replay ui: http://127\.0\.0\.1:(\d+)/ \(Ctrl-C stops it\)\n", line
        )
        assert found, line
        self.port = int(found.group(1))

    def get(self, target: str, timeout: float = PROMPT) -> tuple[int, str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("GET", target)
            response = connection.getresponse()
            return response.status, response.read().decode()
        finally:
            connection.close()

    def send_only(self, target: str) -> None:
        """Send ``GET target`` from a thread that does not wait long for the answer."""

        def send() -> None:
            with contextlib.suppress(OSError):  # the server stopped, or froze: the test reads that
                self.get(target, timeout=60)

        threading.Thread(target=send, daemon=True).start()

    def close(self) -> tuple[str, str]:
        try:
            if self.process.poll() is None:
                self.process.kill()
            return self.process.communicate(timeout=20)
        finally:
            for pipe in (self.process.stdout, self.process.stderr):
                if pipe is not None:
                    pipe.close()


@pytest.fixture
def ui(store: Path) -> Iterator[Ui]:
    server = Ui(store)
    try:
        yield server
    finally:
        server.close()


def _where(where: str) -> str:
    return "/?" + urlencode({"where": where})


def test_a_catastrophic_pattern_leaves_the_viewer_answering(ui: Ui) -> None:
    ui.send_only(_where(CATASTROPHIC))
    time.sleep(0.5)  # the pattern's request is being answered
    started = time.monotonic()
    status, html = ui.get("/")
    assert status == 200 and "showing 1–50 of 301 runs" in html
    assert time.monotonic() - started < PROMPT
    status, html = ui.get(_where(CATASTROPHIC))  # and the pattern's own page comes back, empty
    assert status == 200 and "showing none of 0 runs that match" in html


def test_sigterm_during_a_catastrophic_pattern_stops_the_viewer(ui: Ui) -> None:
    ui.send_only(_where(CATASTROPHIC))
    time.sleep(0.5)
    sent = time.monotonic()
    ui.process.send_signal(signal.SIGTERM)
    try:
        ui.process.wait(timeout=PROMPT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the viewer did not stop within {PROMPT} s of SIGTERM")
    out, err = ui.close()
    assert ui.process.returncode == 0 and time.monotonic() - sent < PROMPT
    assert out.strip() == "stopped" and "Traceback" not in err


@pytest.mark.parametrize(
    ("target", "said"),
    [
        (_where(r"id~(a)\1"), "backreferences"),
        (_where("task~(?=find)"), "lookaheads"),
        (_where(r"id~(?<!x)y"), "lookbehinds"),
        ("/?" + urlencode({"q": "w" * 60_000}), "the filter is too long"),  # a request line holds 64 KiB
        (_where(" ".join(["id^a"] * 1999)), "the filter has too many conditions"),
        (_where("x " * 5000), "the filter has too many conditions"),
        ("/?offset=99999999999999999999999999", "a page starts at run 0 to"),
        ("/?offset=" + "9" * 5000, "a page starts at run 0 to"),
    ],
    ids=["backreference", "lookahead", "lookbehind", "long-search", "conditions", "words",
         "offset", "offset-5000-digits"],
)  # fmt: skip
def test_a_filter_the_viewer_will_not_run_is_400_saying_why(ui: Ui, target: str, said: str) -> None:
    status, html = ui.get(target)
    assert status == 400, html[-400:]
    assert said in html and 'id="query-error"' in html  # the form, to mend the filter
    assert ui.get("/")[0] == 200


def test_a_page_whose_queries_take_too_long_is_503_with_the_form(store: Path) -> None:
    """SQLite interrupts a page's queries at the viewer's time limit (here none at all)."""
    slow = answer(store, "/?" + urlencode({"q": "find", "where": "source~batch"}), seconds=0)
    assert slow.status == 503 and "did not answer within 0 s" in slow.html
    assert 'value="source~batch"' in slow.html
    assert answer(store, "/?" + urlencode({"q": "find"})).status == 200
