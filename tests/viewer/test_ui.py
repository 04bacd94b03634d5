"""``agent-replay ui``: the real server on a free loopback port over a store of the bundled samples,
a stored attribution report and two hostile runs; pages read in Chromium, answers read over HTTP.

One server for the module (it only reads, so tests cannot disturb each other); the browser fixture
fails a test on any script error or dialog, so an ``alert`` from injected markup fails it.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from otel_replay.model import Step, StepKind, Trajectory, is_failure
from otel_replay.replay._diff import step_differences
from otel_replay.store import Store
from otel_replay.store._trajectories import TrajectorySummary
from otel_replay.viewer._server import CONTENT_SECURITY_POLICY, Viewer, answer
from tests.cli_helpers import invoke, ok, one_line_error
from tests.conftest import ROOT, SAMPLES

PAYLOADS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')
HOSTILE = " ".join(PAYLOADS)


@dataclass(frozen=True)
class Site:
    url: str
    port: int
    store: Path
    summaries: list[TrajectorySummary]
    digest: str  # the stored report's configuration digest
    files: list[str]  # in the store's folder before the viewer started
    fingerprint: dict[str, str]  # `_fingerprint` of the store before the viewer started

    def run_id(self, prefix: str) -> str:
        (found,) = [s.id for s in self.summaries if s.id.startswith(prefix)]
        return found


def _hostile_runs() -> list[Trajectory]:
    """A run whose model output, step names, tool arguments, service and source hold markup, and
    a twin that differs from it in the tool's result (the diff page shows both sides)."""

    def steps(result: Any) -> list[Step]:
        conversation = [
            {"role": "system", "content": HOSTILE},
            {"role": "user", "content": HOSTILE},
        ]
        call = {"id": "call-1", "name": HOSTILE, "arguments": {"q": HOSTILE}}
        return [
            Step(
                StepKind.LLM,
                HOSTILE,
                {"model": "m", "messages": conversation},
                output={"role": "assistant", "content": HOSTILE, "tool_calls": [call]},
            ),
            Step(
                StepKind.TOOL,
                HOSTILE,
                {"arguments": {"q": HOSTILE}, "tool_call_id": "call-1"},
                output=result,
            ),
        ]

    metadata = {"source": HOSTILE, "service": HOSTILE}
    return [
        Trajectory.build("hostile-run", steps(HOSTILE), outcome=0.0, metadata=metadata),
        Trajectory.build("hostile-twin", steps({"twin": HOSTILE}), outcome=None, metadata=metadata),
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("viewer")
    store = folder / "store.db"
    runner = CliRunner()
    ok(invoke(runner, store, "import", *map(str, sorted(SAMPLES.glob("*.jsonl")))))
    report = folder / "report.json"
    ok(
        invoke(
            runner, store, "attribute", "ef2843ff", "--resamplers",
            str(ROOT / "examples" / "incident" / "tools.py"), "--success-if", "v841",
            "--rollouts", "80", "--out", str(report),
        )
    )  # fmt: skip
    with Store.open(store) as db:  # `attribute` kept its report in the store
        (kept,) = db.reports(db.resolve("ef2843ff"))
        digest = kept["config_digest"]
        db.put_all(_hostile_runs())
        summaries = db.summaries()
    files, fingerprint = sorted(os.listdir(folder)), _fingerprint(store)
    with Viewer(store, "127.0.0.1", 0) as viewer:
        yield Site(viewer.url, viewer.port, store, summaries, digest, files, fingerprint)


def _get(
    site: Site, target: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request with ``target`` sent exactly as written (no client-side normalising of ``..``)."""
    connection = http.client.HTTPConnection("127.0.0.1", site.port, timeout=10)
    try:
        connection.request(
            method, target, body=b"x=1" if method == "POST" else None, headers=headers or {}
        )
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


# --- in the browser --------------------------------------------------------------------------------


def _column(page: Any, index: int) -> list[str]:
    """The text of one column of the run list's visible rows, top to bottom."""
    cells = page.locator(f"#runs tbody tr:not(.hidden) td:nth-child({index + 1})")
    return [text.strip() for text in cells.all_text_contents()]


def _open_step(page: Any, index: int) -> None:
    """Open a step's row and wait for the script to build its body (``toggle`` comes as a task)."""
    page.click(f"#step-{index} summary")
    page.locator(f"#step-{index} .body[data-done]").wait_for(state="attached")


def test_the_run_list_filters_by_outcome_and_text(site: Site, browser_page: Any) -> None:
    page = browser_page
    page.goto(f"{site.url}/")
    assert page.locator("#runs tbody tr").count() == len(site.summaries) == 10
    assert page.locator("#filter-count").inner_text() == "10"

    failed = sorted(s.id for s in site.summaries if is_failure(s.outcome))
    page.select_option("#filter-outcome", "failed")
    assert sorted(_column(page, 0)) == failed and len(failed) == 4
    assert page.locator("#filter-count").inner_text() == "4"
    page.select_option("#filter-outcome", "unknown")
    assert _column(page, 0) == ["hostile-twin"]

    page.select_option("#filter-outcome", "")
    page.fill("#filter-text", "EF2843")  # any case
    assert _column(page, 0) == [site.run_id("ef2843ff")]
    page.fill("#filter-text", "incident.steps")  # the source file
    assert sorted(_column(page, 0)) == ["incident-fail", "incident-pass", "incident-pass-retry"]
    page.select_option("#filter-outcome", "passed")
    assert sorted(_column(page, 0)) == ["incident-pass", "incident-pass-retry"]
    page.fill("#filter-text", "no run is called this")
    assert _column(page, 0) == [] and page.locator("#filter-count").inner_text() == "0"


def test_the_run_list_sorts_its_columns(site: Site, browser_page: Any) -> None:
    page = browser_page
    page.goto(f"{site.url}/")
    page.click("#runs th:text-is('steps')")
    steps = [int(n) for n in _column(page, 1)]
    assert steps == sorted(steps, reverse=True) and steps[0] == 7 and steps[-1] == 2
    page.click("#runs th:text-is('steps')")
    assert [int(n) for n in _column(page, 1)] == sorted(steps)

    page.click("#runs th:text-is('run')")
    first = _column(page, 0)
    page.click("#runs th:text-is('run')")
    assert _column(page, 0) == first[::-1] and sorted(first) != first  # descending, then back

    page.click("#runs th:text-is('reports')")
    assert _column(page, 5)[0] == "1" and _column(page, 0)[0] == site.run_id("ef2843ff")


def test_a_run_opens_its_steps_messages_and_span_tree(site: Site, browser_page: Any) -> None:
    page = browser_page
    failing = site.run_id("ef2843ff")
    page.goto(f"{site.url}/")
    page.click(f"#runs a:text-is('{failing}')")
    page.wait_for_url(f"**/run/{failing}")
    verdict = page.locator("section.replayability")
    assert verdict.get_attribute("data-verdict") == "replayable"
    assert verdict.inner_text().strip() == "replayability replayable"
    assert page.locator("#step-0 .msg").count() == 0  # built when opened
    _open_step(page, 0)
    messages = page.locator("#step-0 .msg")
    assert messages.count() == 3  # system, user; the assistant's answer
    assert messages.nth(0).locator(".role").text_content() == "system"
    assert "on-call incident investigator" in (messages.nth(0).text_content() or "")
    assert "query_metrics" in page.locator("#step-0 .call").inner_text()

    tree, timeline = page.locator("#span-tree"), page.locator("#timeline")
    assert tree.is_hidden() and timeline.is_visible()
    page.click("button[data-toggle]")
    assert tree.is_visible() and timeline.is_hidden()
    assert "investigate" in tree.inner_text() and tree.locator("a[href='#step-3']").count() == 1
    page.click("button[data-toggle]")
    assert timeline.is_visible()


def test_a_stored_report_shows_its_point_of_commitment(site: Site, browser_page: Any) -> None:
    page = browser_page
    failing = site.run_id("ef2843ff")
    page.goto(f"{site.url}/run/{failing}")
    assert page.locator("#reports tbody tr").count() == 1
    page.click(f"#reports a[href$='/report/{site.digest}']")
    page.wait_for_url(f"**/run/{failing}/report/{site.digest}")
    poc = page.locator("tr.poc")
    assert poc.count() == 1
    assert "#3" in poc.inner_text() and "list_deploys" in poc.inner_text()
    assert "Point of Commitment: step #3" in page.locator("#verdict").inner_text()
    assert page.locator("#step-3.poc").count() == 1
    page.click("header a:text-is('runs')")
    page.wait_for_url(f"{site.url}/")


def test_two_runs_compared_at_their_first_divergence(site: Site, browser_page: Any) -> None:
    page = browser_page
    failing, passing = site.run_id("ef2843ff"), site.run_id("5bb58492")
    page.goto(f"{site.url}/run/{failing}")
    page.fill("#compare-with", "5bb58492")  # a prefix, as on the command line
    page.click("form.compare button")
    page.wait_for_url(f"**/diff/{failing}/5bb58492")

    with Store.open(site.store, read_only=True) as db:
        left, right = db.get(failing).steps[3], db.get(passing).steps[3]
    divergence = page.locator("tr.divergence")
    assert divergence.count() == 1
    text = divergence.inner_text()
    assert text.startswith("#3") and "list_deploys" in text
    assert step_differences(left, right) == ("status", "output")
    assert "first divergence: status, output" in text
    assert page.locator("tr.same").count() == 3 and page.locator("tr.after").count() == 3
    detail = page.locator("#divergence-detail").inner_text()
    assert "503 Service Unavailable" in detail and '"service": "checkout"' in detail
    structure = page.locator("#structure li").all_inner_texts()
    assert structure == [
        f"only left ({failing[:16]}) has #5: tool search_logs",
        f"only right ({passing[:16]}) has #5: tool list_deploys",
    ]
    page.click("a:text-is('swap sides')")
    page.wait_for_url(f"**/diff/{passing}/{failing}")
    assert page.locator("tr.divergence").inner_text().startswith("#3")


def _nothing_injected(page: Any) -> None:
    assert page.locator("img").count() == 0
    assert page.locator("script:not([type])").count() == 1  # the page's own


def test_markup_from_a_trace_is_text_on_every_page(site: Site, browser_page: Any) -> None:
    page = browser_page
    page.goto(f"{site.url}/")
    row = page.locator("#runs tbody tr", has=page.locator("a:text-is('hostile-run')"))
    assert row.locator("td").nth(3).text_content() == HOSTILE
    _nothing_injected(page)

    page.goto(f"{site.url}/run/hostile-run")
    assert page.locator("#step-0 summary .name").text_content() == HOSTILE
    assert HOSTILE in page.locator("main > p.muted").first.text_content()  # the service
    _open_step(page, 0)
    texts = page.locator("#step-0 .msg .text").all_text_contents()
    assert texts == [HOSTILE, HOSTILE, HOSTILE]  # system, user, the model's answer
    call = page.locator("#step-0 .call").text_content()
    assert all(payload in call for payload in (PAYLOADS[0], "<img src=x onerror=alert(1)>"))
    _open_step(page, 1)
    assert page.locator("#step-1 pre").last.text_content() == HOSTILE  # the tool's output
    _nothing_injected(page)

    page.goto(f"{site.url}/diff/hostile-run/hostile-twin")
    assert HOSTILE in page.locator("tr.divergence").text_content()
    assert HOSTILE in page.locator("#divergence-detail").text_content()
    _nothing_injected(page)


def _ticket_runs() -> list[Trajectory]:
    """Runs told apart only by what they were asked: a booking agent's tickets."""

    def asked(run_id: str, task: str, outcome: float) -> Trajectory:
        messages = [
            {"role": "system", "content": "You book meetings."},
            {"role": "user", "content": task},
        ]
        steps = [
            Step(StepKind.LLM, "chat", {"model": "m", "messages": messages}, {"content": "ok"})
        ]
        return Trajectory.build(
            run_id, steps, outcome=outcome, metadata={"source": "tickets.jsonl"}
        )

    return [
        asked("run-1", "Book a room for ticket CAL-1002 on Monday", 1.0),
        asked("run-2", "Ticket CAL-1003: move the standup to 10:00 " + "and more " * 40, 0.0),
        asked("run-3", f"Ticket CAL-1004 {HOSTILE}", 1.0),
    ]


def test_a_run_is_found_by_its_task(tmp_path: Path, browser_page: Any) -> None:
    """The run list shows each run's first user message, cut and escaped, and the search box finds
    a run by it, on the page as it is typed and in the store when sent."""
    store = tmp_path / "tickets.db"
    with Store.open(store) as db:
        db.put_all(_ticket_runs())
    page = browser_page
    with Viewer(store, "127.0.0.1", 0) as viewer:
        page.goto(f"{viewer.url}/")
        tasks = {
            row.locator("td").nth(0).inner_text(): row.locator("td.task")
            for row in page.locator("#runs tbody tr").all()
        }
        assert tasks["run-1"].inner_text() == "Book a room for ticket CAL-1002 on Monday"
        shown = tasks["run-2"].inner_text()
        assert shown.startswith("Ticket CAL-1003: move the standup") and shown.endswith("…")
        assert len(shown) < 120 and tasks["run-2"].get_attribute("title").startswith(shown[:-1])
        assert tasks["run-3"].inner_text() == f"Ticket CAL-1004 {HOSTILE}"  # text, not markup
        _nothing_injected(page)

        page.fill("#filter-text", "cal-1003")  # any case, as it is typed
        assert _column(page, 0) == ["run-2"]
        page.click("#run-query button[type=submit]")  # asked of the store
        page.wait_for_url(lambda url: "q=cal-1003" in url)
        assert _column(page, 0) == ["run-2"]
        assert "showing 1–1 of 1 runs that match" in page.locator("#page-place").inner_text()

        page.goto(f"{viewer.url}/?where=task~CAL-100%5B24%5D")
        assert sorted(_column(page, 0)) == ["run-1", "run-3"]


# --- over HTTP -------------------------------------------------------------------------------------


#: Addresses refused before the store is opened: not run ids, digests or pages once decoded.
REFUSED = [
    "/run/..%2f..%2fetc",
    "/run/..%2F..%2Fetc%2Fpasswd",
    "/diff/a/../../x",
    "/run/..",
    "/run/%2e%2e",
    "/run/.%2e",
    "/run/%252e%252e",
    "/run/ef2843ff%2f..%2f..",
    "/run/ef2843ff%5c..",
    "/run/ef2843ff/",
    "/run/ef2843ff/report/not-a-digest",
    "/run/ef2843ff/report/" + "A" * 64,
    "/run/ef2843ff/report/../../../etc/passwd",
    "/diff/ef2843ff",
    "/diff/ef2843ff?with=..%2f",
    "/run/" + "a" * 201,
    "/run/%00",
    "/run/%ff",
    "//etc/passwd",
    "/favicon.ico",
    "/static/app.js",
]
#: Addresses of pages that could be, for runs and reports the store does not hold.
MISSING = ["/run/no-such-run", "/run/incident", "/run/ef2843ff/report/" + "0" * 64]


@pytest.mark.parametrize("target", REFUSED + MISSING)
def test_anything_but_a_page_is_404(site: Site, target: str) -> None:
    status, headers, body = _get(site, target)
    assert status == 404
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert b"<h1>Not found</h1>" in body and b"Traceback" not in body
    if target == "/run/incident":
        assert b"ambiguous" in body  # three ids start so: the page says which


@pytest.mark.parametrize("target", REFUSED)
def test_what_is_not_an_address_never_reaches_the_store(tmp_path: Path, target: str) -> None:
    """Over a store that is not there, a request that reached it would fail (500), not 404."""
    assert answer(tmp_path / "absent.db", target).status == 404
    assert answer(tmp_path / "absent.db", "/run/ef2843ff").status == 500


def test_what_404_repeats_of_the_address_is_text(site: Site) -> None:
    status, _, body = _get(site, "/run/%3Cscript%3Ealert(1)%3C%2Fscript%3E")
    assert status == 404
    assert b"<script>alert" not in body and b"&lt;script&gt;alert(1)&lt;/script&gt;" in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND"])
def test_only_get_and_head_are_served(site: Site, method: str) -> None:
    status, headers, body = _get(site, "/", method)
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"
    assert b"the viewer only reads" in body


def test_head_answers_the_headers_of_get(site: Site) -> None:
    status, headers, body = _get(site, "/", "HEAD")
    _, got, page = _get(site, "/")
    assert status == 200 and body == b""
    assert headers["Content-Length"] == got["Content-Length"] == str(len(page))


@pytest.mark.parametrize("target", ["/", "/run/ef2843ff", "/diff/ef2843ff/5bb58492", "/nothing"])
def test_every_answer_carries_the_pages_policy(site: Site, target: str) -> None:
    _, headers, body = _get(site, target)
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cache-Control"] == "no-store"
    meta = re.search(rb'http-equiv="Content-Security-Policy" content="([^"]+)"', body)
    assert meta is not None
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    # the header says what the page's <meta> says, and adds only what a <meta> cannot
    assert CONTENT_SECURITY_POLICY.startswith(meta.group(1).decode() + "; ")


def test_the_compare_form_is_sent_on_to_the_diff(site: Site) -> None:
    status, headers, _ = _get(site, "/diff/ef2843ff?with=5bb58492")
    assert status == 303 and headers["Location"] == "/diff/ef2843ff/5bb58492"


def test_a_request_for_another_host_name_is_refused(site: Site) -> None:
    """A web page cannot read the viewer through a DNS name it points at 127.0.0.1."""
    assert _get(site, "/", headers={"Host": f"attacker.example:{site.port}"})[0] == 400
    assert _get(site, "/", headers={"Host": f"localhost:{site.port}"})[0] == 200


def _fingerprint(store: Path) -> dict[str, str]:
    """sha256 of the store and of its write-ahead log when there is one."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in (store, Path(f"{store}-wal"))
        if path.exists()
    }


def test_the_store_is_left_byte_for_byte_as_it_was(site: Site) -> None:
    """As it was before the viewer started: after every page of it, here and in the tests before.

    A reader of a WAL store (``agent-replay list`` as well) may leave SQLite's ``-shm`` index and
    an empty ``-wal`` beside it; nothing may be written into either.
    """
    targets = ["/", f"/run/ef2843ff/report/{site.digest}", "/diff/hostile-run/hostile-twin"]
    targets += [f"/run/{s.id}" for s in site.summaries]
    targets += [f"/diff/{s.id}/ef2843ff" for s in site.summaries]
    for target in targets:
        assert _get(site, target)[0] == 200, target
    assert _get(site, "/", "POST")[0] == 405
    now = _fingerprint(site.store)
    wal = f"{site.store.name}-wal"
    if wal not in site.fingerprint and wal in now:
        assert now.pop(wal) == hashlib.sha256(b"").hexdigest()
    assert now == site.fingerprint
    made = set(os.listdir(site.store.parent)) - set(site.files)
    assert made <= {wal, f"{site.store.name}-shm"}


# --- the command -----------------------------------------------------------------------------------


def test_no_store_is_one_line(runner: CliRunner, tmp_path: Path) -> None:
    line = one_line_error(invoke(runner, tmp_path / "none.db", "ui", "--port", "0"))
    assert "there is no store at" in line
    assert not (tmp_path / "none.db").exists()


def test_a_port_in_use_is_one_line(runner: CliRunner, site: Site) -> None:
    line = one_line_error(invoke(runner, site.store, "ui", "--port", str(site.port)))
    assert f"cannot listen on 127.0.0.1:{site.port}" in line


#: ``python -m otel_replay`` as a terminal starts it, Ctrl-C raising KeyboardInterrupt: a shell's
#: background job (a test run started with ``&``) ignores SIGINT, and its children inherit that.
_AS_FROM_A_TERMINAL = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('otel_replay', run_name='__main__')"
)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_command_prints_its_address_and_stops_cleanly(site: Site, stop: signal.Signals) -> None:
    command = [
        sys.executable,
        "-c",
        _AS_FROM_A_TERMINAL,
        "ui",
        "--port",
        "0",
        "--store",
        str(site.store),
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.fullmatch(
            r"agent-replay ui: http://127\.0\.0\.1:(\d+)/ \(Ctrl-C stops it\)\n", line
        )
        assert found, line
        port = int(found.group(1))
        assert port not in (0, site.port)
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/run/ef2843ff")
        assert connection.getresponse().status == 200
        connection.close()
        process.send_signal(stop)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    assert process.returncode == 0, err
    assert out.strip() == "stopped" and "Traceback" not in err
