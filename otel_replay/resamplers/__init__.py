"""Resample functions, the verifier and repair-candidate sources, kept on a `Registry`; the
built-ins: an OpenAI-compatible model, recorded tool results, verifiers on the final answer (a
pattern, or a model judging it: `Judge`).

The module-level decorators (`resampler`, `verifier`, `repair_candidates`) register into the current
registry: the process-wide default, or the one a ``with registry.collecting():`` block names (the CLI
loads user modules that way, and tests build their own).

Exports load on first use (`otel_replay._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.resamplers._context import RolloutContext, StepFailed
    from otel_replay.resamplers._judge import Judge, JudgeOptions, JudgeVerdict
    from otel_replay.resamplers._loading import ToolSource, UserCode, load_object, load_registry
    from otel_replay.resamplers._openai import ChatModelOptions, OpenAIChatModel, rebuild_messages
    from otel_replay.resamplers._registry import Registry, repair_candidates, resampler, verifier
    from otel_replay.resamplers._verifiers import answer_verifier

if TYPE_CHECKING:  # lent to the other floors: __inside__
    from otel_replay.resamplers._builtins import BuiltIns as BuiltIns
    from otel_replay.resamplers._builtins import add_built_ins as add_built_ins
    from otel_replay.resamplers._builtins import rollout_code as rollout_code
    from otel_replay.resamplers._builtins import tool_draws as tool_draws
    from otel_replay.resamplers._context import History as History
    from otel_replay.resamplers._context import RolloutSeed as RolloutSeed
    from otel_replay.resamplers._context import standing_in as standing_in
    from otel_replay.resamplers._context import step_seed as step_seed
    from otel_replay.resamplers._context import unrecorded as unrecorded
    from otel_replay.resamplers._draws import NO_DRAWS as NO_DRAWS
    from otel_replay.resamplers._draws import Call as Call
    from otel_replay.resamplers._draws import DrawLog as DrawLog
    from otel_replay.resamplers._draws import Draws as Draws
    from otel_replay.resamplers._draws import current_log as current_log
    from otel_replay.resamplers._draws import drawing as drawing
    from otel_replay.resamplers._draws import noted_call as noted_call
    from otel_replay.resamplers._draws import noted_unanswered as noted_unanswered
    from otel_replay.resamplers._faults import FAILURES as FAILURES
    from otel_replay.resamplers._judge import JudgeSummary as JudgeSummary
    from otel_replay.resamplers._judge import ask_model as ask_model
    from otel_replay.resamplers._judge import judged as judged
    from otel_replay.resamplers._judge import recorded_model as recorded_model
    from otel_replay.resamplers._openai import ModelSource as ModelSource
    from otel_replay.resamplers._openai import server as server
    from otel_replay.resamplers._recorded import RecordedOutcomes as RecordedOutcomes
    from otel_replay.resamplers._recorded import call_of as call_of
    from otel_replay.resamplers._registry import USER_MODULE_PREFIX as USER_MODULE_PREFIX
    from otel_replay.resamplers._registry import Registration as Registration
    from otel_replay.resamplers._registry import VerifierFunction as VerifierFunction
    from otel_replay.resamplers._registry import current_registry as current_registry
    from otel_replay.resamplers._registry import describe as describe
    from otel_replay.resamplers._registry import ways_to_resample as ways_to_resample
    from otel_replay.resamplers._simulate import SimulatedTools as SimulatedTools
    from otel_replay.resamplers._verifiers import AnswerVerifier as AnswerVerifier

__all__ = [
    "ChatModelOptions",
    "Judge",
    "JudgeOptions",
    "JudgeVerdict",
    "OpenAIChatModel",
    "Registry",
    "RolloutContext",
    "StepFailed",
    "ToolSource",
    "UserCode",
    "answer_verifier",
    "load_object",
    "load_registry",
    "rebuild_messages",
    "repair_candidates",
    "resampler",
    "verifier",
]

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "FAILURES",
    "NO_DRAWS",
    "USER_MODULE_PREFIX",
    "AnswerVerifier",
    "BuiltIns",
    "Call",
    "DrawLog",
    "Draws",
    "History",
    "JudgeSummary",
    "ModelSource",
    "RecordedOutcomes",
    "Registration",
    "RolloutSeed",
    "SimulatedTools",
    "VerifierFunction",
    "add_built_ins",
    "ask_model",
    "call_of",
    "current_log",
    "current_registry",
    "describe",
    "drawing",
    "judged",
    "noted_call",
    "noted_unanswered",
    "recorded_model",
    "rollout_code",
    "server",
    "standing_in",
    "step_seed",
    "tool_draws",
    "unrecorded",
    "ways_to_resample",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
