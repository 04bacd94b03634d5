"""An OpenAI-compatible model as a resample function: ``--llm openai``.

Any server speaking ``/v1/chat/completions`` will do (OpenAI, vLLM, Ollama, LiteLLM, ...); a step
recorded through the Responses API (its inputs are ``input`` items and ``instructions``) is asked
again in that API (``/v1/responses``), so a run is re-asked in the API it was recorded in. A model
step is asked again with the conversation of *this* rollout (`rebuild_messages`), the recorded tools
and parameters, and the model (the recorded one unless another is named) at the requested
temperature; the reply becomes the step's output in the importer's message shape. The ``openai``
client is an optional extra (``pip install 'otel-replay[openai]'``), imported only when used; its
retries with backoff cover rate limits and server errors, and a request that still fails raises an
error naming the server and what it said (the rollout engine adds the step).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from otel_replay._extras import install_command
from otel_replay._web import Bounds, shown_url
from otel_replay.errors import PluginLoadError, RegistrationError, setting
from otel_replay.messages import (
    assistant_message,
    conversation,
    message_text,
    wire_tool_calls,
)
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.resamplers._bounded import MAX_MODEL_ANSWER_BYTES, bounded_client, gave_up
from otel_replay.resamplers._context import RolloutContext
from otel_replay.resamplers._draws import noted_tokens
from otel_replay.transcript import chained, rebuilt

#: The usage counts of a chat completion, and of a response (and an Anthropic message).
_CHAT_USAGE = ("prompt_tokens", "completion_tokens")
RESPONSES_USAGE = ("input_tokens", "output_tokens")
#: Recorded request parameters passed on to the model (the temperature is the resampler's own).
_PARAMETERS = ("max_tokens", "top_p", "stop", "presence_penalty", "frequency_penalty")


class ModelSource(str, Enum):
    """Which built-in model ``--llm`` names."""

    OPENAI = "openai"  # any OpenAI-compatible server: chat completions, or the Responses API
    ANTHROPIC = "anthropic"  # the Anthropic Messages API (`otel_replay.resamplers._anthropic`)


@dataclass(frozen=True, slots=True)
class ChatModelOptions:
    """
    Attributes:
        base_url: the server (``…/v1``); default ``$OPENAI_BASE_URL``, else OpenAI's (for
            ``source`` anthropic: the server's root, default ``$ANTHROPIC_BASE_URL``, else
            Anthropic's).
        model: the model to ask; default the recorded one.
        temperature: 1.0 by default: at 0 a model answers the same every time, and resampling it
            changes nothing.
        max_retries: retries (with backoff) of a rate-limited or failed request.
        timeout_s: how long one request may take, its answer whole (its answer holds at most
            32 MiB).
        source: which API the model speaks (``--llm openai`` or ``--llm anthropic``).
    """

    base_url: str | None = None
    model: str | None = None
    temperature: float = 1.0
    max_retries: int = 4
    timeout_s: float = 60.0
    source: ModelSource = ModelSource.OPENAI

    def flags(self) -> list[str]:
        flags = ["--llm", ModelSource(self.source).value]
        if self.base_url:
            flags += ["--llm-base-url", self.base_url]
        if self.model:
            flags += ["--llm-model", self.model]
        return [*flags, "--llm-temperature", f"{self.temperature:g}"]


class OpenAIChatModel:
    """The resample function of ``--llm openai``."""

    def __init__(self, options: ChatModelOptions) -> None:
        self.options = options
        self.base_url = server(options.base_url, setting("llm", "openai"))
        self._client, self._errors = openai_client(
            self.base_url, setting("llm", "openai"), options.max_retries, options.timeout_s
        )
        self.__qualname__ = (
            f"openai_chat(model={options.model or 'recorded'}, temperature={options.temperature:g})"
        )
        self.__module__ = "builtin"

    def __call__(self, step: Step, ctx: RolloutContext) -> Any:
        said = rebuild_messages(step, ctx.history, ctx.live)
        if asked_in_responses(recorded_request(step, ctx).inputs):
            return self._respond(step, said)
        request: dict[str, Any] = {
            "model": self.options.model or step.inputs.get("model") or step.name,
            "messages": [_openai_message(m) for m in said],
            "temperature": self.options.temperature,
        }
        tools = step.inputs.get("tools")
        if isinstance(tools, list) and tools:
            request["tools"] = [_openai_tool(t) for t in tools]
        parameters = step.inputs.get("parameters")
        if isinstance(parameters, dict):
            request.update({k: parameters[k] for k in _PARAMETERS if k in parameters})
        try:
            response = self._client.chat.completions.create(**request)
        except self._errors as exc:
            raise RuntimeError(failed_request(self.base_url, exc)) from None
        noted_usage(response, _CHAT_USAGE)  # a server that counts them (most do)
        choice = response.choices[0]
        return {**_message(choice.message, choice.finish_reason), "model": request["model"]}

    def _respond(self, step: Step, said: list[dict[str, Any]]) -> Any:
        """Ask the Responses API, as the step was asked: the conversation as input items."""
        instructions, items = response_items(said)
        request: dict[str, Any] = {
            "model": self.options.model or step.inputs.get("model") or step.name,
            "input": items,
            "temperature": self.options.temperature,
        }
        if instructions:
            request["instructions"] = instructions
        tools = step.inputs.get("tools")
        if isinstance(tools, list) and tools:
            request["tools"] = [_responses_tool(t) for t in tools]
        parameters = step.inputs.get("parameters")
        if isinstance(parameters, dict) and "max_output_tokens" in parameters:
            request["max_output_tokens"] = parameters["max_output_tokens"]
        try:
            response = self._client.responses.create(**request)
        except self._errors as exc:
            raise RuntimeError(failed_request(self.base_url, exc)) from None
        noted_usage(response, RESPONSES_USAGE)
        reply = assistant_message(response.model_dump(mode="json", exclude_none=True))
        message = reply if reply is not None else {"role": "assistant", "content": None}
        return {**message, "model": request["model"]}

    def ask(
        self, model: str, system: str, user: str, responses: bool = False
    ) -> tuple[str, int | None]:
        """One question outside any conversation of the run (a tool it plays), of ``model`` unless
        another is named, in chat completions or (``responses``: the API the run was recorded in)
        the Responses API: the reply's text, and the tokens the server counted (None: unsaid)."""
        model = self.options.model or model
        try:
            if responses:
                answer = self._client.responses.create(
                    model=model,
                    instructions=system,
                    input=user,
                    temperature=self.options.temperature,
                )
                reply = assistant_message(answer.model_dump(mode="json", exclude_none=True))
                text = message_text((reply or {}).get("content") or "")
                counts = RESPONSES_USAGE
            else:
                answer = self._client.chat.completions.create(
                    model=model,
                    messages=[
                        {"role": "system", "content": system},
                        {"role": "user", "content": user},
                    ],
                    temperature=self.options.temperature,
                )
                text = str(answer.choices[0].message.content or "")
                counts = _CHAT_USAGE
        except self._errors as exc:
            raise RuntimeError(failed_request(self.base_url, exc)) from None
        return text, counted_tokens(answer, counts)

    def close(self) -> None:
        """Close the client's connections."""
        self._client.close()

    def notes(self, trajectory: Trajectory) -> list[str]:
        """What a person should know before paying for the calls: a temperature of 0."""
        if self.options.temperature == 0:
            return [
                "--llm-temperature 0: the model answers the same every time; resampling it "
                "changes nothing"
            ]
        recorded = {
            s.inputs.get("parameters", {}).get("temperature")
            for s in trajectory.steps
            if s.kind is StepKind.LLM and isinstance(s.inputs.get("parameters"), dict)
        }
        if 0 in recorded:
            return [
                f"the run was recorded at temperature 0; resampling asks at "
                f"{self.options.temperature:g}"
            ]
        return []


def counted_tokens(response: Any, names: tuple[str, str]) -> int | None:
    """The tokens a response's ``usage`` counts under ``names`` (input, output), added up; None
    when the server did not count both."""
    usage = getattr(response, "usage", None)
    spent = [getattr(usage, name, None) for name in names]
    if all(isinstance(n, int) for n in spent):
        return sum(n for n in spent if isinstance(n, int))
    return None


def noted_usage(response: Any, names: tuple[str, str]) -> None:
    """The rollout's log notes the tokens a model call used, when its server counted them."""
    tokens = counted_tokens(response, names)
    if tokens is not None:
        noted_tokens(tokens)


def server(base_url: str | None, needed_by: str, named_by: str = "") -> str | None:
    """The server a built-in model asks: ``base_url``, else ``$OPENAI_BASE_URL``, else OpenAI's
    API (None) when ``$OPENAI_API_KEY`` says that is meant. With none of the three nothing could
    answer, so it is a `RegistrationError` naming what needs the server (``needed_by``) and the
    settings that name one (``named_by``, then the model's ``llm_base_url``), raised before any
    rollout rather than once per rollout."""
    found = base_url or os.environ.get("OPENAI_BASE_URL")
    if found or os.environ.get("OPENAI_API_KEY"):
        return found
    named = f"{named_by} or " if named_by else ""
    raise RegistrationError(
        f"{needed_by} asks an OpenAI-compatible server and none is named: give "
        f"{named}{setting('llm_base_url', 'URL', text='URL')} or set OPENAI_BASE_URL (a local or "
        "self-hosted server), or set OPENAI_API_KEY (OpenAI's API)"
    )


def openai_client(
    base_url: str | None, needed_by: str, max_retries: int, timeout_s: float
) -> tuple[Any, tuple[type[Exception], ...]]:
    """An ``openai.OpenAI`` client for ``base_url`` (None: OpenAI's API), and the errors a failed
    request raises; without the optional extra, a `PluginLoadError` naming ``needed_by``."""
    try:
        import openai
    except ImportError:
        raise PluginLoadError(
            f"{needed_by} needs the openai client: {install_command('openai')}"
        ) from None
    client = openai.OpenAI(
        base_url=base_url,
        api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",
        max_retries=max_retries,
        timeout=timeout_s,
        http_client=bounded_client(Bounds(timeout_s, timeout_s, MAX_MODEL_ANSWER_BYTES), "openai"),
    )
    return client, (openai.APIStatusError, openai.APIConnectionError)


def failed_request(base_url: str | None, exc: Exception) -> str:
    """What a request that still failed after its retries ran into: the server, and what it said
    (or the bound it was given up at: its deadline, its size cap)."""
    bound = gave_up(exc)
    if bound is not None:
        return f"{shown_url(base_url) if base_url else 'the OpenAI API'} {bound.limit}: gave up"
    status = getattr(exc, "status_code", None)
    said = f"answered {status}" if status is not None else "could not be reached"
    return f"{base_url or 'the OpenAI API'} {said}: {_reason(exc)}"


def _reason(exc: Exception) -> str:
    """What the server said: its error message when it sent one."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


def rebuild_messages(
    step: Step, history: Sequence[Step], live: bool = False
) -> list[dict[str, Any]]:
    """The conversation a model step sees in this rollout: the one its inputs hold when a live
    agent (or the chat loop) just sent it (``live``), or while the run so far is the record;
    otherwise its opening messages (everything before the first model turn), then what each step of
    ``history`` said as it happened in this rollout (`otel_replay.transcript.rebuilt`)."""
    # whichever API's shape it was recorded in; a Responses API call that continues an earlier
    # response, after that response's conversation (what the server kept of the chain)
    messages = chained(step, history) or conversation(step.inputs)
    if live or all(s.hash for s in history):  # the conversation as sent now, or as recorded
        return messages
    opening = []
    for message in messages:
        if message.get("role") == "assistant":
            break
        opening.append(message)
    return rebuilt(opening, history)


def recorded_request(step: Step, ctx: RolloutContext) -> Step:
    """The model call whose API a re-asked turn speaks: the recorded step it stands in for, else
    the run's first model call (a turn off the record, which the chat loop builds as messages),
    else the call itself."""
    if ctx.recorded is not None:
        return ctx.recorded
    first = next((s for s in ctx.factual.steps if s.kind is StepKind.LLM), None)
    return first if first is not None else step


def asked_in_responses(inputs: dict[str, Any]) -> bool:
    """Whether a model call was made through the Responses API: its request's ``input`` items (at
    the top, or under ``parameters`` where ``--instrument`` keeps them) in place of chat
    ``messages``, or, in a call a trace gave as messages, what only that API has beside them
    (``instructions``, or a ``resp_`` response id among the parameters the instrumentation kept)."""
    parameters = inputs.get("parameters")
    kept = parameters if isinstance(parameters, dict) else {}
    if not isinstance(inputs.get("messages"), list):
        return "input" in inputs or "input" in kept
    response = kept.get("id")
    return "instructions" in kept or (isinstance(response, str) and response.startswith("resp_"))


def response_items(said: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """A conversation in the store's shape as the Responses API's ``instructions`` (the system
    messages) and ``input`` items: messages, an assistant turn's calls as ``function_call`` items,
    tool results as ``function_call_output`` items."""
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for message in said:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            system.append(message_text(content))
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": str(message.get("tool_call_id") or ""),
                    "output": message_text(content),
                }
            )
        elif role == "assistant":
            if content:
                items.append({"role": "assistant", "content": message_text(content)})
            for call in wire_tool_calls(message.get("tool_calls")):
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    }
                )
        else:
            items.append({"role": str(role or "user"), "content": message_text(content)})
    return "\n\n".join(system), items


def _responses_tool(tool: Any) -> Any:
    """A recorded tool definition in the Responses API's flat ``{"type": "function", "name", ...}``
    form (from a chat tool's ``function`` or an Anthropic tool's ``input_schema``)."""
    if not isinstance(tool, dict) or tool.get("type") not in (None, "function"):
        return tool
    definition = tool["function"] if isinstance(tool.get("function"), dict) else tool
    flat = {k: definition[k] for k in ("name", "description", "parameters") if k in definition}
    if "parameters" not in flat and "input_schema" in definition:
        flat["parameters"] = definition["input_schema"]
    return {"type": "function", **flat}


def _openai_message(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.get("role", "user")}
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is not None:
        out["content"] = message_text(content)
    calls = wire_tool_calls(message.get("tool_calls"))
    if calls:
        out["tool_calls"] = calls
    if out["role"] == "tool" and isinstance(message.get("tool_call_id"), str):
        out["tool_call_id"] = message["tool_call_id"]
    if out["role"] in ("user", "assistant") and isinstance(message.get("name"), str):
        out["name"] = message["name"]
    return out


def _openai_tool(tool: Any) -> Any:
    """A recorded tool definition (stored flat) in the request's ``{"type": "function"}`` form."""
    if not isinstance(tool, dict) or (tool.get("type") == "function" and "function" in tool):
        return tool
    definition = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
    if "parameters" not in definition and "input_schema" in tool:  # an Anthropic tool
        definition["parameters"] = tool["input_schema"]
    return {"type": "function", "function": definition}


def _message(message: Any, finish_reason: Any) -> dict[str, Any]:
    """A chat-completions reply in the importer's message shape."""
    out: dict[str, Any] = {"role": "assistant"}
    if message.content is not None:
        out["content"] = message.content
    calls = []
    for call in message.tool_calls or []:
        arguments: Any = call.function.arguments
        with contextlib.suppress(TypeError, ValueError):  # not JSON: kept as the model wrote it
            arguments = json.loads(arguments)
        calls.append({"id": call.id, "name": call.function.name, "arguments": arguments})
    if calls:
        out["tool_calls"] = calls
    if isinstance(finish_reason, str):
        out["finish_reason"] = finish_reason
    return out
