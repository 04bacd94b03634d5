"""The built-in resample functions a `UserCode` names (``--tools``, ``--llm``), added to a registry
the same way for every command that rolls a run out (``attribute``, ``fork``).

Two halves, because attribution ships its work: `tool_draws` reads what ``--tools`` draws from
out of the store, in the process that has the store (the result is data, shipped with the run), and
`add_built_ins` puts the built-ins on a registry wherever the rollouts run. A user's own
registration for the same steps wins: a built-in is added only for a step kind no registration
covers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from otel_replay.errors import RegistrationError, setting
from otel_replay.model import StepKind, Trajectory
from otel_replay.resamplers._anthropic import AnthropicMessagesModel
from otel_replay.resamplers._loading import Loaded, ToolSource, UserCode
from otel_replay.resamplers._openai import ChatModelOptions, ModelSource, OpenAIChatModel
from otel_replay.resamplers._recorded import RecordedOutcomes, recorded_outcomes
from otel_replay.resamplers._registry import Registry
from otel_replay.resamplers._simulate import SimulatedTools
from otel_replay.store import Store


@dataclass
class BuiltIns:
    """What `add_built_ins` added: the model (its client to close when the rollouts are done)
    and what a person should know before paying for its calls."""

    model: OpenAIChatModel | AnthropicMessagesModel | None = None
    notes: list[str] = field(default_factory=list)
    #: the model that plays the tools (``--tools simulate``), when it is not ``model``
    player: OpenAIChatModel | AnthropicMessagesModel | None = None

    def close(self) -> None:
        for client in {id(c): c for c in (self.model, self.player) if c is not None}.values():
            client.close()


def tool_draws(
    code: UserCode, store: Store, trajectory: Trajectory, *, elsewhere: bool = False
) -> RecordedOutcomes | None:
    """What ``code.tools`` draws tool results from, read from ``store`` for ``trajectory``'s
    rollouts (None: ``code`` names no tool source). ``elsewhere``: the rollouts run where the
    store cannot be read (a Ray cluster), so every recorded result of the run's tools is read now
    (`recorded_outcomes`' ``complete``)."""
    if code.tools is None or not ToolSource(code.tools).draws:
        return None
    return recorded_outcomes(
        store, trajectory, fallback=ToolSource(code.tools).fallback, complete=elsewhere
    )


def add_built_ins(
    registry: Registry,
    code: UserCode,
    trajectory: Trajectory,
    draws: RecordedOutcomes | None = None,
    swap_model: str | None = None,
) -> BuiltIns:
    """Add to ``registry`` the built-ins ``code`` names for ``trajectory``'s rollouts: the tool
    results ``draws`` holds (`tool_draws`) for tool steps, the model of ``code.llm`` for model
    steps, and with ``--tools simulate`` that model playing the tools (the recorded draws first
    with ``recorded,simulate``), each only where no registration covers the kind.
    ``swap_model``: the model a swap asks the re-run turns of, which ``code.llm.model`` would
    overrule (an error)."""
    if code.llm is not None and code.llm.model and swap_model is not None:
        raise RegistrationError(
            f"{setting('llm_model', code.llm.model)} would answer every model turn, and "
            f"{setting('swap_model', swap_model)} asks the re-run ones of another model: "
            "give one of them"
        )
    simulates = code.tools is not None and ToolSource(code.tools).simulates
    built = BuiltIns()
    if draws is not None and not simulates and not registry.registered(StepKind.TOOL):
        registry.add_resampler(StepKind.TOOL, draws)
    if code.llm is not None and not registry.registered(StepKind.LLM):
        built.model = chat_model(code.llm)
        registry.add_resampler(StepKind.LLM, built.model)
        built.notes += built.model.notes(trajectory)
    if simulates and code.llm is not None and not registry.registered(StepKind.TOOL):
        # the built-in model's client, or (a registration answers the model turns) one of its own
        player = built.model
        if player is None:
            player = built.player = chat_model(code.llm)
        registry.add_resampler(StepKind.TOOL, SimulatedTools(player, trajectory, draws))
    return built


def chat_model(options: ChatModelOptions) -> OpenAIChatModel | AnthropicMessagesModel:
    """The built-in model ``--llm`` names: an OpenAI-compatible server, or the Messages API."""
    if ModelSource(options.source) is ModelSource.ANTHROPIC:
        return AnthropicMessagesModel(options)
    return OpenAIChatModel(options)


@contextmanager
def rollout_code(
    code: UserCode, store: Store, trajectory: Trajectory, swap_model: str | None = None
) -> Iterator[Loaded]:
    """``code`` loaded for ``trajectory``'s rollouts in this process (`UserCode.load`), with its
    built-ins (`tool_draws` from ``store``, `add_built_ins`); their clients are closed when the
    block ends."""
    loaded = code.load()
    draws = tool_draws(code, store, trajectory)
    built = add_built_ins(loaded.registry, code, trajectory, draws, swap_model)
    try:
        yield loaded
    finally:
        built.close()
