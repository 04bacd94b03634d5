"""Fuzzing the pages with what traces hold (hypothesis): any value in any field of a run or a report
renders, and never as markup. The page's own tags are the only tags, no attribute is an event
handler, and the JSON block reads back as the run's data."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.report import html_report
from otel_replay.report._timeline import run_data
from otel_replay.report._view import chat

#: Every tag the report's templates write.
OURS = {
    "html", "head", "meta", "title", "style", "body", "header", "main", "span", "h1", "h2", "h3",
    "p", "b", "div", "ol", "ul", "li", "details", "summary", "button", "table", "thead", "tbody",
    "tr", "th", "td", "dl", "dt", "dd", "pre", "a", "script",
}  # fmt: skip

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
markup = st.sampled_from(
    ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "</script>", "&lt;", "\u2028"]
)
strings = st.one_of(text, markup, st.builds(lambda a, b: a + b, text, markup))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | strings,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(strings, inner, max_size=4),
    max_leaves=20,
)  # fmt: skip
messages = st.lists(
    st.fixed_dictionaries(
        {"role": strings, "content": json_values},
        optional={"tool_calls": st.lists(st.fixed_dictionaries({"name": strings, "arguments": json_values}), max_size=2)},
    ),
    max_size=4,
)  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.handlers: list[str] = []
        self.scripts: list[str] = []
        self._in_data_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        self._in_data_script = tag == "script" and ("type", "application/json") in attrs

    def handle_data(self, data: str) -> None:
        if self._in_data_script:
            self.scripts.append(data)
            self._in_data_script = False


@st.composite
def runs(draw: st.DrawFn) -> Trajectory:
    steps = []
    for index in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from([StepKind.LLM, StepKind.TOOL, StepKind.OTHER]))
        inputs: dict[str, Any] = (
            {"messages": draw(messages), "model": draw(strings)}
            if kind is StepKind.LLM
            else {"arguments": draw(json_values)}
        )
        failed = draw(st.booleans())
        steps.append(
            Step(
                index=index,
                kind=kind,
                name=draw(strings),
                inputs=inputs,
                output=draw(json_values),
                status=StepStatus.ERROR if failed else StepStatus.OK,
                error=draw(strings) if failed else None,
                resamplable=draw(st.booleans()),
            )
        )
    return Trajectory.build(
        id=draw(strings) or "run", steps=steps, outcome=0.0, metadata={"source": draw(strings)}
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run=runs(), words=strings, value=json_values)
def test_any_run_and_report_render_as_text(run: Trajectory, words: str, value: Any) -> None:
    report = {
        "version": 3,
        "trajectory_id": run.id,
        "verdict": "culprit",
        "point_of_commitment": 0,
        "explanation": words,
        "steps": [{"index": s.index, "kind": s.kind.value, "name": s.name, "attribution": 0.1, "necessity": value} for s in run.steps],
        "root_cause": {"step": value, "sought": True, "saves": value, "bracket": value, "why": words, "calls": 3, "cleared_before": value},
        "repair": {"step_index": 0, "output": value, "source": words},
        "config": {"rerun": words, "resamplers": [words]},
    }  # fmt: skip
    page = html_report(report, run)
    parser = _Tags()
    parser.feed(page)
    assert parser.tags <= OURS, parser.tags - OURS
    assert parser.handlers == []
    assert page.count("<script") == 2  # the data block and the page's own script
    (block,) = parser.scripts
    assert json.loads(block) == json.loads(json.dumps(run_data(run)))


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_reading_any_value_as_messages_never_raises(value: Any) -> None:
    shown = chat(value)
    assert shown is None or all(
        isinstance(m["role"], str) and isinstance(m["text"], str) for m in shown
    )
