"""A rule-based stand-in for the LLM that drives the incident investigator.

:func:`respond` is a pure function of the conversation so far: the same messages always give the
same reply, tool-call ids included, so recorded runs replay exactly without any network or model.

Messages are OpenAI-like dicts: ``{"role", "content"}``, assistant messages may add
``"tool_calls": [{"id", "name", "arguments"}]`` (arguments a JSON object), and tool results are
``{"role": "tool", "tool_call_id", "name", "content"}`` with the result as JSON text (an object
with an ``"error"`` key when the tool failed).

The policy mirrors a hurried on-call engineer: look at the error rate; if it spiked, look for a
deploy that landed shortly before the spike and blame it; if no such deploy is visible, search the
logs and blame whatever looks worst there (the database).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

__all__ = ["MODEL_NAME", "SYSTEM_PROMPT", "respond"]

MODEL_NAME = "rule-based-investigator"

SYSTEM_PROMPT = (
    "You are an on-call incident investigator. Use the tools to find the root cause of the alert, "
    "then answer with one sentence naming it and a recommended action."
)

# A deploy this close before the spike is the prime suspect.
_SUSPECT_WINDOW = timedelta(minutes=30)
# A point this many times the pre-incident baseline counts as the spike.
_SPIKE_FACTOR = 3.0
# One retry per tool: enough to ride out a transient error, not enough to loop forever.
_MAX_ATTEMPTS = 2


def respond(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the assistant's next message: either ``tool_calls`` to make or a final ``content``."""
    results, failures = _tool_outcomes(messages)
    service = _service(messages)

    metrics = results.get("query_metrics")
    if metrics is None:
        if failures["query_metrics"] >= _MAX_ATTEMPTS:
            return _final(f"Could not read the metrics of {service}; escalate to a human.")
        note = _retry_note("query_metrics", failures, f"Checking the error rate of {service}.")
        return _call(messages, note, "query_metrics", {"service": service, "metric": "error_rate"})

    spike = _spike(metrics.get("points", []))
    if spike is None:
        return _final(f"No error-rate anomaly on {service}; the alert looks spurious.")
    spike_at, baseline, peak = spike

    deploys = results.get("list_deploys")
    if deploys is None and failures["list_deploys"] < _MAX_ATTEMPTS:
        note = _retry_note(
            "list_deploys",
            failures,
            f"The error rate spiked at {spike_at:%H:%M} UTC; checking recent deploys of {service}.",
        )
        return _call(messages, note, "list_deploys", {"service": service})
    suspect = _suspect_deploy(deploys or [], spike_at)
    if suspect is not None:
        version, deployed_at = suspect
        lead_min = int((spike_at - deployed_at).total_seconds() // 60)
        return _final(
            f"Root cause: deploy {version} of {service}, shipped at {deployed_at:%H:%M} UTC, "
            f"{lead_min} minutes before the error rate jumped from {baseline:.1f}% to {peak:.1f}% "
            f"at {spike_at:%H:%M} UTC. Recommended action: roll back {version}."
        )

    logs = results.get("search_logs")
    if logs is None and failures["search_logs"] < _MAX_ATTEMPTS:
        note = _retry_note(
            "search_logs", failures, f"No deploy explains the spike; searching the {service} logs."
        )
        return _call(messages, note, "search_logs", {"service": service, "query": "error OR warn"})
    db_lines = [line for line in logs or [] if "connection" in str(line.get("message", ""))]
    if db_lines:
        return _final(
            f"Root cause: the database: {service} logs show {len(db_lines)} connection-pool "
            f"warnings and timeouts around {spike_at:%H:%M} UTC. Recommended action: raise the "
            "orders-db connection pool size."
        )
    return _final(f"Root cause unknown: nothing in the deploys or logs of {service} explains it.")


def _tool_outcomes(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, Any], dict[str, int]]:
    """Latest successful result per tool name, and the number of failed calls per tool name."""
    names: dict[str, str] = {}
    results: dict[str, Any] = {}
    failures = dict.fromkeys(("query_metrics", "list_deploys", "search_logs"), 0)
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["name"]
        if message.get("role") != "tool":
            continue
        name = message.get("name") or names.get(message.get("tool_call_id", ""), "")
        result = json.loads(message.get("content") or "null")
        if isinstance(result, dict) and "error" in result:
            failures[name] = failures.get(name, 0) + 1
        else:
            results[name] = result
    return results, failures


def _service(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "user":
            found = re.search(r"\bservice ([a-z][a-z0-9-]*)", str(message.get("content", "")))
            if found:
                return found.group(1)
    return "checkout"


def _parse_time(text: str) -> datetime:
    # strptime rather than fromisoformat: the latter rejects a trailing "Z" before Python 3.11.
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z")


def _spike(points: Sequence[Mapping[str, Any]]) -> tuple[datetime, float, float] | None:
    """First point far above the baseline (mean of the first three): (time, baseline, peak)."""
    if len(points) < 4:
        return None
    baseline = sum(float(p["value"]) for p in points[:3]) / 3
    for index, point in enumerate(points):
        if float(point["value"]) >= _SPIKE_FACTOR * baseline:
            peak = max(float(p["value"]) for p in points[index:])
            return _parse_time(point["t"]), baseline, peak
    return None


def _suspect_deploy(
    deploys: Sequence[Mapping[str, Any]], spike_at: datetime
) -> tuple[str, datetime] | None:
    """The latest deploy that landed within the suspect window before the spike."""
    best: tuple[str, datetime] | None = None
    for deploy in deploys:
        deployed_at = _parse_time(deploy["deployed_at"])
        in_window = timedelta(0) <= spike_at - deployed_at <= _SUSPECT_WINDOW
        if in_window and (best is None or deployed_at > best[1]):
            best = (str(deploy["version"]), deployed_at)
    return best


def _retry_note(tool: str, failures: Mapping[str, int], note: str) -> str:
    return f"{tool} failed; retrying." if failures.get(tool, 0) else note


def _call(
    messages: Sequence[Mapping[str, Any]], note: str, name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    # The id is derived from the conversation so that it, too, is a pure function of the input.
    digest = hashlib.sha256(json.dumps(list(messages), sort_keys=True).encode()).hexdigest()
    call = {"id": f"call_{digest[:24]}", "name": name, "arguments": arguments}
    return {"role": "assistant", "content": note, "tool_calls": [call]}


def _final(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}
