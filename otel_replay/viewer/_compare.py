"""Two runs compared (`otel_replay.replay.diff`): the steps they share, one line each; the first
step where they part, marked, with what differs and each side's inputs and output (a model turn's
as its message, however each run recorded it); the steps each
went on to take; and where their structures part (operations one run performs and the other not).

After the divergence the rows pair steps by position only: the runs have parted, and the structure
section, not the table, says which operations match.
"""

from __future__ import annotations

from typing import Any

import orjson

from otel_replay.model import Step, Trajectory
from otel_replay.replay import TrajectoryDiff, diff
from otel_replay.report import esc, page
from otel_replay.store import Store, outcome_source
from otel_replay.transcript import compared_output
from otel_replay.viewer._pages import VIEWER_STYLE, nav, outcome_text, run_link, step_label
from otel_replay.viewer._urls import diff_url, is_run_id, run_url

#: Characters of a value shown at the divergence at most (a step's inputs resend whole histories).
_SHOWN_CHARS = 200_000


def diff_page(store: Store, left_id: str, right_id: str) -> str:
    """The comparison of the runs ``left_id`` and ``right_id`` name (ids or unique prefixes)."""
    result = diff(store.get(left_id), store.get(right_id))
    left, right = result.left, result.right
    swap = (
        f' · <a href="{esc(diff_url(right.id, left.id))}">swap sides</a>'
        if is_run_id(left.id) and is_run_id(right.id)
        else ""
    )
    body = (
        "<h1>Two runs compared</h1>"
        f"<p>left {_side(left)}<br>right {_side(right)}{swap}</p>"
        f"{_banner(result)}{_table(result)}{_at_divergence(result)}{_structure(result)}"
        f"{VIEWER_STYLE}"
    )
    return page(f"agent-replay · diff {left.id[:12]} {right.id[:12]}", body, nav=nav())


def _side(run: Trajectory) -> str:
    given = outcome_source(run.outcome, run.metadata)
    source = f" from {esc(given)}" if given else ""
    return f"{run_link(run.id)} <span class='muted'>{len(run.steps)} steps, outcome {esc(outcome_text(run.outcome))}{source}</span>"


def _banner(result: TrajectoryDiff) -> str:
    if result.identical:
        return (
            f'<div class="banner ok" id="verdict"><b>Identical</b>: {len(result.left.steps)} '
            "steps, the same operations and results (the same final hash).</div>"
        )
    k = result.common
    shared = f"Steps #0–#{k - 1} are the same on both sides" if k else "No step in common"
    return (
        f'<div class="banner undecided" id="verdict">{shared}; <b>the runs part at step #{k}</b> '
        f"({esc(', '.join(result.differences))}).</div>"
    )


def _table(result: TrajectoryDiff) -> str:
    left, right = result.left, result.right
    rows = [
        f'<tr class="same"><td class="mono">#{i}</td><td colspan="2">{_step_link(left, i)}</td>'
        '<td class="muted">same on both sides</td></tr>'
        for i in range(result.common)
    ]
    if not result.identical:
        k = result.common
        rows.append(
            f'<tr class="divergence" id="divergence"><td class="mono">#{k}</td>'
            f"<td>{_step_link(left, k)}</td><td>{_step_link(right, k)}</td>"
            f'<td class="what">first divergence: {esc(", ".join(result.differences))}</td></tr>'
        )
        for i in range(k + 1, max(len(left.steps), len(right.steps))):
            rows.append(
                f'<tr class="after"><td class="mono">#{i}</td><td>{_step_link(left, i)}</td>'
                f"<td>{_step_link(right, i)}</td><td></td></tr>"
            )
    head = (
        f"<tr><th>step</th><th>left {esc(left.id[:16])}</th><th>right {esc(right.id[:16])}</th>"
        "<th>comparison</th></tr>"
    )
    return f'<table id="comparison"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _step_link(run: Trajectory, index: int) -> str:
    if index >= len(run.steps):
        return '<span class="muted">(the run has ended)</span>'
    href = f"{run_url(run.id)}#step-{index}" if is_run_id(run.id) else None
    return step_label(run.steps[index], href)


def _at_divergence(result: TrajectoryDiff) -> str:
    if result.identical:
        return ""
    a, b = result.step_pair()
    return (
        f"<h2>At step #{result.common}</h2>"
        f'<div class="cols" id="divergence-detail"><div><h3>left</h3>{_values(a)}</div>'
        f"<div><h3>right</h3>{_values(b)}</div></div>"
    )


def _values(step: Step | None) -> str:
    if step is None:
        return '<p class="muted">The run has ended: there is no step here.</p>'
    parts = [f"<p>{step_label(step)}</p><h4>inputs</h4>{_pre(step.inputs)}"]
    if step.error:
        parts.append(f"<h4>error</h4>{_pre(step.error)}")
    # a model turn's output as its message: an SDK's response and a resampled message read alike
    parts.append(f"<h4>output</h4>{_pre(compared_output(step.kind, step.output))}")
    return "".join(parts)


def _pre(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
        except (TypeError, orjson.JSONEncodeError):
            text = repr(value)
    if len(text) > _SHOWN_CHARS:
        text = f"{text[:_SHOWN_CHARS]}\n… ({len(text) - _SHOWN_CHARS:,} more characters left out)"
    return f'<pre class="json">{esc(text)}</pre>'


def _structure(result: TrajectoryDiff) -> str:
    if result.identical:
        return ""
    if not result.structure:
        return (
            "<h2>Structure</h2><p>After the divergence both runs perform the same operations "
            "(kind and name) in the same order; their inputs or results differ.</p>"
        )
    items = []
    for part in result.structure:
        run = result.left if part.side == "left" else result.right
        steps = (
            f"#{part.start}" if part.stop - part.start == 1 else f"#{part.start}–#{part.stop - 1}"
        )
        operations = ", ".join(part.operations)
        items.append(
            f'<li>only {esc(part.side)} (<span class="mono">{esc(run.id[:16])}</span>) has '
            f'{steps}: <span class="mono">{esc(operations)}</span></li>'
        )
    return f'<h2>Structure</h2><ul id="structure">{"".join(items)}</ul>'
