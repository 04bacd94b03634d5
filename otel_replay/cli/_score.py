"""``agent-replay score``: give stored runs an outcome with a verifier, kept with its source."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from otel_replay.cli._code import (
    FailIfOption,
    JudgeBaseUrlOption,
    JudgeModelOption,
    JudgeOption,
    ResamplersOption,
    SuccessIfOption,
    VerifierOption,
    user_code,
)
from otel_replay.cli._common import (
    JsonOption,
    StoreOption,
    console,
    open_store,
    plural,
    print_json,
    shown,
    user_errors,
)
from otel_replay.errors import NotFoundError, SettingError

if TYPE_CHECKING:
    from otel_replay.fleet import Scored


def score_command(
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[ID]...",
            help="Runs (an id or a unique prefix); none with --where, --since or --all.",
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            help="Runs matching this, e.g. 'steps > 3' (attribute's filter language: "
            "docs/many-runs.md)."
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Runs started since: 2026-03-14, or an age (24h, 7d).")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every stored run.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Score runs that have an outcome already, replacing it (and its source).",
        ),
    ] = False,
    resamplers: ResamplersOption = None,
    verifier: VerifierOption = None,
    success_if: SuccessIfOption = None,
    fail_if: FailIfOption = None,
    judge: JudgeOption = None,
    judge_model: JudgeModelOption = None,
    judge_base_url: JudgeBaseUrlOption = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Score stored runs with a verifier and keep each outcome with the verifier that gave it
    (runs that arrived as traces often have none); runs with an outcome are skipped unless
    --force."""
    from otel_replay.fleet import Selection, score_runs

    with user_errors():
        code = user_code(
            resamplers=resamplers, verifier=verifier, success_if=success_if, fail_if=fail_if,
            judge=judge, judge_model=judge_model, judge_base_url=judge_base_url,
        )  # fmt: skip
        _check(code.names_verifier or bool(code.resamplers), bool(ids or where or since), every)
        chosen = Selection(ids=tuple(ids or ()), where=where, since=since)
        with open_store(store, write=True) as db:
            if not chosen.runs(db):
                raise NotFoundError("no stored run matches the selection")
            results = score_runs(db, chosen, code, force=force)
    _show(results, json)


def _check(scoring: bool, chosen: bool, every: bool) -> None:
    """The mistakes said before the store is opened: nothing to score with, no runs named."""
    if not scoring:
        raise SettingError(
            "nothing to score runs with: give --success-if REGEX, --fail-if REGEX, --judge "
            "QUESTION or --verifier module:function"
        )
    if not (chosen or every):
        raise SettingError("name runs (ID...), or choose them with --where, --since or --all")
    if every and chosen:
        raise SettingError("--all is every stored run: give it without IDs, --where or --since")


def _show(results: list[Scored], json: bool) -> None:
    from otel_replay.fleet import ScoreStatus

    if json:
        print_json([result.to_json() for result in results])
    else:
        table = Table(box=box.SIMPLE_HEAD, title="outcomes", pad_edge=False)
        for column in ("run", "outcome", "source", "status"):
            table.add_column(column, overflow="fold")
        for result in results:
            outcome = "—" if result.outcome is None else f"{result.outcome:g}"
            style = "red" if result.failed else None
            status = result.status.value
            if result.status is ScoreStatus.RESCORED:
                before = "—" if result.before is None else f"{result.before:g}"
                status += f" (was {before}, {result.before_source})"
            elif result.error is not None:
                status += f": {result.error}"
            table.add_row(
                shown(result.id[:16]),
                outcome,
                shown(result.source or ""),
                shown(status),
                style=style,
            )
        console.print(table)
        counts = {status: 0 for status in ScoreStatus}
        for result in results:
            counts[result.status] += 1
        scored = counts[ScoreStatus.SCORED] + counts[ScoreStatus.RESCORED]
        failing = sum(bool(r.failed) for r in results if r.status is not ScoreStatus.SKIPPED)
        skipped = counts[ScoreStatus.SKIPPED]
        console.print(
            f"scored {plural(scored, 'run')} ({failing} failing), "
            f"skipped {plural(skipped, 'run')} with an outcome already"
            f"{' (--force scores them again)' if skipped else ''}, "
            f"{counts[ScoreStatus.ERROR]} failed"
            + (
                f", {plural(counts[ScoreStatus.UNFINISHED], 'run')} that never finished left "
                "without one"
                if counts[ScoreStatus.UNFINISHED]
                else ""
            ),
            highlight=False,
        )
    if any(result.status is ScoreStatus.ERROR for result in results):
        sys.exit(1)
