"""The incident investigator's tools and model, as resample functions for its recorded runs
(``sample_traces/``, and runs of ``openai_app.py`` recorded with ``--instrument openai``).

Use them with ``agent-replay attribute ID --resamplers examples/incident/tools.py --success-if v841``.
The runs are tool-calling chats, so rollouts re-drive them as their loop (the chat-loop driver): each
function is given the call of *this* rollout — the model the conversation so far, a tool the
arguments the model asked for — and answers "what else could this step have returned?":

* the model is the rule-based investigator itself, asked again with the rollout's conversation, so
  it reacts when an earlier tool result changed;
* ``list_deploys`` is a flaky deploy API: one call in four comes back empty (the fault behind the
  failing sample run), otherwise it returns the real deploy list;
* ``query_metrics`` and ``search_logs`` are deterministic lookups in the example world.

A run succeeds when its final answer names deploy ``v841``: ``--success-if v841`` on the command
line; the verifier below says the same in code (``fork`` scores forks with it). The repair search
also tries single-deploy lists (``smaller_deploy_lists``), smaller changes than the whole list a
successful rollout returns.
"""

from __future__ import annotations

from typing import Any

from otel_replay import Step, Trajectory, conversation
from otel_replay.resamplers import RolloutContext, repair_candidates, resampler, verifier

from .model import respond
from .world import EMPTY_DEPLOYS_RATE
from .world import list_deploys as real_list_deploys
from .world import query_metrics as real_query_metrics
from .world import search_logs as real_search_logs

CULPRIT = "v841"


@resampler("llm")
def investigator(step: Step, ctx: RolloutContext) -> Any:
    # the conversation in the store's shape, however it was recorded (`openai_app.py`'s runs hold
    # the OpenAI SDK's own messages)
    return respond(conversation(step.inputs))


@resampler("tool", name="list_deploys")
def flaky_list_deploys(step: Step, ctx: RolloutContext) -> Any:
    if ctx.rng.random() < EMPTY_DEPLOYS_RATE:
        return []
    return real_list_deploys(**step.inputs["arguments"])


@resampler("tool", name="query_metrics")
def metrics(step: Step, ctx: RolloutContext) -> Any:
    return real_query_metrics(**step.inputs["arguments"])


@resampler("tool", name="search_logs")
def logs(step: Step, ctx: RolloutContext) -> Any:
    return real_search_logs(**step.inputs["arguments"])


@repair_candidates
def smaller_deploy_lists(step: Step, factual: Trajectory) -> list[Any]:
    """Smaller changes than the full deploy list: each recent deploy on its own."""
    if step.name != "list_deploys":
        return []
    service = (step.inputs.get("arguments") or {}).get("service", "checkout")
    return [[deploy] for deploy in real_list_deploys(service)]


@verifier
def names_the_bad_deploy(trajectory: Trajectory) -> float:
    answer = trajectory.final_answer
    return 1.0 if answer is not None and CULPRIT in answer else 0.0
