"""`attribute_stored`: attribute a stored run with the user's code, as ``agent-replay attribute`` does."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from otel_replay.attribution._api import attribute
from otel_replay.attribution._config import AttributionConfig, Driver
from otel_replay.attribution._cost import PlannedCost, planned_cost
from otel_replay.attribution._engine import Progress, Spending
from otel_replay.attribution._results import AttributionResult
from otel_replay.errors import AttributionError
from otel_replay.model import StepKind, Trajectory
from otel_replay.replay import Plan, Rollout, agent_driver, chat_driver, instrument
from otel_replay.resamplers import (
    OpenAIChatModel,
    Registry,
    ToolSource,
    UserCode,
    load_object,
    recorded_outcomes,
)
from otel_replay.store import Store


def attribute_stored(
    store: Store,
    id_or_prefix: str,
    config: AttributionConfig,
    code: UserCode,
    progress: Progress | None = None,
    spending: Spending | None = None,
) -> AttributionResult:
    """Load ``code`` (its mistakes are reported before anything runs), then the run, then attribute
    it: by re-running ``code.agent`` under the replay context when one is named, else by walking
    the record with the registered resample functions (with ``code.tools``, a built-in one for the
    tool steps no registration covers: a user's own wins)."""
    prepared = _prepare(store, id_or_prefix, config, code)
    try:
        result = attribute(
            prepared.trajectory, prepared.registry, config, progress, prepared.driver, spending
        )
    finally:
        if prepared.model is not None:
            prepared.model.close()
    return dataclasses.replace(result, notes=(*result.notes, *prepared.notes), driver=prepared.how)


def planned_cost_stored(
    store: Store, id_or_prefix: str, config: AttributionConfig, code: UserCode
) -> tuple[PlannedCost, str]:
    """What `attribute_stored` would cost (rollouts, resample-function calls), and how it would
    roll out, without running anything (``agent-replay attribute --dry-run``)."""
    prepared = _prepare(store, id_or_prefix, config, code)
    if prepared.model is not None:
        prepared.model.close()
    driven = prepared.driver is not None
    return planned_cost(prepared.trajectory, prepared.registry, config, driven), prepared.how


@dataclass
class _Prepared:
    trajectory: Trajectory
    registry: Registry
    driver: Callable[[Plan, int], Rollout] | None
    how: str
    notes: list[str]
    model: OpenAIChatModel | None


def _prepare(
    store: Store, id_or_prefix: str, config: AttributionConfig, code: UserCode
) -> _Prepared:
    registry = code.registry()
    trajectory = store.get(id_or_prefix)
    if code.tools is ToolSource.RECORDED and not registry.registered(StepKind.TOOL):
        registry.add_resampler(StepKind.TOOL, recorded_outcomes(store, trajectory))
    notes: list[str] = []
    model = None
    if code.llm is not None and not registry.registered(StepKind.LLM):
        model = OpenAIChatModel(code.llm)
        registry.add_resampler(StepKind.LLM, model)
        notes += model.notes(trajectory)
    driver: Callable[[Plan, int], Rollout] | None = None
    how = "trace" if not code.agent else f"agent:{code.agent}"
    if code.agent:
        if code.instrument:
            instrument(*code.instrument)
        driver = agent_driver(trajectory, load_object(code.agent, "--agent"), registry, config.seed)
    elif config.driver is not Driver.TRACE:
        chat = chat_driver(trajectory, registry, config.seed, config.max_turns)
        if chat is None and config.driver is Driver.CHAT:
            raise AttributionError(
                f"run {trajectory.id} is not a tool-calling chat (model steps with messages whose "
                "turns ask for the tool steps that follow them); use --driver trace"
            )
        if chat is not None:
            driver, trajectory = chat
            how = "chat: a tool-calling chat, re-driven as its loop"
        else:
            how = "trace: not a tool-calling chat, so the record is walked"
    return _Prepared(trajectory, registry, driver, how, notes, model)
