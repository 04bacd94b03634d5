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

__getattr__, __dir__ = lazy_exports(__name__, __all__)
