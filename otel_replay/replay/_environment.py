"""The clock and fresh ids of an agent not written for agent-replay, patched while it runs.

`instrument("time", "uuid")` asks for them (`want`); each run of an agent then patches them
(`patched`) and puts them back when the last run under way ends:

* ``time``: ``time.time``, ``time.time_ns``, ``datetime.datetime.now`` and ``utcnow``;
* ``uuid``: ``uuid.uuid4``.

Inside a recording or a replay, each call the agent makes, or a library it calls makes, is one
``other`` step named after the function (`otel_replay.model.ENVIRONMENT_STEPS`), its output the
value read (for ``datetime``, the ``time.time`` it is built from, so the recorded and the
replayed object are equal to the microsecond); a replay serves it. A read made while one of the
agent's steps is performed (an SDK's own clock inside a model call, agent-replay's bookkeeping)
belongs to that step and is not recorded: under replay the step is served and makes none.

What is patched: the functions where their modules hold them (``time.time()``,
``datetime.datetime.now()``, ``uuid.uuid4()`` reach them), and the names the agent's own module
bound to them (``from time import time``, ``from datetime import datetime``); a library module
that bound a name before the run keeps the original. ``datetime.datetime`` is a subclass while
patched, whose instances are the standard ``datetime``'s, and every ``datetime`` is one of its
instances (a module that imports ``datetime`` during the run keeps the subclass: outside a run its
``now`` is the real clock's).

Thread-safety: the patches are process-wide, counted per run under a lock, so runs on several
threads share them and the last to end restores the originals; a patched function reads the
current context of its own thread (`reading_agent`), so a thread outside a run, or a run's own
machinery, calls the original.
"""

from __future__ import annotations

import datetime as _datetime_module
import threading
import time as _time_module
import uuid as _uuid_module
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from otel_replay.model import StepKind
from otel_replay.replay._current import reading_agent

_ORIGINAL_TIME = _time_module.time
_ORIGINAL_TIME_NS = _time_module.time_ns
_ORIGINAL_DATETIME = _datetime_module.datetime
_ORIGINAL_UUID4 = _uuid_module.uuid4


def _read(name: str, produce: Callable[[], Any]) -> Any:
    """The value, read through the run's context when the agent itself asks (else the original)."""
    ctx = reading_agent()
    if ctx is None:
        return produce()
    return ctx.call(StepKind.OTHER, name, {}, produce=produce, checked=True)


def _time() -> float:
    return float(_read("time.time", _ORIGINAL_TIME))


def _time_ns() -> int:
    return int(_read("time.time_ns", _ORIGINAL_TIME_NS))


def _uuid4() -> _uuid_module.UUID:
    return _uuid_module.UUID(str(_read("uuid.uuid4", lambda: str(_ORIGINAL_UUID4()))))


class _AnyDatetime(type):
    """`_RecordedDatetime`'s type: every ``datetime`` is an instance of it, so code that checks
    ``isinstance(value, datetime.datetime)`` while it is patched accepts the ones made before."""

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, _ORIGINAL_DATETIME)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, _ORIGINAL_DATETIME)


class _RecordedDatetime(_ORIGINAL_DATETIME, metaclass=_AnyDatetime):
    """``datetime.datetime`` while patched: ``now`` and ``utcnow`` read the recorded clock."""

    @classmethod
    def now(cls, tz: _datetime_module.tzinfo | None = None) -> _RecordedDatetime:
        seconds = float(_read("datetime.now", _ORIGINAL_TIME))
        return cls.fromtimestamp(seconds, tz)

    @classmethod
    def utcnow(cls) -> _RecordedDatetime:
        seconds = float(_read("datetime.utcnow", _ORIGINAL_TIME))
        return cls.fromtimestamp(seconds, _datetime_module.timezone.utc).replace(tzinfo=None)


#: what each name `instrument` takes patches: (module, attribute, original, replacement)
_TARGETS: dict[str, tuple[tuple[Any, str, Any, Any], ...]] = {
    "time": (
        (_time_module, "time", _ORIGINAL_TIME, _time),
        (_time_module, "time_ns", _ORIGINAL_TIME_NS, _time_ns),
        (_datetime_module, "datetime", _ORIGINAL_DATETIME, _RecordedDatetime),
    ),
    "uuid": ((_uuid_module, "uuid4", _ORIGINAL_UUID4, _uuid4),),
}
NAMES = tuple(_TARGETS)

_WANTED: set[str] = set()
_LOCK = threading.Lock()
# (id of the namespace, name) -> (namespace, original, runs under way that patched it)
_APPLIED: dict[tuple[int, str], tuple[MutableMapping[str, Any], Any, int]] = {}


def want(name: str) -> None:
    """Patch ``name``'s functions (``time``, ``uuid``) in every agent run from now on."""
    _WANTED.add(name)


def unwant() -> None:
    """Patch nothing in later runs (those under way keep theirs until they end)."""
    _WANTED.clear()


@contextmanager
def patched(agent: Callable[..., Any]) -> Iterator[None]:
    """While the block runs ``agent``: the functions asked for patched, in their modules and in
    the agent's module's names bound to them (module docstring)."""
    if not _WANTED:
        yield
        return
    chosen = [target for name in sorted(_WANTED) for target in _TARGETS[name]]
    scope: list[tuple[MutableMapping[str, Any], str, Any]] = []
    agent_names = getattr(agent, "__globals__", None)
    for module, attribute, original, replacement in chosen:
        scope.append((vars(module), attribute, replacement))
        if isinstance(agent_names, dict):
            scope += [
                (agent_names, bound, replacement)
                for bound, value in list(agent_names.items())
                if value is original or value is replacement
            ]
    _apply(scope)
    try:
        yield
    finally:
        _restore(scope)


def _apply(scope: list[tuple[MutableMapping[str, Any], str, Any]]) -> None:
    with _LOCK:
        for namespace, name, replacement in scope:
            key = (id(namespace), name)
            if key in _APPLIED:
                held, original, runs = _APPLIED[key]
                _APPLIED[key] = (held, original, runs + 1)
            else:
                _APPLIED[key] = (namespace, namespace[name], 1)
                namespace[name] = replacement


def _restore(scope: list[tuple[MutableMapping[str, Any], str, Any]]) -> None:
    with _LOCK:
        for namespace, name, _ in scope:
            key = (id(namespace), name)
            held, original, runs = _APPLIED[key]
            if runs > 1:
                _APPLIED[key] = (held, original, runs - 1)
            else:
                del _APPLIED[key]
                held[name] = original
