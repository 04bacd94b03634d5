"""The support agent as a DSPy program: ``dspy.ReAct`` over the harness tools; the retrieval run a DSPy RAG
module (``dspy.Retrieve`` over ``dspy.retrievers.Embeddings``, embeddings from the fake server). Instrumented
with OpenInference's DSPy instrumentor and, underneath it, OpenInference's LiteLLM instrumentor (DSPy calls
models through LiteLLM; the embedding calls are visible only there).

DSPy's adapters make the model answer in fields (``[[ ## next_thought ## ]]`` ... ``[[ ## completed ## ]]``,
or a JSON object with the JSON adapter), so `policy` replaces ``fake_models.policy``: it reads the adapter's
prompt back into a plain conversation (the ReAct trajectory as tool calls and tool results), asks the
shared policy for the next turn and writes that turn in the fields the prompt asks for.
"""

from __future__ import annotations

import os
import tempfile

# Before DSPy and LiteLLM are imported: LiteLLM's bundled model cost map (no download), no caches on disk.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_TELEMETRY"] = "False"
os.environ.setdefault("DSPY_CACHEDIR", os.path.join(tempfile.gettempdir(), "dspy-corpus-cache"))

import json
import re
from typing import Any

import dspy
import fake_models
import harness
from openinference.instrumentation.dspy import DSPyInstrumentor
from openinference.instrumentation.litellm import LiteLLMInstrumentor
from opentelemetry.sdk.trace import TracerProvider

SHARED_POLICY = fake_models.policy
FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]")
THOUGHT_FIELDS = ("next_thought", "reasoning")


def instrument(provider: TracerProvider) -> None:
    DSPyInstrumentor().instrument(tracer_provider=provider)
    LiteLLMInstrumentor().instrument(tracer_provider=provider)


# --- the fake model, answering in DSPy's field format ---------------------------------------------------


def _sections(text: str) -> dict[str, str]:
    """``[[ ## name ## ]]`` sections of a prompt (the first of each name), stripped."""
    found: dict[str, str] = {}
    marks = list(FIELD.finditer(text))
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        end = following.start() if following else len(text)
        found.setdefault(mark.group(1), text[mark.end() : end].strip())
    return found


def _output_fields(system: str) -> list[str]:
    block = system.split("Your output fields are:", 1)[-1].split(
        "All interactions will be structured", 1
    )[0]
    return re.findall(r"^\d+\. `(\w+)`", block, re.M)


def _conversation(system: str, user: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The adapter's prompt as the shared policy's conversation: the question, then each trajectory step
    (``tool_name_i`` / ``tool_args_i`` / ``observation_i``) as an assistant tool call and its tool result."""
    steps = _sections(
        user.split("Respond with", 1)[0]
    )  # the trajectory's own fields sit beside the inputs
    messages: list[dict[str, Any]] = [{"role": "user", "content": steps.get("question", user)}]
    index = 0
    while f"tool_name_{index}" in steps:
        name = steps[f"tool_name_{index}"]
        if name != "finish":
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"name": name, "arguments": steps.get(f"tool_args_{index}")}],
                }
            )
            messages.append(
                {"role": "tool", "content": steps.get(f"observation_{index}", ""), "name": name}
            )
        index += 1
    tools = [
        name
        for name in re.findall(r"^\s*\(\d+\) (\w+), whose description", system, re.M)
        if name != "finish"
    ]
    return messages, tools


def policy(messages: list[dict[str, Any]], tools: list[str]) -> dict[str, Any]:
    """The shared support agent's next turn, written in the output fields the DSPy prompt asks for."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    fields = _output_fields(system)
    conversation, offered = _conversation(system, user)
    reply = SHARED_POLICY(conversation, offered if "next_tool_name" in fields else [])
    values: dict[str, Any] = {}
    if "tool_calls" in reply:
        call = reply["tool_calls"][0]
        values = {
            "next_thought": f"I should call {call['name']}.",
            "next_tool_name": call["name"],
            "next_tool_args": call["arguments"],
        }
    elif "next_tool_name" in fields:
        values = {
            "next_thought": "I have what I need to answer.",
            "next_tool_name": "finish",
            "next_tool_args": {},
        }
    else:
        values = {"reasoning": "The gathered information answers the question."}
    for name in fields:
        values.setdefault(name, reply.get("content", ""))
    values = {name: values[name] for name in fields}
    if "Outputs will be a JSON object" in system:  # the JSON adapter
        return {"content": json.dumps(values)}
    parts = [
        f"[[ ## {name} ## ]]\n{json.dumps(value) if isinstance(value, dict) else value}"
        for name, value in values.items()
    ]
    return {"content": "\n\n".join([*parts, "[[ ## completed ## ]]"])}


fake_models.policy = policy


# --- the DSPy programs -------------------------------------------------------------------------------------


def _configure(url: str) -> None:
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    dspy.configure(
        lm=dspy.LM("openai/fake-model", api_base=url + "/v1", api_key="fake", cache=False)
    )


def agent(run: str, url: str) -> Any:
    _configure(url)
    signature = dspy.Signature("question -> answer", harness.SYSTEM_PROMPT)
    react = dspy.ReAct(
        signature,
        tools=[harness.lookup_order, harness.track_shipment, harness.search_policies],
        max_iters=6,
    )
    return react(question=harness.question(run)).answer


class PolicyIndex:
    """A DSPy retrieval model (what ``dspy.Retrieve`` calls) over ``dspy.retrievers.Embeddings``."""

    def __init__(self, url: str) -> None:
        embedder = dspy.Embedder(
            "openai/fake-embedding", api_base=url + "/v1", api_key="fake", caching=False
        )
        self.search = dspy.retrievers.Embeddings(
            corpus=list(fake_models.POLICIES), embedder=embedder, k=1
        )

    def __call__(self, query: str, k: int = 1, **_: Any) -> list[dspy.Prediction]:
        self.search.k = k
        return [dspy.Prediction(long_text=passage) for passage in self.search(query).passages]


class PolicyAnswer(dspy.Module):
    """Retrieve the matching policy, then answer from it."""

    def __init__(self) -> None:
        super().__init__()
        self.retrieve = dspy.Retrieve(k=1)
        self.respond = dspy.Predict(
            dspy.Signature("context: list[str], question -> answer", harness.SYSTEM_PROMPT)
        )

    def forward(self, question: str) -> dspy.Prediction:
        context = self.retrieve(question).passages
        return self.respond(context=context, question=question)


def retrieval(url: str) -> Any:
    _configure(url)
    with dspy.context(rm=PolicyIndex(url)):
        return PolicyAnswer()(question=harness.POLICY_QUESTION).answer


if __name__ == "__main__":
    harness.main(
        "dspy",
        instrument,
        {
            "pass": lambda url: agent("pass", url),
            "tool-error": lambda url: agent("tool-error", url),
            "retrieval": retrieval,
        },
    )
