"""Plans carry the whole intervention algebra (issue 15, part 5): one plan may hold, resample, do,
observe, edit and remove, under a model override, and the engine that Shapley, the repair search
and the adaptive search share rolls it out like any other."""

from __future__ import annotations

from otel_replay.attribution import AttributionConfig
from otel_replay.attribution._engine import Engine
from otel_replay.replay import Intervention, Plan
from otel_replay.replay._plan import HOLD, REMOVE, RESAMPLE
from otel_replay.replay._rollout import rollout
from tests.attribution.models import CHAIN

EDIT = [{"op": "replace", "path": "/messages/0/content", "value": "Choose a long timeout."}]
DONE = {"role": "assistant", "content": "Done."}


def _every_move() -> Plan:
    """On the chain model: 0 plan, 1 read_config, 2 audit_log, 3 decide, 4 apply_config,
    5 summarise."""
    moves = (
        HOLD,
        Intervention.observe({"timeout_s": 30}),
        REMOVE,
        Intervention.edit(EDIT),
        RESAMPLE,
        Intervention.do(DONE),
    )
    return Plan("every-move", moves, model_from=(3, "m2"))


def test_one_plan_holds_every_move_and_each_does_what_it_says() -> None:
    run, registry = CHAIN.trajectory(), CHAIN.registry()
    made = rollout(run, _every_move(), registry, 7, 0).trajectory
    by_index = {s.index: s for s in made.steps}
    assert by_index[0] == run.steps[0]  # held: the record
    assert by_index[1].output == {"timeout_s": 30}  # observed: the call kept, another answer
    assert by_index[1].inputs == run.steps[1].inputs
    assert 2 not in by_index  # removed
    decide = by_index[3]  # edited, run again, and asked of the swapped-in model
    assert decide.inputs["messages"][0]["content"] == "Choose a long timeout."
    assert decide.inputs["model"] == "m2" and decide.output["timeout_s"] == 30
    assert by_index[4].output == {"applied_timeout_s": 30}  # resampled on what came before
    assert by_index[5].output == DONE  # do: the turn's output replaced
    assert registry.verifier is not None and registry.verifier(made) == 1.0


def test_the_engine_runs_such_a_plan_like_any_other() -> None:
    run, registry = CHAIN.trajectory(), CHAIN.registry()
    assert registry.verifier is not None
    engine = Engine(run, registry, registry.verifier, AttributionConfig(seed=3, workers=2))
    plan = _every_move()
    outcomes = engine.run([(plan, 6)])[plan]
    assert [o.failed for o in outcomes] == [False] * 6
    assert engine.step_executions == 6 * 2  # decide (edited) and apply_config (resampled)
    assert plan.describe() == (
        "step 0: hold; step 1: observe; step 2: remove; step 3: edit; step 4: resample; "
        "step 5: do; model turns run again from step 3 on: asked of m2"
    )
