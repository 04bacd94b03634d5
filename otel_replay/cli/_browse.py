"""``agent-replay list`` and ``agent-replay show``."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from otel_replay.cli._common import (
    JsonOption,
    StoreOption,
    console,
    err_console,
    open_store,
    print_json,
    printable,
    short,
    shown,
    user_errors,
)
from otel_replay.cli._replayable import print_replayability
from otel_replay.cli._run_table import Seen, page_footer, print_json_rows, print_table
from otel_replay.messages import assistant_message, conversation
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.replayable import replayability
from otel_replay.store import outcome_source

LimitOption = Annotated[
    int, typer.Option("--limit", "-n", help="How many runs to show (0: all of them).", min=0)
]
WhereOption = Annotated[
    str | None,
    typer.Option(
        "--where",
        metavar="FILTER",
        help="Only the runs that meet every condition, as attribute --where reads them: "
        "FIELD OP VALUE joined by and (fields id outcome steps source format start replayability "
        "task, the run's first user message; OP one of < <= > >= = != and ~, a regular "
        "expression search), and FIELD^PREFIX (id^ef28); the words failed, passed, unknown; any "
        "other word: the id, source or task contains it.",
    ),
]
SortOption = Annotated[
    str | None,
    typer.Option(
        "--sort",
        metavar="ORDER",
        help="newest (the default), oldest, steps, outcome or id, with :asc or :desc.",
    ),
]


def list_command(
    limit: LimitOption = 50,
    every: Annotated[bool, typer.Option("--all", help="Show every run (as --limit 0).")] = False,
    offset: Annotated[int, typer.Option(help="Skip this many runs first.", min=0)] = 0,
    after: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Start after this run (an id or prefix) in the order."),
    ] = None,
    where: WhereOption = None,
    sort: SortOption = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """List the runs in the store, newest first, a page at a time.

    A page is 50 runs (--limit, --offset or --after); --where chooses the runs and --sort their
    order, both answered by the store."""
    with user_errors(), open_store(store) as db:
        total = db.count_runs(where)
        runs = Seen(
            db.runs(where, sort, limit=None if every else limit or None, offset=offset, after=after)
        )
        shown = print_json_rows(runs) if json else print_table(runs)
    footer = page_footer(shown, total, offset, after, runs.last, sort)
    if not json:
        console.print(Text(footer))
    elif shown < total:
        err_console.print(Text(footer))


def show_command(
    trajectory_id: Annotated[
        str, typer.Argument(metavar="ID", help="Trajectory id or a unique prefix.")
    ],
    json: JsonOption = False,
    width: Annotated[int, typer.Option(help="Width of the inputs/output previews.")] = 60,
    tree: Annotated[
        bool, typer.Option("--tree", help="Show the span tree the steps came from.")
    ] = False,
    store: StoreOption = None,
) -> None:
    """Show one trajectory step by step (--json: the whole trajectory, and its identity)."""
    with user_errors(), open_store(store) as db:
        trajectory = db.get(trajectory_id)
    if json:
        print_json(
            {
                **trajectory.to_record(),
                "outcome_source": outcome_source(trajectory.outcome, trajectory.metadata),
                "identity": trajectory.identity,
                "replayability": replayability(trajectory).to_record(),
            }
        )
        return
    _print_head(trajectory)
    console.print(_step_table(trajectory, width))
    if tree:
        console.print(_span_tree(trajectory))


def _step_table(trajectory: Trajectory, width: int) -> Table:
    """The run step by step, its inputs and outputs cut to ``width``."""
    rebuilt = set(trajectory.metadata.get("reconstructed_steps", []))
    caption = f"final hash {trajectory.final_hash[:16]}…  identity {trajectory.identity[:16]}…"
    if rebuilt:
        caption = f"† reconstructed from the conversation (no span recorded it); {caption}"
    table = Table(caption=caption)
    for column in ("#", "kind", "name", "status", "ms", "inputs", "output"):
        table.add_column(
            column, justify="right" if column in ("#", "ms") else "left", overflow="fold"
        )
    for step in trajectory.steps:
        ms = "" if step.duration_ns is None else f"{step.duration_ns / 1e6:.1f}"
        failed = step.status is StepStatus.ERROR
        cells = (
            f"{step.index}{'†' if step.index in rebuilt else ''}",
            step.kind.value,
            step.name,
            step.status.value,
            ms,
            short(_input_preview(step), width),
            short(step.error if failed else _output_preview(step.output), width),
        )
        table.add_row(*map(shown, cells), style="red" if failed else None)
    return table


def _print_head(trajectory: Trajectory) -> None:
    """The run's id and outcome, where it came from, and its replayability."""
    meta = trajectory.metadata
    outcome = "unknown" if trajectory.outcome is None else f"{trajectory.outcome:g}"
    verdict = {None: "", True: " [red](failed)[/]", False: " [green](passed)[/]"}[trajectory.failed]
    given = outcome_source(trajectory.outcome, meta)
    source = f" from {shown(given)}" if given else ""
    console.print(
        f"[bold]{shown(trajectory.id)}[/]  outcome {outcome}{verdict}{source}", highlight=False
    )
    details = [
        f"{k}: {meta[k]}" for k in ("root_span", "service", "session", "source") if k in meta
    ]
    console.print(printable("  ".join(details)), highlight=False, markup=False)
    print_replayability(replayability(trajectory))


def _span_tree(trajectory: Trajectory) -> Tree:
    """Spans as imported: steps marked with their index, structure and plumbing dimmed."""
    root = Tree(f"trace {shown(trajectory.id)}")
    nodes: dict[str, Tree] = {}
    for span in trajectory.spans:  # stored in tree (pre-)order: parents before children
        parent = nodes.get(span.parent_span_id or "", root)
        if span.step_index is not None and 0 <= span.step_index < len(trajectory.steps):
            step = trajectory.steps[span.step_index]
            label = f"[bold]#{span.step_index} {step.kind.value}[/] {shown(span.name)}"
        else:
            label = f"[dim]{shown(span.name)} ({span.role})[/]"
        if span.status is StepStatus.ERROR:
            label += " [red]error[/]"
        nodes[span.span_id] = parent.add(label)
    return root


def _input_preview(step: Step) -> Any:
    """What a person wants to see of the inputs: the latest message, or the tool arguments."""
    inputs = step.inputs
    messages = conversation(inputs) if step.kind is StepKind.LLM else []
    if messages:
        last = messages[-1]
        return f"[{len(messages)} msgs] {last.get('role', '?')}: {_output_preview(last)}"
    if "arguments" in inputs:
        return inputs["arguments"]
    return inputs


def _output_preview(output: Any) -> Any:
    output = assistant_message(output) or output
    if isinstance(output, dict) and ("content" in output or "tool_calls" in output):
        calls = output.get("tool_calls") or []
        content = output.get("content")
        text = [content if isinstance(content, str) else short(content, 40)] if content else []
        text += [
            f"→ {c.get('name')}({short(c.get('arguments', {}), 40)})"
            for c in calls
            if isinstance(c, dict)
        ]
        return " ".join(text)
    return output
