"""The `Registry` of resample functions, the verifier and repair-candidate sources.

Lookup is ``(kind, name)`` then ``(kind, any name)``; a step with neither, or one the record marks
``resamplable: false``, is observed-only. Everything is validated when registered, not at first use:
an unknown kind, something not callable, a duplicate or a wrong signature fails at once with a
message naming the function.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from otel_replay.errors import RegistrationError, setting
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.resamplers._context import RolloutContext

_KINDS = ", ".join(k.value for k in StepKind)


class ResampleFunction(Protocol):
    def __call__(self, step: Step, ctx: RolloutContext, /) -> Any: ...


class VerifierFunction(Protocol):
    def __call__(self, trajectory: Trajectory, /) -> float: ...


class RepairCandidatesFunction(Protocol):
    def __call__(self, step: Step, factual: Trajectory, /) -> Iterable[Any]: ...


class FaultFunction(Protocol):
    """A user-defined fault for ``agent-replay sweep``: given the recorded step, the output the
    step returns instead; to make the step fail, raise (or return) `StepFailed`. Called once per
    step it is injected at, when the sweep is planned: it must not depend on a rollout's draws."""

    def __call__(self, step: Step, /) -> Any: ...


#: The faults ``fork --fault`` and ``sweep`` build in (`otel_replay.replay._faults.FAULTS`): a
#: user's fault may not take one of their names.
BUILT_IN_FAULTS = ("empty", "error", "timeout", "truncate")


F = TypeVar("F", bound=Callable[..., Any])

#: Modules loaded from a file path get a unique name with this prefix (see `load_resamplers`).
USER_MODULE_PREFIX = "otel_replay_user_"


def describe(function: Callable[..., Any]) -> str:
    """``module.qualname`` of a function (``file.py:qualname`` for one loaded from a file path),
    for messages and reports."""
    module = getattr(function, "__module__", None) or "?"
    qualname = getattr(function, "__qualname__", repr(function))
    if module.startswith(USER_MODULE_PREFIX):
        path = getattr(sys.modules.get(module), "__file__", None)
        if path:
            return f"{os.path.basename(path)}:{qualname}"
    return f"{module}.{qualname}"


def ways_to_resample(kind: StepKind | None = None, name: str | None = None) -> str:
    """What to do about a step no resample function covers, for a message: register one in a
    module (for ``kind`` and ``name`` when given), or let the built-ins resample without code."""
    target = "kind, name=..." if kind is None else f"{kind.value!r}, name={name!r}"
    return (
        f"register @resampler({target}) in a module given as "
        f"{setting('resamplers', 'FILE', text='FILE')}, or resample without code: "
        f"{setting('tools', 'recorded', text='recorded')} {setting('llm', 'openai', text='openai')} "
        f"(or {setting('llm', 'anthropic', text='anthropic')})"
    )


def _check_signature(function: object, arity: int, what: str, shape: str) -> None:
    if not callable(function):
        raise RegistrationError(f"{what} {function!r} is not callable")
    try:
        inspect.signature(function).bind(*([None] * arity))
    except TypeError:
        raise RegistrationError(
            f"{what} {describe(function)} must accept {shape}; its signature is "
            f"{inspect.signature(function)}"
        ) from None
    except ValueError:  # builtins without a signature: accept and let the call tell
        pass


@dataclass(frozen=True, slots=True)
class Registration:
    kind: StepKind
    name: str | None  # None: every step of the kind
    function: ResampleFunction

    @property
    def description(self) -> str:
        target = (
            f"{self.kind.value}:{self.name}" if self.name is not None else f"{self.kind.value}:*"
        )
        return f"{target} -> {describe(self.function)}"


class Registry:
    """Resample functions by ``(kind, name)``, one verifier, repair-candidate sources."""

    def __init__(self) -> None:
        self._resamplers: dict[tuple[StepKind, str | None], Registration] = {}
        self._verifier: VerifierFunction | None = None
        self._repair: list[RepairCandidatesFunction] = []
        self._faults: dict[str, FaultFunction] = {}

    # --- registering -------------------------------------------------------------------------------

    def add_resampler(
        self, kind: StepKind | str, function: ResampleFunction, name: str | None = None
    ) -> Registration:
        try:
            step_kind = StepKind(kind)
        except ValueError:
            raise RegistrationError(
                f"{kind!r} is not a step kind (registering {describe(function)}); known kinds: {_KINDS}"
            ) from None
        if name is not None and not isinstance(name, str):
            raise RegistrationError(
                f"name={name!r} must be a string (registering {describe(function)})"
            )
        _check_signature(function, 2, "resample function", "(step, ctx)")
        key = (step_kind, name)
        if key in self._resamplers:
            target = f"{step_kind.value} {name!r}" if name else f"every {step_kind.value} step"
            raise RegistrationError(
                f"{describe(function)}: a resample function for {target} is already registered "
                f"({describe(self._resamplers[key].function)})"
            )
        registration = Registration(step_kind, name, function)
        self._resamplers[key] = registration
        return registration

    def resampler(self, kind: StepKind | str, name: str | None = None) -> Callable[[F], F]:
        """Decorator: ``@registry.resampler("tool", name="list_deploys")``."""

        def register(function: F) -> F:
            self.add_resampler(kind, function, name)
            return function

        return register

    def set_verifier(self, function: VerifierFunction) -> VerifierFunction:
        _check_signature(function, 1, "verifier", "(trajectory)")
        if self._verifier is not None and self._verifier is not function:
            raise RegistrationError(
                f"verifier {describe(function)}: {describe(self._verifier)} is already registered"
            )
        self._verifier = function
        return function

    def replace_verifier(self, function: VerifierFunction) -> VerifierFunction:
        """Set the verifier even if one is registered (``--verifier`` overrides the modules)."""
        self._verifier = None
        return self.set_verifier(function)

    def add_repair_candidates(self, function: RepairCandidatesFunction) -> RepairCandidatesFunction:
        _check_signature(function, 2, "repair-candidates function", "(step, factual)")
        self._repair.append(function)
        return function

    def add_fault(self, name: str, function: FaultFunction) -> FaultFunction:
        """Register ``function`` as the fault ``name`` (``sweep --faults name``)."""
        if not isinstance(name, str) or not name or "," in name or name != name.strip():
            raise RegistrationError(
                f"fault name {name!r} must be a non-empty string without commas or edge spaces "
                f"(registering {describe(function)})"
            )
        _check_signature(function, 1, "fault function", "(step)")
        if name in BUILT_IN_FAULTS:
            raise RegistrationError(
                f"{describe(function)}: {name!r} is a built-in fault "
                f"({', '.join(BUILT_IN_FAULTS)}); give yours another name"
            )
        if name in self._faults:
            raise RegistrationError(
                f"{describe(function)}: a fault named {name!r} is already registered "
                f"({describe(self._faults[name])})"
            )
        self._faults[name] = function
        return function

    def fault(self, name: str) -> Callable[[F], F]:
        """Decorator: ``@registry.fault("stale")``."""

        def register(function: F) -> F:
            self.add_fault(name, function)
            return function

        return register

    # --- reading -----------------------------------------------------------------------------------

    def lookup(self, step: Step) -> Registration | None:
        """The resample function for ``step``: by kind and name, else by kind; None = observed-only,
        which is also every step the record marks ``resamplable: false`` (whatever is registered:
        a kind-wide registration must not reach a step its recording said cannot be re-run)."""
        if not step.resamplable:
            return None
        return self._resamplers.get((step.kind, step.name)) or self._resamplers.get(
            (step.kind, None)
        )

    @property
    def verifier(self) -> VerifierFunction | None:
        return self._verifier

    @property
    def repair_sources(self) -> tuple[RepairCandidatesFunction, ...]:
        return tuple(self._repair)

    @property
    def faults(self) -> dict[str, FaultFunction]:
        """The user-defined faults, by name (a copy)."""
        return dict(self._faults)

    def registered(self, kind: StepKind, name: str | None = None) -> bool:
        """Whether a resample function is registered for exactly ``(kind, name)``."""
        return (kind, name) in self._resamplers

    def descriptions(self) -> list[str]:
        """Every registration, sorted, for reports."""
        return sorted(r.description for r in self._resamplers.values())

    def __len__(self) -> int:
        return len(self._resamplers)

    @contextmanager
    def collecting(self) -> Iterator[Registry]:
        """Make the module-level decorators register into this registry while the block runs."""
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


DEFAULT_REGISTRY = Registry()
_CURRENT: ContextVar[Registry] = ContextVar("otel_replay_registry", default=DEFAULT_REGISTRY)


def current_registry() -> Registry:
    return _CURRENT.get()


def resampler(kind: StepKind | str, name: str | None = None) -> Callable[[F], F]:
    """Register the decorated ``(step, ctx) -> output`` for steps of ``kind`` (and ``name``)."""
    return current_registry().resampler(kind, name)


def verifier(function: F) -> F:
    """Register the decorated ``(trajectory) -> float`` (1.0 success … 0.0 failure)."""
    current_registry().set_verifier(function)
    return function


def repair_candidates(function: F) -> F:
    """Register ``(step, factual) -> iterable of outputs`` offered to the repair search."""
    current_registry().add_repair_candidates(function)
    return function
