"""The fake production world the incident investigator looks at, and its three tools.

The story is fixed: checkout's error rate jumped at 14:07 UTC on 2026-03-14 because deploy
``v841`` of checkout shipped at 14:02. The logs also carry database connection warnings that look
alarming but are a red herring. Tools are pure functions of this data; :class:`World` adds
injectable faults so a run can be made to fail (a flaky deploy API) without touching the agent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "FAULT_MODES",
    "TOOLS",
    "TOOL_DEFINITIONS",
    "ToolError",
    "UpstreamError",
    "World",
    "list_deploys",
    "query_metrics",
    "search_logs",
]

INCIDENT_DATE = "2026-03-14"


class ToolError(Exception):
    """A tool was called with arguments the world knows nothing about."""


class UpstreamError(ToolError):
    """The system behind a tool answered with an error (injected by a fault)."""


def _minute(hh_mm: str) -> str:
    return f"{INCIDENT_DATE}T{hh_mm}:00Z"


# One point per minute; the jump at 14:07 is the symptom the pager fired on.
_ERROR_RATE = [0.41, 0.38, 0.44, 0.40, 0.43, 0.39, 0.42, 6.8, 8.9, 9.4, 9.1, 8.7]
_LATENCY_P99 = [212, 208, 219, 215, 210, 221, 214, 488, 530, 512, 547, 509]
_METRICS: dict[tuple[str, str], dict[str, Any]] = {
    ("checkout", "error_rate"): {
        "unit": "percent",
        "points": [{"t": _minute(f"14:{m:02d}"), "value": v} for m, v in enumerate(_ERROR_RATE)],
    },
    ("checkout", "latency_p99"): {
        "unit": "ms",
        "points": [{"t": _minute(f"14:{m:02d}"), "value": v} for m, v in enumerate(_LATENCY_P99)],
    },
}

# Newest first, as deploy APIs list them; truncating the list therefore hides the culprit.
_DEPLOYS: dict[str, list[dict[str, Any]]] = {
    "checkout": [
        {
            "version": "v841",
            "deployed_at": _minute("14:02"),
            "author": "mlopez",
            "commit": "9f3c2e1",
        },
        {
            "version": "v840",
            "deployed_at": "2026-03-13T16:40:00Z",
            "author": "akim",
            "commit": "41d07aa",
        },
        {
            "version": "v839",
            "deployed_at": "2026-03-12T10:15:00Z",
            "author": "akim",
            "commit": "c0ffe42",
        },
    ],
    "payments": [
        {"version": "v212", "deployed_at": _minute("13:30"), "author": "jdoe", "commit": "77ab310"},
    ],
}

_LOGS: dict[str, list[dict[str, str]]] = {
    "checkout": [
        {"t": "2026-03-14T14:05:12Z", "level": "WARN",
         "message": "orders-db pool: 46/50 connections in use"},
        {"t": "2026-03-14T14:07:03Z", "level": "ERROR",
         "message": "POST /api/checkout 500: KeyError 'currency' in cart serializer"},
        {"t": "2026-03-14T14:07:09Z", "level": "ERROR",
         "message": "orders-db: timeout acquiring connection after 5000 ms"},
        {"t": "2026-03-14T14:07:41Z", "level": "ERROR",
         "message": "POST /api/checkout 500: KeyError 'currency' in cart serializer"},
        {"t": "2026-03-14T14:08:15Z", "level": "WARN",
         "message": "orders-db pool: 49/50 connections in use"},
        {"t": "2026-03-14T14:09:02Z", "level": "INFO",
         "message": "health check ok"},
    ],
}  # fmt: skip


def query_metrics(service: str, metric: str) -> dict[str, Any]:
    """Return one metric of one service as per-minute points."""
    series = _METRICS.get((service, metric))
    if series is None:
        known = sorted(f"{s}/{m}" for s, m in _METRICS)
        raise ToolError(f"no metric {metric!r} for service {service!r}; known: {known}")
    return {"service": service, "metric": metric, **series}


def list_deploys(service: str) -> list[dict[str, Any]]:
    """Return the recent deploys of a service, newest first."""
    if service not in _DEPLOYS:
        raise ToolError(f"unknown service {service!r}; known: {sorted(_DEPLOYS)}")
    return [dict(deploy, service=service) for deploy in _DEPLOYS[service]]


def search_logs(service: str, query: str) -> list[dict[str, str]]:
    """Return the log lines of a service whose level or message contains any query word."""
    if service not in _LOGS:
        raise ToolError(f"unknown service {service!r}; known: {sorted(_LOGS)}")
    words = [word.lower() for word in query.split() if word.upper() != "OR"]
    return [
        dict(line)
        for line in _LOGS[service]
        if any(word in f"{line['level']} {line['message']}".lower() for word in words)
    ]


ToolFunction = Callable[..., Any]

TOOLS: dict[str, ToolFunction] = {
    "query_metrics": query_metrics,
    "list_deploys": list_deploys,
    "search_logs": search_logs,
}

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "query_metrics",
        "description": "Per-minute values of one metric of one service around the incident.",
        "parameters": {
            "type": "object",
            "properties": {
                "service": {"type": "string"},
                "metric": {"type": "string", "enum": ["error_rate", "latency_p99"]},
            },
            "required": ["service", "metric"],
        },
    },
    {
        "type": "function",
        "name": "list_deploys",
        "description": "Recent deploys of a service, newest first.",
        "parameters": {
            "type": "object",
            "properties": {"service": {"type": "string"}},
            "required": ["service"],
        },
    },
    {
        "type": "function",
        "name": "search_logs",
        "description": "Log lines of a service matching any of the query words.",
        "parameters": {
            "type": "object",
            "properties": {"service": {"type": "string"}, "query": {"type": "string"}},
            "required": ["service", "query"],
        },
    },
]

# empty/truncated model a flaky deploy API (an empty page, a stale first page); error/error_once
# model outages, the second one transient so a retrying agent recovers.
FAULT_MODES = ("empty", "truncated", "error", "error_once")


class World:
    """The tools as one agent run sees them, with faults injected per tool name.

    ``faults`` maps a tool name to one of :data:`FAULT_MODES`; it is validated here so a typo fails
    before the run instead of producing a silently healthy trace.
    """

    def __init__(self, faults: Mapping[str, str] | None = None) -> None:
        self.faults = dict(faults or {})
        for name, mode in self.faults.items():
            if name not in TOOLS:
                raise ValueError(f"fault for unknown tool {name!r}; tools: {sorted(TOOLS)}")
            if mode not in FAULT_MODES:
                raise ValueError(f"fault mode {mode!r} for {name!r}; modes: {list(FAULT_MODES)}")
            if mode in ("empty", "truncated") and name == "query_metrics":
                raise ValueError(f"fault mode {mode!r} needs a list-returning tool, not {name!r}")
        self.calls: Counter[str] = Counter()

    def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """Run tool ``name`` with keyword ``arguments``, applying its fault if one is set."""
        if name not in TOOLS:
            raise ToolError(f"unknown tool {name!r}; tools: {sorted(TOOLS)}")
        self.calls[name] += 1
        mode = self.faults.get(name)
        if mode == "error" or (mode == "error_once" and self.calls[name] == 1):
            raise UpstreamError(f"{name}: upstream answered 503 Service Unavailable")
        result = TOOLS[name](**arguments)
        if mode == "empty":
            return []
        if mode == "truncated":
            return result[1:]
        return result


#: How often the flaky deploy API comes back empty (the fault behind the failing sample run; at
#: the end of the file, so the line numbers the sample traces' stack traces quote stay as they are).
EMPTY_DEPLOYS_RATE = 0.25
