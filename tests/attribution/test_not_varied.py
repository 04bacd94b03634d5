"""A step resampling cannot vary is "not varied", never "no effect" (issue 38, part 2).

A scheduling assistant's failing run, built with the library and stored alone::

    0 llm   gpt-test        asks get_free_slots(email=ann@example.com, date=2026-03-02)
    1 tool  get_free_slots  {"slots": []}                      <- what made the run fail
    2 llm   gpt-test        "Sorry, nothing is free that day."

Attributed as a new user does, with no code: ``--tools recorded --llm openai --success-if Booked``,
the model played by a loopback server (`examples.fake_model_server`) that books whatever slot
the tool returned and apologises when there is none. Alone in its store, the run's
``get_free_slots`` call has one recorded result, its own: drawing from the store can only give it
back, so step 1 was never varied, and the model turns, varied, change nothing. The answer must be
"cannot tell" naming step 1 and why, not "settled" with step 1 "no effect". With a second stored
run that made the same call and was answered a free slot, step 1 is varied and is the culprit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from examples.fake_model_server import FakeModelServer, replying
from otel_replay import Step, StepKind, Trajectory
from otel_replay.attribution import (
    AttributionConfig,
    Driver,
    Strategy,
    Verdict,
    attribute,
    attribute_stored,
)
from otel_replay.attribution._variation import Variation
from otel_replay.report import REPORT_SCHEMA, html_report
from otel_replay.resamplers import Registry, RolloutContext, UserCode
from otel_replay.resamplers._loading import ToolSource
from otel_replay.resamplers._recorded import recorded_outcomes
from otel_replay.store import Store
from tests.cli_helpers import invoke, ok

FAILING = "schedule-no-slots"
PASSING = "schedule-booked"
TOOL = 1  # the get_free_slots step
ARGUMENTS = {"email": "ann@example.com", "date": "2026-03-02"}
HELD = (
    "the store holds only this run's result for "
    'get_free_slots(date="2026-03-02", email="ann@example.com")'
)

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_free_slots",
            "description": "Free 30-minute slots in a person's calendar on a day.",
            "parameters": {
                "type": "object",
                "properties": {"email": {"type": "string"}, "date": {"type": "string"}},
            },
        },
    }
]
_USER = {"role": "user", "content": "Book 30 minutes with ann@example.com on 2026-03-02."}


def _ask(call_id: str) -> dict[str, Any]:
    call = {"name": "get_free_slots", "arguments": json.dumps(ARGUMENTS)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": call}],
    }


def _run(run_id: str, slots: list[str], answer: str, outcome: float) -> Trajectory:
    """The assistant's run: it asks for the free slots, is answered ``slots``, and says ``answer``."""
    result = {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"slots": slots})}
    return Trajectory.build(
        run_id,
        [
            Step(
                StepKind.LLM,
                "gpt-test",
                {"model": "gpt-test", "messages": [_USER], "tools": _TOOLS},
                _ask("call_1"),
            ),
            Step(
                StepKind.TOOL,
                "get_free_slots",
                {"arguments": ARGUMENTS, "tool_call_id": "call_1"},
                {"slots": slots},
            ),
            Step(
                StepKind.LLM,
                "gpt-test",
                {"model": "gpt-test", "messages": [_USER, _ask("call_1"), result], "tools": _TOOLS},
                {"role": "assistant", "content": answer},
            ),
        ],
        outcome=outcome,
    )


def _assistant(body: dict[str, Any]) -> dict[str, Any]:
    """The model: asks for the slots, then books the first one it was given, or apologises."""
    last = body["messages"][-1]
    if last.get("role") != "tool":
        return _ask(f"call_{len(body['messages'])}")
    slots = json.loads(last["content"]).get("slots") or []
    if slots:
        return {"role": "assistant", "content": f"Booked {slots[0]} with ann@example.com."}
    return {"role": "assistant", "content": "Sorry, nothing is free that day."}


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    with FakeModelServer(replying(_assistant)) as server:
        yield server


def _store(path: Path, *, with_passing: bool) -> None:
    with Store.open(path) as store:
        store.put(_run(FAILING, [], "Sorry, nothing is free that day.", 0.0))
        if with_passing:
            store.put(_run(PASSING, ["09:00"], "Booked 09:00 with ann@example.com.", 1.0))


def _command(model: FakeModelServer, *more: str) -> list[str]:
    return [
        "attribute", FAILING, "--tools", "recorded", "--llm", "openai",
        "--llm-base-url", model.base_url, "--success-if", "Booked", "--seed", "3", *more,
    ]  # fmt: skip


def test_a_lone_run_whose_tool_has_only_its_own_result_cannot_tell(
    runner: CliRunner, store_path: Path, model: FakeModelServer, tmp_path: Path
) -> None:
    _store(store_path, with_passing=False)
    page = tmp_path / "report.html"
    result = ok(invoke(runner, store_path, *_command(model, "--json", "--out", str(page))))
    report = orjson.loads(result.stdout)
    Draft202012Validator(REPORT_SCHEMA).validate(report)
    assert report["verdict"] == "cannot-tell", report["explanation"]
    assert report["point_of_commitment"] is None
    explanation = report["explanation"]
    assert explanation.startswith("Cannot tell")
    assert "step 1 (tool get_free_slots)" in explanation and HELD in explanation
    assert "a resample function for get_free_slots" in explanation
    assert "more stored runs that made the same call" in explanation
    step = report["steps"][TOOL]
    assert step["varied"] is False and step["variation"] == HELD
    assert step["no_effect"] is None and step["tests"] is None and not step["estimated"]
    for other in (0, 2):  # the model turns were varied, and change nothing
        assert report["steps"][other]["varied"] is True
        assert report["steps"][other]["variation"] == "the built-in model, asked again"
    # no plan was built around step 1: every rollout resampled a model turn
    assert report["cost"]["rollouts"] > 0 and step["p_fail_ablated"] is None
    assert not any(t.get("from_step") == TOOL for t in report.get("search") or [])
    # the first lines, on stderr before any rollout, say what can be varied and what cannot
    said = result.stderr
    assert "2 of 3 steps can be varied by resampling" in said
    assert f"step 1 (tool get_free_slots): not varied: {HELD}" in said
    assert "steps 0, 2 (llm): varied by the built-in model, asked again" in said
    text = page.read_text()
    assert "Cannot tell" in text and "not varied" in text and "no effect" not in _row(text, TOOL)


def test_the_table_says_not_varied_and_never_no_effect(
    runner: CliRunner, store_path: Path, model: FakeModelServer
) -> None:
    _store(store_path, with_passing=False)
    output = ok(invoke(runner, store_path, *_command(model))).stdout
    first = output.index("can be varied by resampling")
    assert first < output.index("failure attribution of")  # told before the rollouts' table
    row = next(line for line in output.splitlines() if re.match(r"\s*1\s+tool\s+get_free", line))
    assert "not varied" in row and "no effect" not in row, row
    assert "cannot-tell:" in output and "settled" not in output


def test_a_second_stored_run_with_another_result_varies_the_step_and_names_it(
    runner: CliRunner, store_path: Path, model: FakeModelServer
) -> None:
    _store(store_path, with_passing=True)
    result = ok(invoke(runner, store_path, *_command(model, "--json")))
    report = orjson.loads(result.stdout)
    step = report["steps"][TOOL]
    assert step["varied"] is True, step
    assert step["variation"] == (
        '2 distinct recorded results for get_free_slots(date="2026-03-02", '
        'email="ann@example.com") (from 2 stored runs)'
    )
    assert report["verdict"] == "culprit", report["explanation"]
    assert report["point_of_commitment"] == TOOL
    assert "not varied" not in result.stderr


def test_dry_run_says_which_steps_can_be_varied_before_any_model_call(
    runner: CliRunner, store_path: Path, model: FakeModelServer
) -> None:
    _store(store_path, with_passing=False)
    text = ok(invoke(runner, store_path, *_command(model, "--dry-run"))).stdout
    assert f"step 1 (tool get_free_slots): not varied: {HELD}" in text
    as_json = orjson.loads(
        ok(invoke(runner, store_path, *_command(model, "--dry-run", "--json"))).stdout
    )
    assert [(s["index"], s["varied"]) for s in as_json["steps"]] == [
        (0, True),
        (1, False),
        (2, True),
    ]
    assert as_json["steps"][TOOL]["how"] == HELD
    assert model.requests == []  # nothing was asked of the model


def test_plans_that_resample_only_steps_that_cannot_vary_are_never_run(store_path: Path) -> None:
    """Without the model (``--tools recorded`` alone), the only step a function covers is the held
    call: no rollout runs, and the answer names it."""
    _store(store_path, with_passing=False)
    code = UserCode(tools=ToolSource.RECORDED, success_if="Booked")
    told: list[tuple[Variation, ...]] = []
    with Store.open(store_path) as store:
        result = attribute_stored(
            store,
            FAILING,
            AttributionConfig(seed=1),
            code,
            told=lambda found, run: told.append(found),
        )
    assert result.rollouts == 0
    assert result.verdict is Verdict.CANNOT_TELL
    assert (
        HELD in result.explanation
        and "no step resampling could vary was tried" in result.explanation
    )
    ((llm, tool, answer),) = told
    assert (llm.varied, tool.varied, answer.varied) == (False, False, False)
    assert tool.blocks and not llm.blocks  # the model turns are observed-only: no function
    assert llm.how == "observed-only: no resample function for llm gpt-test"
    step = result.steps[TOOL]
    assert step.varied is False and step.no_effect is None and step.attribution is None
    html = html_report(orjson.loads(_report(result)))
    assert "not varied" in html


def _report(result: Any) -> bytes:
    from otel_replay.report import build_report, dumps_report

    return dumps_report(build_report(result, AttributionConfig(seed=1)))


def _row(page: str, index: int) -> str:
    """The attribution table's row of step ``index`` on the HTML page."""
    start = page.index(
        '<tr class="', page.index(f'data-step="{index}"><td class="mono">#{index}') - 40
    )
    return page[start : page.index("</tr>", start)]


def _lookup(step: Step, ctx: RolloutContext) -> str:
    """The lookup, resampled: the right record half the time."""
    return str(ctx.rng.choice(["good", "bad"]))


def _good(run: Trajectory) -> float:
    return 1.0 if run.steps[0].output == "good" else 0.0


def _notify_run(run_id: str, sent: str, lookup: str = "bad") -> Trajectory:
    return Trajectory.build(
        run_id,
        [
            Step(StepKind.TOOL, "lookup", {"arguments": {"q": "ann"}}, lookup),
            Step(StepKind.TOOL, "notify", {"arguments": {"to": "ann"}}, sent),
        ],
        outcome=1.0 if lookup == "good" else 0.0,
    )


@pytest.mark.parametrize("other_result", [None, "bounced", "sent"])
def test_a_culprit_with_a_later_step_that_was_not_varied_cannot_be_named(
    store_path: Path, other_result: str | None
) -> None:
    """Step 0 matters (resampled, it saves the run half the time). With step 1 held (the store has
    only this run's notify result) the commitment may lie at step 1 too: cannot tell, step 0 the
    bracket's start. With another stored run answered otherwise, step 1 is varied, shown to have no
    effect, and step 0 is the culprit. With another stored run answered the same, step 1 is not
    varied but held as the recorded world answers it: the culprit is named, and the step beside it."""
    run = _notify_run("notify-held", "sent")
    with Store.open(store_path) as store:
        store.put(run)
        if other_result is not None:
            store.put(_notify_run("notify-other", other_result, lookup="good"))
        registry = Registry()
        registry.add_resampler(StepKind.TOOL, recorded_outcomes(store, run))
        registry.add_resampler(StepKind.TOOL, _lookup, name="lookup")
        registry.set_verifier(_good)
        result = attribute(run, registry, AttributionConfig(seed=5, driver=Driver.TRACE))
    step = result.steps[1]
    if other_result is None:
        assert result.verdict is Verdict.CANNOT_TELL, result.explanation
        assert result.point_of_commitment is None and result.bracket == (0, 1)
        assert step.varied is False and step.no_effect is None and step.attribution is None
        assert result.explanation.startswith("Cannot tell: step 0 (tool lookup) is shown to matter")
        held = 'step 1 (tool notify): the store holds only this run\'s result for notify(to="ann")'
        assert held in result.explanation
        assert "no effect" not in result.explanation.split("Not varied:")[1]
        assert result.steps[0].significant
    elif other_result == "bounced":
        assert result.verdict is Verdict.CULPRIT, result.explanation
        assert result.point_of_commitment == 0
        assert step.varied is True and (step.no_effect is True or step.band is not None)
    else:  # both stored runs were answered "sent": the recorded world answers the call one way
        assert result.verdict is Verdict.CULPRIT, result.explanation
        assert result.point_of_commitment == 0
        assert step.varied is False and step.no_effect is None and step.attribution is None
        said = 'all 2 stored runs that called notify(to="ann") were answered the same'
        assert step.variation == said
        assert (
            f"Not varied, held as the stored runs were answered: step 1 (tool notify): {said}"
            in (result.explanation)
        )


def test_a_root_cause_with_an_earlier_step_that_was_not_varied_stays_open(
    store_path: Path,
) -> None:
    """The notification first, then the lookup that matters: the culprit (the latest step that
    matters, nothing after it) is named, but "every earlier step shown not to matter" would rest
    on the held notification, so the root cause stays open, saying why."""
    run = Trajectory.build(
        "notify-first",
        [
            Step(StepKind.TOOL, "notify", {"arguments": {"to": "ann"}}, "sent"),
            Step(StepKind.TOOL, "lookup", {"arguments": {"q": "ann"}}, "bad"),
        ],
        outcome=0.0,
    )

    def good(made: Trajectory) -> float:
        return 1.0 if made.steps[1].output == "good" else 0.0

    with Store.open(store_path) as store:
        store.put(run)
        registry = Registry()
        registry.add_resampler(StepKind.TOOL, recorded_outcomes(store, run))
        registry.add_resampler(StepKind.TOOL, _lookup, name="lookup")
        registry.set_verifier(good)
        config = AttributionConfig(seed=2, driver=Driver.TRACE, strategy=Strategy.FIXED)
        result = attribute(run, registry, config)
    assert result.verdict is Verdict.CULPRIT and result.point_of_commitment == 1
    root = result.root_cause
    assert root is not None and root.index is None and root.bracket == (0, 1)
    assert "step 0 (tool notify): the store holds only this run's result" in root.why
    assert "undecided: an earlier step was not varied" in result.explanation


def test_a_run_nothing_of_can_be_varied_cannot_tell_and_runs_nothing(
    runner: CliRunner, store_path: Path
) -> None:
    """No model to ask and every call answered alike by every stored run: nothing can be varied,
    so no rollout is run, and the answer says so and what would vary the steps (never "Shapley
    credit only", never a verdict about steps it never varied)."""
    with Store.open(store_path) as store:
        store.put(_run(FAILING, [], "Sorry, nothing is free that day.", 0.0))
        store.put(_run("schedule-no-slots-again", [], "Sorry, nothing is free that day.", 0.0))
    result = ok(
        invoke(runner, store_path, "attribute", FAILING, "--tools", "recorded", "--success-if",
               "Booked", "--json")
    )  # fmt: skip
    report = orjson.loads(result.stdout)
    assert report["verdict"] == "cannot-tell", report["explanation"]
    assert report["explanation"].startswith("Cannot tell: no step of this run can be varied")
    assert "get_free_slots" in report["explanation"] and "Shapley" not in report["explanation"]
    assert report["cost"]["rollouts"] == 0
