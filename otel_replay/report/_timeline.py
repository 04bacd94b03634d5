"""A run as a page shows it: the step timeline, each step's messages and values, the span tree.

The timeline is one row per step (kind, name, status, duration on a shared time axis, badges); a
row opens to the step's inputs and output, which the page's script builds from a JSON block when it
is first opened (a run of 500 steps with 50 KB messages stays quick to load). Messages are kept once
each however many model calls resend them; a model call shows the messages new since the previous
one, the earlier ones a click away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_replay.hashing import canonical_json
from otel_replay.messages import conversation, without_conversation
from otel_replay.model import SpanNode, Step, StepKind, StepStatus, Trajectory
from otel_replay.report._page import data_script, esc
from otel_replay.report._view import chat


@dataclass(frozen=True, slots=True)
class Mark:
    """What a page says of one step beyond the record: a badge and a row class."""

    badge: str
    css: str


@dataclass(slots=True)
class _Messages:
    """Display messages, each kept once; steps refer to them by position."""

    table: list[dict[str, Any]] = field(default_factory=list)
    seen: dict[bytes, int] = field(default_factory=dict)

    def refs(self, messages: Sequence[dict[str, Any]]) -> list[int]:
        refs = []
        for message in messages:
            key = canonical_json(message)
            if key not in self.seen:
                self.seen[key] = len(self.table)
                self.table.append(message)
            refs.append(self.seen[key])
        return refs


def _request(step: Step) -> tuple[Any, dict[str, Any]]:
    """A step's messages as the page shows them, and its other inputs. A model call recorded from
    an API that holds no ``messages`` (the Responses API's ``input``) shows its conversation read
    as messages, and those inputs are not shown again."""
    raw = step.inputs.get("messages")
    rest = dict(step.inputs)
    if raw is not None or step.kind is not StepKind.LLM:
        return raw, rest
    said = conversation(step.inputs)
    if not said:
        return None, rest
    return said, without_conversation(rest)


def run_data(trajectory: Trajectory) -> dict[str, Any]:
    """The JSON block behind a timeline: each step's inputs and output, messages kept once."""
    messages = _Messages()
    steps: dict[int, dict[str, Any]] = {}
    previous: list[int] = []
    for step in trajectory.steps:
        shown: dict[str, Any] = {}
        raw, rest = _request(step)
        said = chat(raw) if raw is not None else None
        if said is not None:
            refs = messages.refs(said)
            common = 0
            while common < min(len(refs), len(previous)) and refs[common] == previous[common]:
                common += 1
            shown["in_messages"], shown["in_new"] = refs, len(refs) - common
            previous = refs
            rest.pop("messages", None)
        if rest:
            shown["in_rest"] = rest
        reply = chat(step.output)
        if reply is not None:
            shown["out_messages"] = messages.refs(reply)
        else:
            shown["out"] = step.output
        if step.error:
            shown["error"] = step.error
        steps[step.index] = shown
    return {"steps": steps, "messages": messages.table}


def timeline(trajectory: Trajectory, marks: Mapping[int, Sequence[Mark]] | None = None) -> str:
    """The step rows of ``trajectory`` (its data block is `run_data`, placed once per page by
    `run_section`)."""
    marks = marks or {}
    start, width = _window(trajectory.steps)
    rows = []
    for step in trajectory.steps:
        classes = ["step", f"status-{step.status.value}"]
        badges = []
        if not step.resamplable:
            classes.append("observed")
            badges.append(
                '<span class="badge observed" title="no resample function: always '
                'served from the record">observed only</span>'
            )
        if step.status is StepStatus.ERROR:
            badges.append('<span class="badge error">error</span>')
        for mark in marks.get(step.index, ()):
            classes.append(mark.css)
            badges.append(f'<span class="badge {esc(mark.css)}">{esc(mark.badge)}</span>')
        rows.append(
            f'<li class="{" ".join(classes)}" id="step-{step.index}">'
            f'<details data-step="{step.index}"><summary>'
            f'<span class="mono">#{step.index}</span>'
            f'<span class="badge kind kind-{esc(step.kind.value)}">{esc(step.kind.value)}</span>'
            f'<span class="name">{esc(step.name)}{"".join(badges)}</span>'
            f'<span class="muted mono">{_duration(step)}</span>'
            f"{_gantt(step, start, width)}"
            '</summary><div class="body"></div></details></li>'
        )
    return f'<ol class="steps">{"".join(rows)}</ol>'


def span_tree(trajectory: Trajectory) -> str:
    """The imported span tree, each span that became a step linked to its row."""
    children: dict[str | None, list[SpanNode]] = {}
    ids = {span.span_id for span in trajectory.spans}
    for span in trajectory.spans:
        parent = span.parent_span_id if span.parent_span_id in ids else None
        children.setdefault(parent, []).append(span)

    def branch(parent: str | None, depth: int) -> str:
        items = []
        for span in children.get(parent, []):
            label = f"{esc(span.name)} <span class='muted'>{esc(span.role)}</span>"
            if span.step_index is not None:
                label = f'<a href="#step-{span.step_index}">#{span.step_index}</a> {label}'
            inner = branch(span.span_id, depth + 1) if depth < 200 else ""
            items.append(f"<li>{label}{inner}</li>")
        return f'<ul class="tree">{"".join(items)}</ul>' if items else ""

    return (
        branch(None, 0)
        or '<p class="muted">This run has no span tree (it was recorded, not imported).</p>'
    )


def run_section(trajectory: Trajectory, marks: Mapping[int, Sequence[Mark]] | None = None) -> str:
    """The run: the outcome, the timeline with a span-tree toggle, and the data block."""
    outcome = "unknown" if trajectory.outcome is None else f"{trajectory.outcome:g}"
    source = trajectory.metadata.get("source") or trajectory.metadata.get("format") or "recorded"
    return (
        f"<p>{len(trajectory.steps)} steps · outcome <b>{esc(outcome)}</b> · "
        f'<span class="muted">{esc(source)}</span> '
        '<button type="button" data-toggle="timeline span-tree">steps / span tree</button></p>'
        f'<div id="timeline">{timeline(trajectory, marks)}</div>'
        f'<div id="span-tree" class="hidden">{span_tree(trajectory)}</div>'
        f"{data_script('run-data', run_data(trajectory))}"
    )


def _window(steps: Sequence[Step]) -> tuple[int, int]:
    starts = [s.start_time_unix_nano for s in steps if s.start_time_unix_nano is not None]
    ends = [s.end_time_unix_nano for s in steps if s.end_time_unix_nano is not None]
    if not starts or not ends:
        return 0, 0
    return min(starts), max(max(ends) - min(starts), 1)


def _duration(step: Step) -> str:
    if step.start_time_unix_nano is None or step.end_time_unix_nano is None:
        return ""
    ms = (step.end_time_unix_nano - step.start_time_unix_nano) / 1e6
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.1f} ms"


def _gantt(step: Step, start: int, width: int) -> str:
    if not width or step.start_time_unix_nano is None or step.end_time_unix_nano is None:
        return '<span class="gantt"></span>'
    left = 100 * (step.start_time_unix_nano - start) / width
    span = 100 * (step.end_time_unix_nano - step.start_time_unix_nano) / width
    return f'<span class="gantt"><span style="left:{left:.2f}%;width:{span:.2f}%"></span></span>'
