"""What ``agent-replay attribute`` does once its options are read: run the attribution (or, with
``--dry-run``, count it), write the report (JSON, HTML) and keep it in the store beside its run, and
show the progress bar, the table, the verdict and the repair."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import typer
from rich import box
from rich.cells import cell_len
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from otel_replay._files import write_output
from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    Mode,
    PlannedCost,
    Progress,
    Spending,
    Spent,
    StepAttribution,
    Strategy,
    SuffixTest,
    Verdict,
    attribute_stored,
    config_digest,
    percent,
    planned_cost_stored,
)
from otel_replay.cli._causes_view import cleared_before, pn_ps, root_cause_line
from otel_replay.cli._common import (
    console,
    err_console,
    open_store,
    plural,
    print_json,
    printable,
    short,
    shown,
    user_errors,
)
from otel_replay.cli._evidence_view import cost_line, evidence_lines
from otel_replay.cli._executing import Running, executing
from otel_replay.cli._send import said_sent, send_runs
from otel_replay.cli._variation_view import held_cells, tell, variation_lines
from otel_replay.errors import StoreError
from otel_replay.model import StepKind, Trajectory
from otel_replay.resamplers import JudgeSummary, UserCode
from otel_replay.transcript import compared_output

if TYPE_CHECKING:
    from otel_replay.otlp_encode import Destination


def run(
    store: Path | None,
    trajectory_id: str,
    config: AttributionConfig,
    code: UserCode,
    outputs: tuple[Path | None, Path | None, str | None],
    running: Running | None = None,
    *,
    json: bool,
    dry_run: bool,
    to: Destination | None = None,
) -> None:
    """``outputs``: where the JSON report and the HTML page go (``None``: nowhere), and the platform
    (``phoenix://HOST:PORT``, ``mlflow://HOST:PORT``) the verdict is written to (``None``: none);
    ``to``: where the kept rollouts are sent (`AttributionConfig.keep_rollouts`), linked to the run."""
    from otel_replay.platforms.schemes import annotated_by
    from otel_replay.report import build_report, dumps_report, html_report, read_report

    json_out, html_out, annotate = outputs

    with user_errors():
        if annotate is not None:
            annotated_by(annotate)  # a mistyped address is told before the rollouts
        if dry_run:
            with open_store(store) as db:
                print_cost(
                    trajectory_id,
                    *planned_cost_stored(db, trajectory_id, config, code),
                    json,
                    config.strategy.value,
                    judged=code.judge is not None,
                )
            return
        with (
            open_store(store) as db,
            executing(running or Running(), config.workers) as executor,
            progress_bar(config) as (progress, spending),
        ):
            told = tell(json or str(json_out) == "-")  # standard output: the report alone
            result = attribute_stored(
                db, trajectory_id, config, code, progress, spending, executor, told=told
            )
            wanted = html_out is not None or to is not None or annotate is not None
            run_of = db.get(result.trajectory_id) if wanted else None
        report = dumps_report(build_report(result, config, code))
        if json_out is not None:
            write_output(json_out, report)
        if html_out is not None:  # from the report as written: `report html` makes the same page
            write_output(html_out, html_report(read_report(report, "the report"), run_of).encode())
    print_outcome(result, config, report, json_out, json)
    keep_report(store, report, config_digest(config, code))
    if html_out is not None and str(html_out) != "-":
        (err_console if json else console).print(f"HTML report written to {shown(str(html_out))}")
    keep_rollouts(store, result, json=json or str(json_out) == "-", told=to is None)
    sending = send_runs(to, "rollouts", [(kept.run, run_of, {}) for kept in result.kept])
    with said_sent(sending, json=json or str(json_out) == "-"):  # stdout holds the report then
        if annotate is not None and run_of is not None:
            write_annotations(annotate, report, run_of, json or str(json_out) == "-")
        if result.verdict is Verdict.NO_EVIDENCE:  # written and kept, but it concludes nothing
            raise typer.Exit(1)


def keep_rollouts(store: Path | None, result: AttributionResult, *, json: bool, told: bool) -> None:
    """Store the rollouts the attribution kept (``--keep-rollouts``), and say so (``told``: the
    ids too, when no line of sending names them)."""
    if not result.kept:
        return
    with open_store(store, write=True) as db:
        db.put_all(kept.run for kept in result.kept)
    plans = len({kept.plan for kept in result.kept})
    ids = ": " + ", ".join(kept.run.id for kept in result.kept) if told else ""
    (err_console if json else console).print(
        f"kept {plural(len(result.kept), 'rollout')} of {plural(plans, 'plan')} in the store{ids}",
        highlight=False,
    )


def write_annotations(url: str, report: bytes, trajectory: Trajectory, json: bool) -> None:
    """The verdict written to the platform at ``url`` (Phoenix span annotations, MLflow
    assessments); said on the console (standard error under ``--json``). A platform that cannot
    take them is an error (the report is kept)."""
    from otel_replay.platforms.schemes import annotated_by

    with user_errors():
        platform = annotated_by(url)
        assert platform.annotate is not None  # annotated_by names only platforms that take them
        lines = platform.annotate(url, orjson.loads(report), trajectory)
    (err_console if json else console).print(printable("\n".join(lines)), markup=False)


def keep_report(store: Path | None, report: bytes, question: str) -> None:
    """Keep the report in the store beside its run (``ui`` shows it, ``blame`` counts it); a store
    that cannot be written (a read-only disk) keeps nothing, and the user is told so."""
    from otel_replay.fleet import keep

    try:
        with open_store(store, write=True) as db:
            keep(db, report, db.get(orjson.loads(report)["trajectory_id"]), question)
    except StoreError as exc:
        err_console.print(
            f"[yellow]warning:[/] the report was not kept in the store: {shown(str(exc))}"
        )


def print_outcome(
    result: AttributionResult,
    config: AttributionConfig,
    report: bytes,
    json_out: Path | None,
    json: bool,
) -> None:
    """The table, or the report for programs: standard output holds one or the other, never both;
    notes on how it ran go to standard error."""
    notes = [*result.notes]
    if result.shapley is not None and result.shapley.note:
        notes.append(f"Shapley: {result.shapley.note}")
    for note in notes:
        err_console.print(f"[yellow]warning:[/] {shown(note)}")
    to_stdout = json_out is not None and str(json_out) == "-"
    if json and not to_stdout:
        sys.stdout.buffer.write(report)
        sys.stdout.buffer.flush()
    if not (json or to_stdout):
        _render(result, config)
    if json_out is not None and not to_stdout:
        (err_console if json else console).print(f"report written to {shown(str(json_out))}")


@contextmanager
def progress_bar(config: AttributionConfig) -> Iterator[tuple[Progress, Spending]]:
    """A bar on stderr: the fixed strategy's rollouts against the total it planned; a sequential
    strategy's spending against the budget, in the budget's unit (resample-function calls, model
    calls or tokens; without a budget, a count of calls), with what is left of the batch under
    way, which is what remains before its next decision."""
    if config.strategy is Strategy.FIXED:
        columns = (TextColumn("rollouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with RichProgress(*columns, console=err_console, transient=True) as bar:
            task = bar.add_task("rollouts", total=None)
            yield (
                lambda completed, total: bar.update(task, completed=completed, total=total),
                lambda spent: None,
            )
        return
    unit = config.budget_unit.words if config.budget is not None else "calls"
    calls = (
        TextColumn(unit),
        BarColumn(),
        TextColumn("{task.completed:,.0f}{task.fields[of]}"),
        TextColumn("{task.fields[batch]}"),
        TimeElapsedColumn(),
    )
    with RichProgress(*calls, console=err_console, transient=True) as bar:
        task = bar.add_task(unit, total=config.budget, of="", batch="")

        def spending(spent: Spent) -> None:
            bar.update(
                task,
                completed=spent.amount,
                of=f" of {spent.budget:,} (budget)" if spent.budget else "",
                batch=f"{spent.batch:,} more in this batch" if spent.batch else "",
            )

        yield (lambda completed, total: None), spending


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:+.2f}, {high:+.2f}]"


def _budget(result: AttributionResult, config: AttributionConfig) -> str:
    """How many rollouts each plan got: the fixed strategy's count, or the range the sequential
    strategies used."""
    if config.strategy is Strategy.FIXED:
        return f"{config.rollouts} rollouts per plan"
    used = sorted(
        {s.ablated.n for s in result.steps if s.ablated is not None}
        | {t.comparison.ablated.n for t in result.search}
    )
    if not used:
        return str(config.strategy.value)
    spread = f"{used[0]}" if used[0] == used[-1] else f"{used[0]}–{used[-1]}"
    return f"{config.strategy.value}, {spread} rollouts per plan"


#: Below this many columns the table leaves out intervals and test bounds (the report has them).
_WIDE_TABLE = 110
#: Names up to this long are shown whole before the intervals are: a wider terminal than that
#: table leaves them out to make room (a longer name is cut to this, beside the intervals).
_NAME_ROOM = 40
#: Wider than any table this prints: its columns measured whole, nothing cut.
_UNBOUNDED = 10_000


def _name_width(table: Table, longest: int) -> int:
    """What the name column may take: all of its longest name when the table fits the terminal so,
    else what the terminal leaves it beside the other columns, measured as rich lays them out."""
    unbounded = console.options.update_width(_UNBOUNDED)
    natural = Measurement.get(console, unbounded, table).maximum
    return longest - max(0, natural - console.width)


def _decision(
    step: StepAttribution,
    wide: bool,
    search: Sequence[SuffixTest] = (),
    before: int | None = None,
) -> str:
    """Which test the step passed, with the bound it read when the terminal has room; a step the
    search cleared with every later one names the step the joint test resampled from, one the
    root cause's search cleared with every earlier one (``before``) the step it stopped at."""
    if before is not None:
        return f"no effect, with all before #{before}" if wide else f"no effect <#{before}"
    if step.band is not None:
        return f"no effect: in band ({step.band}/{step.band})" if wide else "in band"
    if step.cleared_by is not None:
        # the full question that cleared it, not a screen's batch from the same step
        joint = next((t for t in search if t.clears and t.start == step.cleared_by), None)
        if not wide:
            return f"no effect ≥#{step.cleared_by}"
        bound = f" {_interval(*joint.comparison.no_effect_interval)}" if joint else ""
        return f"no effect, with all from #{step.cleared_by}{bound}"
    if step.significant and step.matters_bound is not None:
        return f"matters >{step.matters_bound:+.2f}" if wide else "matters"
    if step.no_effect and step.no_effect_interval is not None:
        return f"no effect {_interval(*step.no_effect_interval)}" if wide else "no effect"
    if step.lowered and step.no_effect_interval is not None:
        return f"lowered {_interval(*step.no_effect_interval)}" if wide else "lowered"
    return "undecided" if step.test_tail is not None else "not estimated"


def _joint_caption(result: AttributionResult, wide: bool) -> str:
    """How the table words the steps the searches cleared together, when there are any."""
    words = []
    if any(s.band is not None for s in result.steps):
        how = "'no effect: in band (n/n)'" if wide else "'in band'"
        words.append(f"{how}: resampled from it, and from the next step, all n ended as recorded")
    if any(s.cleared_by is not None for s in result.steps):
        how = "'no effect, with all from #k'" if wide else "'no effect ≥#k'"
        words.append(f"{how}: shown together with every step from #k on, by the search")
    if any(cleared_before(result, s) is not None for s in result.steps):
        how = "'no effect, with all before #k'" if wide else "'no effect <#k'"
        words.append(f"{how}: together with every step before #k, by the root cause's search")
    return f" ({'; '.join(words)})" if words else ""


def _fill(
    table: Table,
    result: AttributionResult,
    names: Sequence[str],
    wide: bool,
    causes: bool,
    name_width: int | None,
) -> Table:
    """``table`` given the steps' columns and rows; the name column cut to ``name_width`` (None:
    never cut)."""
    credit = result.mode is Mode.CREDIT
    swap = result.swap_model
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column(
        "name",
        overflow="ellipsis",
        max_width=name_width,
        no_wrap=True,
    )
    estimand = "credit" if credit or swap else "attribution"
    table.add_column(estimand, justify="right", no_wrap=True)
    table.add_column("P(fail)", justify="right", no_wrap=True)
    table.add_column("test", no_wrap=True)
    if causes:
        table.add_column("PN / PS", justify="right", no_wrap=True)
    shapley = result.shapley is not None
    if shapley:
        table.add_column("shapley", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for step, name in zip(result.steps, names, strict=True):
        marker = ""
        if step.index == result.point_of_commitment:
            marker = "◀"
        if not step.resamplable:
            cells = [str(step.index), step.kind, name, *held_cells(step)]
            cells += [""] * (causes + shapley)
            table.add_row(*cells, "", style="dim")
            continue
        estimate = ""
        if step.attribution is not None:
            estimate = f"{step.attribution:+.2f}"
            if wide:
                estimate += f" {_interval(step.ci_low, step.ci_high)}"
        rates = (
            f"{step.kept.value:.2f}/{step.ablated.value:.2f}" if step.kept and step.ablated else ""
        )
        cells = [str(step.index), step.kind, name, estimate, rates]
        decision = _decision(step, wide, result.search, cleared_before(result, step))
        left_out = sum(p.left_out for p in (step.kept, step.ablated) if p is not None)
        cells.append(f"{decision}, {left_out} left out" if wide and left_out else decision)
        if causes:
            cells.append(pn_ps(step))
        if shapley:
            if step.shapley is not None and step.shapley_se is not None:
                differs = " ≠" if step.shapley_disagrees else ""
                se = f"±{step.shapley_se:.2f}" if wide else ""
                cells.append(f"{step.shapley:+.2f}{se}{differs}")
            else:
                cells.append("")
        style = ("bold green" if credit or swap else "bold red") if marker else None
        table.add_row(*cells, marker, style=style)
    return table


def _render(result: AttributionResult, config: AttributionConfig) -> None:
    credit = result.mode is Mode.CREDIT
    swap = result.swap_model
    tails = [s.test_tail for s in result.steps if s.test_tail is not None]
    tail = min(tails) if tails else 0.0
    no_effect_tail = min(
        (s.no_effect_tail or s.test_tail or 0.0 for s in result.steps if s.test_tail is not None),
        default=0.0,
    )
    title = "rescue credit" if credit else "failure attribution"
    rates = "P(fail) with the step kept / resampled"
    located = "save point" if credit else "point of commitment"
    if swap is not None:
        title = f"credit of a swap to {shown(swap)}, per step,"
        rates = f"P(fail) with {shown(swap)} from the next step / from this one"
        located = f"the latest step from which {shown(swap)} saves the run"
    names = [shown(step.name) for step in result.steps]
    longest = max([cell_len(console.render_str(name).plain) for name in names] + [4])
    # the intervals only when the terminal is wide and they leave the names their room
    for wide in (True, False) if console.width >= _WIDE_TABLE else (False,):
        causes = wide and any(s.necessity or s.sufficiency for s in result.steps)
        room = _name_width(
            _fill(Table(box=box.SIMPLE_HEAD), result, names, wide, causes, None), longest
        )
        if room >= min(longest, _NAME_ROOM):
            break
    intervals = (
        "estimates with 95% intervals, for reading"
        if wide
        else "intervals and bounds in --json (or a wider terminal)"
    )
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"{title} of {shown(result.trajectory_id)}",
        caption=(
            f"{_budget(result, config)}, seed {config.seed}; {intervals}; "
            f"{rates}; "
            + (
                f"test, the simultaneous bounds decisions read: 'matters' when the one-sided "
                f"{percent(1 - tail)} bound is above 0, 'no effect' when the "
                f"{percent(1 - 2 * no_effect_tail)} interval is inside ±{config.margin:g}"
                + (
                    f", 'lowered' when it lies below −{config.margin:g} (a lucky record: keeping "
                    "the step lowers the failure rate; decided, and no culprit)"
                    if any(s.lowered for s in result.steps)
                    else ""
                )
                + f"{_joint_caption(result, wide)}; "
                if tails
                else ""
            )
            + f"◀ {located}"
            + (
                "; PN / PS: the probabilities of necessity (resampling the step turns the "
                "outcome around) and sufficiency (keeping it brings the outcome about), their "
                "intervals in --json"
                if causes
                else ""
            )
        ),
    )
    _fill(
        table, result, names, wide, causes, max(room, min(longest, 10)) if room < longest else None
    )
    console.print(table)
    console.print(f"[bold]{result.verdict.value}[/]: {shown(result.explanation)}")
    root = root_cause_line(result)
    if root is not None:
        console.print(root[0], style="dim" if root[1] else None, highlight=False)
    console.print(cost_line(result), highlight=False)
    if result.judge is not None:
        _print_judge(result.judge)
    if result.shapley is not None:
        s = result.shapley
        console.print(
            f"Shapley: Σφ = {s.total:+.2f} ± {s.total_se:.2f} vs "
            f"{'v(all) − v(∅)' if s.mode is Mode.FAILURE else 'v(∅) − v(all)'} = "
            f"{s.expected_total:+.2f} estimated apart (gap {s.efficiency_gap:+.2f}, "
            f"{s.permutations} permutations"
            + (f", every SE below {s.se_target:g}" if s.se_target and not s.note else "")
            + ")"
        )
        disagree = [step.index for step in result.steps if step.shapley_disagrees]
        if disagree:
            console.print(
                f"≠ Shapley and the attribution differ beyond their intervals at "
                f"{plural(len(disagree), 'step')} {', '.join(map(str, disagree))}: Shapley "
                "averages a step's effect over which other steps are kept, the attribution holds "
                "the recorded prefix; such a step matters only together with others (docs/attribution.md: "
                "'Two estimates, two questions')"
            )
    if result.repair is not None:
        r = result.repair
        kind = StepKind(next(s.kind for s in result.steps if s.index == r.step_index))
        console.print(
            f"repair ({r.move}): step {r.step_index} returning "
            f"{shown(short(compared_output(kind, r.output), 80))} "
            "saves the run "
            f"{r.success_rate:.0%} of the time [{r.success_low:.2f}, {r.success_high:.2f}] "
            f"(similarity to the record {r.similarity:.2f}; from {shown(r.source)})"
        )
    elif result.repair_note:
        console.print(f"repair: {shown(result.repair_note)}")
    if result.resampler_errors:
        console.print(
            f"[yellow]{result.resampler_errors} rollout(s) failed on a resampler error[/]"
        )
    for line in evidence_lines(result):
        console.print(shown(line), style="yellow" if "left out" in line else None)


def _print_judge(judge: JudgeSummary) -> None:
    """What the judge said, one line per distinct answer it judged (most runs first)."""
    answers = len(judge.verdicts)
    console.print(
        f"judge: {plural(judge.calls, 'model call')} for {plural(answers, 'distinct answer')} "
        f"(the same answer is judged once): {shown(judge.question)}",
        highlight=False,
    )
    for tally in sorted(judge.verdicts, key=lambda t: -t.runs):
        v = tally.verdict
        console.print(
            f"  {v.verdict} ({plural(tally.runs, 'run')}): {shown(short(v.answer, 60))} — "
            f"{shown(v.reason)}",
            highlight=False,
        )


def print_cost(
    trajectory_id: str,
    cost: PlannedCost,
    how: str,
    json: bool,
    config_name: str = "adaptive",
    *,
    judged: bool = False,
) -> None:
    """``--dry-run``: what the attribution would run, and at most with a repair search or a
    Shapley target; with ``judged`` (``--judge``), the judge's model calls at most too: one per
    distinct final answer, so never more than the recorded run and every rollout."""
    judge_calls = cost.worst_rollouts + 1 if judged else None
    if json:
        typical = cost.typical_spend
        print_json(
            {
                "trajectory_id": trajectory_id,
                "driver": how,
                "rollouts": cost.rollouts,
                "calls": cost.calls,
                "calls_by_kind": cost.calls_by_kind,
                "calls_exact": cost.exact,
                "worst_rollouts": cost.worst_rollouts,
                "worst_calls": cost.worst_calls,
                "typical_calls": cost.typical_calls,
                "adaptive": cost.adaptive,
                "spend": cost.spend.to_record(),
                "typical_spend": None if typical is None else typical.to_record(),
                "worst_spend": cost.worst_spend.to_record(),
                **({} if judge_calls is None else {"worst_judge_calls": judge_calls}),
                "steps": [v.to_record() for v in cost.variations],
            }
        )
        return
    if cost.adaptive and not cost.calls:
        typical = cost.typical_spend or cost.spend
        console.print(
            f"dry run of {shown(trajectory_id)} ({shown(how)}): the {shown(config_name)} strategy "
            f"stops as soon as its tests decide: typically about {cost.typical_calls or 0:,} "
            "resample-function calls (one decisive step halfway through the run): "
            f"{typical.words(about=True)}",
            highlight=False,
        )
        console.print(
            f"at most {cost.worst_rollouts:,} rollouts and {cost.worst_calls:,} calls: "
            f"{cost.worst_spend.words()}",
            highlight=False,
        )
    else:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in cost.calls_by_kind.items())
        about = "" if cost.exact else "about "
        console.print(
            f"dry run of {shown(trajectory_id)} ({shown(how)}): "
            f"{plural(cost.rollouts, 'rollout')}, {about}{cost.calls:,} resample-function calls "
            f"({kinds}): {cost.spend.words(about=not cost.exact)}",
            highlight=False,
        )
        if cost.extra_calls:
            console.print(
                f"at most {cost.worst_rollouts:,} rollouts and {cost.worst_calls:,} calls, with "
                "what a repair search or a Shapley standard-error target may add: "
                f"{cost.worst_spend.words(about=not cost.exact)}",
                highlight=False,
            )
    for line in variation_lines(cost.variations):
        console.print(shown(line), highlight=False)
    if judge_calls is not None:
        console.print(
            f"and the judge's model calls, one per distinct final answer: at most "
            f"{judge_calls:,} (the recorded run and every rollout)",
            highlight=False,
        )
