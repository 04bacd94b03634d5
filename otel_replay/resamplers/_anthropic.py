"""The Anthropic Messages API as a resample function: ``--llm anthropic``.

A model step is asked again as `OpenAIChatModel` asks it (the conversation of *this* rollout, the
recorded tools, the recorded model unless another is named, the requested temperature), in the
Messages API's words: the system messages as ``system``, an assistant turn's calls as ``tool_use``
blocks, tool results as ``tool_result`` blocks of the user turn that follows, consecutive turns of
one role joined (the API wants them to alternate). The reply becomes the step's output in the
importer's message shape. The ``anthropic`` client is an optional extra, imported only when used;
its retries cover rate limits and server errors, and a request that still fails raises an error
naming the server and what it said.
"""

from __future__ import annotations

import json
import os
from typing import Any

from otel_replay._extras import install_command
from otel_replay._web import Bounds
from otel_replay.errors import PluginLoadError, RegistrationError, setting
from otel_replay.messages import assistant_message, message_text, wire_tool_calls
from otel_replay.model import Step, Trajectory
from otel_replay.resamplers._bounded import MAX_MODEL_ANSWER_BYTES, bounded_client
from otel_replay.resamplers._context import RolloutContext
from otel_replay.resamplers._openai import (
    RESPONSES_USAGE,
    ChatModelOptions,
    counted_tokens,
    failed_request,
    noted_usage,
    rebuild_messages,
)

#: What a request must say and the record may not (the Messages API has no default).
DEFAULT_MAX_TOKENS = 1024


class AnthropicMessagesModel:
    """The resample function of ``--llm anthropic``."""

    def __init__(self, options: ChatModelOptions) -> None:
        self.options = options
        self.base_url = anthropic_server(options.base_url, setting("llm", "anthropic"))
        try:
            import anthropic
        except ImportError:
            raise PluginLoadError(
                f"{setting('llm', 'anthropic')} needs the anthropic client: "
                f"{install_command('anthropic')}"
            ) from None
        self._client = anthropic.Anthropic(
            base_url=self.base_url,
            api_key=os.environ.get("ANTHROPIC_API_KEY") or "not-needed",
            max_retries=options.max_retries,
            timeout=options.timeout_s,
            http_client=bounded_client(
                Bounds(options.timeout_s, options.timeout_s, MAX_MODEL_ANSWER_BYTES), "anthropic"
            ),
        )
        self._errors: tuple[type[Exception], ...] = (
            anthropic.APIStatusError,
            anthropic.APIConnectionError,
        )
        self.__qualname__ = (
            f"anthropic_messages(model={options.model or 'recorded'}, "
            f"temperature={options.temperature:g})"
        )
        self.__module__ = "builtin"

    def __call__(self, step: Step, ctx: RolloutContext) -> Any:
        system, messages = messages_request(rebuild_messages(step, ctx.history, ctx.live))
        parameters = step.inputs.get("parameters")
        kept = parameters if isinstance(parameters, dict) else {}
        request: dict[str, Any] = {
            "model": self.options.model or step.inputs.get("model") or step.name,
            "messages": messages,
            "max_tokens": kept.get("max_tokens") or DEFAULT_MAX_TOKENS,
            # in the body: some versions of the client no longer take it as an argument
            "extra_body": {"temperature": self.options.temperature},
        }
        if system:
            request["system"] = system
        tools = step.inputs.get("tools")
        if isinstance(tools, list) and tools:
            request["tools"] = [_anthropic_tool(t) for t in tools]
        try:
            response = self._client.messages.create(**request)
        except self._errors as exc:
            raise RuntimeError(failed_request(self.base_url or "the Anthropic API", exc)) from None
        noted_usage(response, RESPONSES_USAGE)
        reply = assistant_message(response.model_dump(mode="json", exclude_none=True))
        message = reply if reply is not None else {"role": "assistant", "content": None}
        return {**message, "model": request["model"]}

    def ask(
        self, model: str, system: str, user: str, responses: bool = False
    ) -> tuple[str, int | None]:
        """One question outside any conversation of the run (a tool it plays), of ``model`` unless
        another is named: the reply's text, and the tokens the server counted (None: unsaid).
        (``responses`` is OpenAI's: the Messages API is the one asked here.)"""
        try:
            response = self._client.messages.create(
                model=self.options.model or model,
                system=system,
                messages=[{"role": "user", "content": user}],
                max_tokens=DEFAULT_MAX_TOKENS,
                extra_body={"temperature": self.options.temperature},
            )
        except self._errors as exc:
            raise RuntimeError(failed_request(self.base_url or "the Anthropic API", exc)) from None
        tokens = counted_tokens(response, RESPONSES_USAGE)
        reply = assistant_message(response.model_dump(mode="json", exclude_none=True))
        return message_text((reply or {}).get("content") or ""), tokens

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
        return []


def anthropic_server(base_url: str | None, needed_by: str) -> str | None:
    """The server ``--llm anthropic`` asks: ``base_url``, else ``$ANTHROPIC_BASE_URL``, else
    Anthropic's API (None) when ``$ANTHROPIC_API_KEY`` says that is meant; with none of the three,
    a `RegistrationError` before any rollout."""
    found = base_url or os.environ.get("ANTHROPIC_BASE_URL")
    if found or os.environ.get("ANTHROPIC_API_KEY"):
        return found
    raise RegistrationError(
        f"{needed_by} asks a server of the Anthropic Messages API and none is named: give "
        f"{setting('llm_base_url', 'URL', text='URL')} or set ANTHROPIC_BASE_URL (a local or "
        "self-hosted server), or set ANTHROPIC_API_KEY (Anthropic's API)"
    )


def messages_request(said: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """A conversation in the store's shape as the Messages API's ``system`` and ``messages``."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def say(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:  # the API wants the roles to alternate
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in said:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            system.append(message_text(content))
        elif role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": str(message.get("tool_call_id") or ""),
                "content": message_text(content),
            }
            say("user", [result])
        elif role == "assistant":
            blocks: list[dict[str, Any]] = []
            if content:
                blocks.append({"type": "text", "text": message_text(content)})
            for call in wire_tool_calls(message.get("tool_calls")):
                function = call["function"]
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": function["name"],
                        "input": _json_object(function["arguments"]),
                    }
                )
            say("assistant", blocks)
        elif content:
            say("user", [{"type": "text", "text": message_text(content)}])
    return "\n\n".join(system), turns


def _json_object(arguments: str) -> Any:
    """A call's arguments (JSON text) as the object ``tool_use.input`` must be."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}


def _anthropic_tool(tool: Any) -> Any:
    """A recorded tool definition in the Messages API's ``{"name", "description",
    "input_schema"}`` form (from a chat or Responses tool's ``parameters``)."""
    if not isinstance(tool, dict):
        return tool
    definition = tool["function"] if isinstance(tool.get("function"), dict) else tool
    shaped = {k: definition[k] for k in ("name", "description") if k in definition}
    schema = definition.get("input_schema", definition.get("parameters"))
    shaped["input_schema"] = schema if isinstance(schema, dict) else {"type": "object"}
    return shaped
