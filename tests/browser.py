"""A real browser for the tests of what a person looks at: Debian's Chromium, driven by Playwright.

Playwright's own browser download cannot be fetched on these machines, so it drives the system's
``chromium`` (`CHROMIUM`, or ``$AGENT_REPLAY_CHROMIUM``) through ``executable_path``. Where there is
none the browser tests skip with the reason; under CI a missing browser is a failure (`.ci/run`
installs it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = (
    os.environ.get("AGENT_REPLAY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
#: What the machine's closed network needs: no background connections, no first-run work.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module (pages are cheap, browsers less so). Not per
    session: while Playwright's sync API is open it keeps an event loop running on the main
    thread, and any later test's ``asyncio.run`` would fail on it."""
    if not os.path.exists(CHROMIUM):
        reason = f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def browser_page(browser: Any) -> Iterator[Any]:
    """A fresh page that fails the test on any script error or dialog (an ``alert`` is XSS)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))

    def dialog(d: Any) -> None:
        problems.append(f"dialog opened: {d.message!r}")
        d.dismiss()

    page.on("dialog", dialog)
    page.problems = problems  # the test reads them (and may expect some)
    try:
        yield page
    finally:
        context.close()
    assert not problems, problems
