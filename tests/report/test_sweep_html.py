"""The fragility map's page: a heat map of steps × faults, every string from a trace shown as
text (the same escaping as the attribution report's page), in the markup and in a real browser."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay import AttributionConfig, Registry, read_path, sweep
from otel_replay.report._sweep import build_sweep_report, sweep_html
from otel_replay.resamplers._loading import load_resamplers
from tests.attribution.models import SCM

PAYLOADS = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "</td></tr><b>x</b>"]
#: Every tag the page's template writes.
OURS = {"html", "head", "meta", "title", "style", "body", "main", "h1", "p", "code", "table",
        "thead", "tbody", "tr", "th", "td", "br", "small", "script"}  # fmt: skip


def _report() -> dict[str, Any]:
    (run,) = read_path(SCM / "faults.jsonl")
    registry = Registry()
    load_resamplers([str(SCM / "faults.py")], registry)
    result = sweep(run, registry, ["error", "empty"], None, AttributionConfig(max_rollouts=8))
    return build_sweep_report(result, "agent-replay sweep scm-faults")


def _hostile(report: dict[str, Any], words: list[str]) -> dict[str, Any]:
    """The report with every string a trace or a user gave replaced by ``words``."""
    faults = [f"{words[i % len(words)]}{i}" for i in range(len(report["faults"]))]
    renamed = dict(zip(report["faults"], faults, strict=True))
    return {
        **report,
        "trajectory_id": words[0],
        "rerun": words[-1],
        "faults": faults,
        "steps": [{**s, "kind": words[0], "name": words[-1]} for s in report["steps"]],
        "cells": [
            {**c, "fault": renamed[c["fault"]], "injected": words[0], "verdict": words[-1]}
            for c in report["cells"]
        ],
        "flips": [{**f, "fault": renamed[f["fault"]]} for f in report["flips"]],
        "config": {**report["config"], "interval_method": words[0]},
    }


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]


def test_the_page_is_a_heat_map_of_the_cells() -> None:
    page = sweep_html(_report())
    assert page.count('<td class="cell') == 4  # two tool steps × two faults
    assert "rgb(255,85,85)" in page  # list_deploys returning empty: failing every time, red
    assert "list_deploys" in page and "audit_log" in page


def test_a_hostile_step_name_is_text() -> None:
    page = sweep_html(_hostile(_report(), PAYLOADS))
    for payload in PAYLOADS:
        assert payload not in page
    parser = _Tags()
    parser.feed(page)
    assert parser.tags <= OURS, parser.tags - OURS
    assert parser.handlers == []
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
strings = st.one_of(text, st.sampled_from(PAYLOADS), st.builds(lambda a, b: a + b, text, text))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(words=st.lists(strings, min_size=1, max_size=3))
def test_any_strings_render_as_text(words: list[str]) -> None:
    parser = _Tags()
    parser.feed(sweep_html(_hostile(REPORT, words)))
    assert parser.tags <= OURS, parser.tags - OURS
    assert parser.handlers == []


REPORT = _report()


def test_markup_in_a_step_name_is_text_in_the_browser(browser_page: Any, tmp_path: Path) -> None:
    page = tmp_path / "evil.html"
    page.write_text(sweep_html(_hostile(_report(), PAYLOADS)))
    browser_page.goto(page.as_uri())
    assert browser_page.evaluate("window.__pwned") is None
    assert browser_page.locator("img").count() == 0
    assert browser_page.locator("td.cell").count() == 4
    assert PAYLOADS[0] in browser_page.locator("body").inner_text()
