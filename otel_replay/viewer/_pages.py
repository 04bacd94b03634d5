"""The viewer's pages over a store: the run list, a run, one stored report, a page for what went
wrong. The run comparison is `otel_replay.viewer._diff`.

Each page is `otel_replay.report.page` (the style and the script every report shares, inline) and
reads the store it is given, never writes it. Every string that came from a trace or a report goes
through `esc` (or `data_script`, inside `run_section`); numbers are formatted here. A run or report
that is not there raises `NotFoundError`, which the server answers with 404.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from otel_replay.errors import NotFoundError
from otel_replay.model import Step, StepStatus, Trajectory, is_failure
from otel_replay.replayable import replayability
from otel_replay.report import esc, page, question, report_body, run_section
from otel_replay.store import Store, outcome_source
from otel_replay.viewer._urls import compare_url, diff_url, is_run_id, report_url, run_url

#: What the viewer's own pages add to the shared style (the comparison's rows, the report list).
VIEWER_STYLE = (
    "<style>"
    "tr.same td{color:var(--muted);padding-top:.1em;padding-bottom:.1em}"
    "tr.divergence td{background:var(--mark);border-top:2px solid var(--bad);"
    "border-bottom:2px solid var(--bad)}"
    "tr.divergence .what{color:var(--bad);font-weight:600}"
    "tr.after td{background:var(--soft)}"
    "form.compare{display:flex;gap:.6em;align-items:center;margin:.5em 0}"
    ".links a{margin-right:.8em}"
    "</style>"
)


def nav(*links: tuple[str, str]) -> str:
    """The header's links: every page leads back to the run list; ``links`` are (href, label)."""
    return '<a href="/">runs</a>' + "".join(f'<a href="{esc(h)}">{esc(t)}</a>' for h, t in links)


def outcome_class(outcome: float | None) -> str:
    """``failed``, ``passed`` or ``unknown``: the run list's outcome filter."""
    return {True: "failed", False: "passed", None: "unknown"}[is_failure(outcome)]


def outcome_text(outcome: float | None) -> str:
    return "unknown" if outcome is None else f"{outcome:g} {outcome_class(outcome)}"


def utc(time_unix_nano: int | None) -> str:
    if time_unix_nano is None:
        return "—"
    moment = datetime.fromtimestamp(time_unix_nano / 1e9, tz=timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def run_link(run_id: str, text: str | None = None) -> str:
    """A link to the run's page; an id the viewer cannot put in a URL is shown without one."""
    label = esc(run_id if text is None else text)
    if not is_run_id(run_id):
        return f'<span title="this id holds characters the viewer does not accept in a URL">{label}</span>'
    return f'<a class="mono" href="{esc(run_url(run_id))}">{label}</a>'


def step_label(step: Step, href: str | None = None) -> str:
    """A step in a line: its kind, its name (a link to ``href`` when given), an error badge."""
    error = ' <span class="badge error">error</span>' if step.status is StepStatus.ERROR else ""
    name = f'<span class="mono">{esc(step.name)}</span>'
    if href is not None:
        name = f'<a href="{esc(href)}">{name}</a>'
    return (
        f'<span class="badge kind kind-{esc(step.kind.value)}">{esc(step.kind.value)}</span> '
        f"{name}{error}"
    )


def error_page(title: str, message: str) -> str:
    """A page saying what went wrong (``message`` is escaped here)."""
    body = f'<h1>{esc(title)}</h1><p>{esc(message)}</p><p><a href="/">all runs</a></p>'
    return page(f"agent-replay · {title}", body, nav=nav())


# --- a run ---------------------------------------------------------------------------------------


def run_page(store: Store, run_id: str) -> str:
    """A run's timeline (as the HTML report shows it), its stored reports, a comparison form."""
    trajectory = store.get(run_id)
    reports = store.reports(trajectory.id)
    body = (
        f'<h1>Run <span class="mono">{esc(trajectory.id)}</span></h1>{_about(trajectory)}'
        f"{_replayability(trajectory)}{run_section(trajectory)}"
        f"<h2>Attribution reports</h2>{_report_list(trajectory.id, reports)}"
        f"<h2>Compare</h2>{_compare(store, trajectory)}{VIEWER_STYLE}"
    )
    return page(f"agent-replay · {trajectory.id[:12]}", body, nav=nav())


def _about(trajectory: Trajectory) -> str:
    meta = trajectory.metadata
    given = outcome_source(trajectory.outcome, meta)
    source = f" from <span class='mono'>{esc(given)}</span>" if given else ""
    fields = [
        f"<span class='outcome' data-outcome='{outcome_class(trajectory.outcome)}'>outcome "
        f"{esc(outcome_text(trajectory.outcome))}{source}</span>"
    ]
    fields += [
        f"{key} <span class='mono'>{esc(meta[key])}</span>"
        for key in ("service", "session", "root_span", "format")
        if meta.get(key) is not None
    ]
    return f'<p class="muted">{" · ".join(fields)}</p>' if fields else ""


#: How many replayability reasons a run's page lists (``agent-replay show --json`` has them all).
_REASONS = 20


def _replayability(trajectory: Trajectory) -> str:
    """The run's replayability verdict, and what its record lacks, step by step."""
    verdict = replayability(trajectory)
    items = "".join(f"<li>{esc(str(r))}</li>" for r in verdict.reasons[:_REASONS])
    more = len(verdict.reasons) - _REASONS
    if more > 0:
        items += f"<li class='muted'>… and {more} more (agent-replay show --json lists them)</li>"
    return (
        f'<section class="replayability" data-verdict="{esc(verdict.verdict.value)}">'
        f"<p>replayability <b>{esc(verdict.verdict.value)}</b></p>"
        f"{f'<ul>{items}</ul>' if items else ''}</section>"
    )


def _report_list(run_id: str, reports: list[dict[str, Any]]) -> str:
    if not reports:
        return '<p class="muted">No attribution report is stored for this run.</p>'
    rows = []
    for kept in reports:
        report = kept["report"] if isinstance(kept["report"], dict) else {}
        config = report.get("config") if isinstance(report.get("config"), dict) else {}
        assert isinstance(config, dict)
        located = question(report).located
        digest = str(kept["config_digest"])
        how = ", ".join(
            f"{name} {esc(config[key])}"
            for key, name in (("method", "method"), ("rollouts", "rollouts"), ("seed", "seed"))
            if config.get(key) is not None
        )
        rows.append(
            f'<tr><td><a href="{esc(report_url(run_id, digest))}">{esc(kept["verdict"] or "report")}</a></td>'
            f'<td class="mono">{"#" + esc(located) if isinstance(located, int) else "—"}</td>'
            f"<td>{how}</td>"
            f'<td class="mono">{utc(kept["created_at_unix_nano"])}</td>'
            f'<td class="mono muted">{esc(digest[:12])}</td></tr>'
        )
    head = (
        "<tr><th>verdict</th><th>step</th><th>configuration</th><th>kept</th><th>config digest</th>"
        "</tr>"
    )
    return f'<table id="reports"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


#: How many of the newest runs the comparison form offers as it is typed in.
_OFFERED = 50


def _compare(store: Store, trajectory: Trajectory) -> str:
    """A form for any other run (an id or a prefix; the newest few offered), and links to the
    newest runs that ended otherwise: asked of the store a page at a time, never all of its runs."""
    others = [
        s for s in store.runs(limit=_OFFERED + 1) if s.id != trajectory.id and is_run_id(s.id)
    ][:_OFFERED]
    options = "".join(f'<option value="{esc(s.id)}">' for s in others)
    own = outcome_class(trajectory.outcome)
    contrast = [
        s
        for outcome in ("failed", "passed", "unknown")
        if outcome != own
        for s in store.runs(outcome, limit=8)
        if is_run_id(s.id)
    ][:8]
    links = "".join(
        f'<a class="mono" href="{esc(diff_url(trajectory.id, s.id))}" title="{esc(s.id)}">'
        f"{esc(s.id if len(s.id) <= 32 else s.id[:24] + '…')}</a> "
        for s in contrast
    )
    shortcut = f'<p class="links">with a run that ended otherwise: {links}</p>' if links else ""
    return (
        f'<form class="compare" method="get" action="{esc(compare_url(trajectory.id))}">'
        '<label for="compare-with">compare with</label>'
        '<input id="compare-with" name="with" list="other-runs" required '
        'placeholder="run id or prefix" size="36" autocomplete="off">'
        f'<datalist id="other-runs">{options}</datalist>'
        '<button type="submit">compare</button></form>'
        f"{shortcut}"
    )


# --- one stored report ---------------------------------------------------------------------------


def report_page(store: Store, run_id: str, config_digest: str) -> str:
    """The report kept for the run under ``config_digest``, as the HTML report shows it."""
    trajectory = store.get(run_id)
    for kept in store.reports(trajectory.id):
        if kept["config_digest"] == config_digest and isinstance(kept["report"], dict):
            body = report_body(kept["report"], trajectory)
            title = f"agent-replay · {trajectory.id[:12]} · {kept['verdict'] or 'report'}"
            return page(title, body, nav=nav((run_url(trajectory.id), f"run {trajectory.id[:12]}")))
    raise NotFoundError(
        f"no report with configuration digest {config_digest[:12]}… is stored for run {trajectory.id}"
    )
