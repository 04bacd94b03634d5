"""Loading user code: ``--resamplers PATH.py|module.name``, installed entry points, ``--verifier`` and
``--agent`` (``module:function``); `UserCode` names all of it, and `load_registry` builds the registry.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from otel_replay.errors import PluginLoadError, ReplayError, setting
from otel_replay.resamplers._anthropic import anthropic_server
from otel_replay.resamplers._judge import JudgeOptions, judge
from otel_replay.resamplers._openai import ChatModelOptions, ModelSource, server
from otel_replay.resamplers._registry import USER_MODULE_PREFIX, Registry, VerifierFunction
from otel_replay.resamplers._verifiers import answer_verifier

ENTRY_POINT_GROUP = "otel_replay.resamplers"


class ToolSource(str, Enum):
    """Where ``--tools`` takes tool results from."""

    RECORDED = "recorded"  # what the store recorded for the same tool and arguments
    # the same, and a call no run recorded fails as an injected fault (else: unservable)
    RECORDED_THEN_FAULTS = "recorded,faults"
    SIMULATE = "simulate"  # the --llm model plays the tool (`otel_replay.resamplers._simulate`)
    # recorded alternatives first, and the model plays a call the store cannot vary
    RECORDED_THEN_SIMULATE = "recorded,simulate"

    @property
    def fallback(self) -> bool:
        """Whether a call nothing recorded is answered by the faults fallback."""
        return self is ToolSource.RECORDED_THEN_FAULTS

    @property
    def draws(self) -> bool:
        """Whether results are drawn from the store."""
        return self is not ToolSource.SIMULATE

    @property
    def simulates(self) -> bool:
        """Whether the model plays tools."""
        return self in (ToolSource.SIMULATE, ToolSource.RECORDED_THEN_SIMULATE)


class Loaded(NamedTuple):
    """A `UserCode` loaded: its registry, and the verifier it names (None: the modules' own)."""

    registry: Registry
    verifier: VerifierFunction | None


@dataclass(frozen=True, slots=True, kw_only=True)
class UserCode:
    """Where a run's user code comes from, as the command line names it.

    Attributes:
        resamplers: ``.py`` files or module names registering resample functions (and a verifier).
        verifier: ``module:function`` replacing any registered verifier.
        success_if, fail_if: regular expressions on the final answer, a verifier without code
            (`otel_replay.resamplers.answer_verifier`), replacing any registered verifier.
        tools: a built-in resample function for every tool step no registration covers
            (``recorded``: `otel_replay.resamplers._recorded.recorded_outcomes`, a call no run
            recorded holding its rollout as unservable; ``recorded,faults``: such a call fails
            as an injected fault instead). A string is read as a `ToolSource`.
        llm: a built-in model for every model step no registration covers (``--llm openai``:
            `otel_replay.resamplers.OpenAIChatModel`, chat completions or the Responses API as
            each step was asked; ``--llm anthropic``: the Messages API).
        agent: ``module:function`` of a live agent, when rollouts re-run it.
        instrument: SDKs whose model calls the agent makes unmodified (``--instrument``).
        entry_points: whether installed ``otel_replay.resamplers`` entry points are loaded too.
        judge: a model asked whether the final answer meets a question, the verifier without
            code for what a pattern cannot check (``--judge``: `otel_replay.resamplers.Judge`),
            replacing any registered verifier.
        suspect_model: the server and model ``--suspect judge`` asks when neither ``llm`` nor
            ``judge`` names one (the ``--llm-*`` settings without ``--llm``).
    """

    resamplers: tuple[str, ...] = ()
    verifier: str | None = None
    agent: str | None = None
    entry_points: bool = True
    success_if: str | None = None
    fail_if: str | None = None
    tools: ToolSource | None = None
    llm: ChatModelOptions | None = None
    instrument: tuple[str, ...] = ()
    judge: JudgeOptions | None = None
    suspect_model: ChatModelOptions | None = None

    def check(self) -> None:
        """The mistakes found without loading or asking anything, so a command says them at once:
        two ways of scoring a run, a built-in model (``llm``, ``judge``) with no server to ask."""
        ways = [
            name
            for name, given in (
                (setting("verifier", self.verifier, quoted=True), self.verifier is not None),
                (
                    f"{setting('success_if')}/{setting('fail_if')}",
                    self.success_if is not None or self.fail_if is not None,
                ),
                (setting("judge"), self.judge is not None),
            )
            if given
        ]
        if len(ways) > 1:
            raise PluginLoadError(
                f"{' and '.join(ways)} {'both' if len(ways) == 2 else 'all'} say how to score a "
                "run; give one of them"
            )
        if self.tools is not None and ToolSource(self.tools).simulates and self.llm is None:
            raise PluginLoadError(
                f"{setting('tools', ToolSource(self.tools).value)} has a model play the tools, "
                f"and none is named: give {setting('llm', 'openai', text='openai')} or "
                f"{setting('llm', 'anthropic', text='anthropic')} (and its server)"
            )
        if self.llm is not None and ModelSource(self.llm.source) is ModelSource.ANTHROPIC:
            anthropic_server(self.llm.base_url, setting("llm", "anthropic"))
        elif self.llm is not None:
            server(self.llm.base_url, setting("llm", "openai"))
        if self.judge is not None:
            named = setting("judge_base_url", "URL", text="URL")
            server(self.judge.base_url, setting("judge"), named)

    @property
    def names_verifier(self) -> bool:
        """Whether the code says how to score a run itself (``verifier``, ``success_if`` or
        ``fail_if``, ``judge``) rather than leaving it to what its modules register."""
        answer = self.success_if is not None or self.fail_if is not None
        return self.verifier is not None or answer or self.judge is not None

    def load(self) -> Loaded:
        """`registry`, and the verifier the code names on it (None: it leaves scoring to what its
        modules register)."""
        registry = self.registry()
        return Loaded(registry, registry.verifier if self.names_verifier else None)

    def __post_init__(self) -> None:
        if self.tools is not None and not isinstance(self.tools, ToolSource):
            try:
                object.__setattr__(self, "tools", ToolSource(self.tools))
            except ValueError:
                known = ", ".join(repr(t.value) for t in ToolSource)
                raise PluginLoadError(
                    f"{setting('tools', self.tools)} is not a source of tool results; known: "
                    f"{known}"
                ) from None

    def registry(self) -> Registry:
        """A fresh registry of the code's modules (and entry points), with the verifier it names
        in place of any they register (`check` first)."""
        self.check()
        registry = load_registry(
            self.resamplers, entry_points=self.entry_points, verifier=self.verifier
        )
        if self.success_if is not None or self.fail_if is not None:
            registry.replace_verifier(answer_verifier(self.success_if, self.fail_if))
        if self.judge is not None:
            registry.replace_verifier(judge(self.judge))
        return registry

    def canonical(self) -> dict[str, Any]:
        """The code as plain JSON, every field that can change what an attribution finds (the
        built-in model's retries and timeout cannot)."""
        llm = self.llm
        return {
            "resamplers": list(self.resamplers),
            "verifier": self.verifier,
            "agent": self.agent,
            "entry_points": self.entry_points,
            "success_if": self.success_if,
            "fail_if": self.fail_if,
            "tools": None if self.tools is None else self.tools.value,
            "llm": None
            if llm is None
            else {
                "base_url": llm.base_url,
                "model": llm.model,
                "temperature": llm.temperature,
                # the API asked: named only when not the default, so kept reports still match
                **({"source": "anthropic"} if llm.source == ModelSource.ANTHROPIC else {}),
            },
            "instrument": list(self.instrument),
            # only when given: the digests of questions asked without a judge stay as they were
            **({} if self.judge is None else {"judge": self.judge.canonical()}),
            **(
                {}
                if self.suspect_model is None
                else {
                    "suspect_model": {
                        "base_url": self.suspect_model.base_url,
                        "model": self.suspect_model.model,
                    }
                }
            ),
        }

    def flags(self) -> list[str]:
        """The command-line options that name this code (for a command that reproduces a run)."""
        flags = [part for spec in self.resamplers for part in ("--resamplers", spec)]
        if self.verifier:
            flags += ["--verifier", self.verifier]
        if self.success_if is not None:
            flags += ["--success-if", self.success_if]
        if self.fail_if is not None:
            flags += ["--fail-if", self.fail_if]
        if self.agent:
            flags += ["--agent", self.agent]
        if self.instrument:
            flags += ["--instrument", ",".join(self.instrument)]
        if self.tools is not None:
            flags += ["--tools", self.tools.value]
        if self.llm is not None:
            flags += self.llm.flags()
        if self.judge is not None:
            flags += self.judge.flags(None if self.llm is None else self.llm.base_url)
        if self.suspect_model is not None and self.suspect_model.base_url:
            flags += ["--llm-base-url", self.suspect_model.base_url]
        if self.suspect_model is not None and self.suspect_model.model:
            flags += ["--llm-model", self.suspect_model.model]
        if not self.entry_points:
            flags.append("--no-entry-points")
        return flags


#: Held while user code loads: runs attributed on threads at once each load the modules again, and a
#: module's decorators register into whichever registry is collecting (found by a fleet on threads:
#: a run's registry came up empty when another thread's load took its registrations).
_LOADING = threading.RLock()


def load_registry(
    specs: Iterable[str], *, entry_points: bool = False, verifier: str | None = None
) -> Registry:
    """A fresh registry holding what the modules ``specs`` register, then (with ``entry_points``) the
    installed entry points' registrations, then ``verifier`` in place of any registered one."""
    registry = Registry()
    with _LOADING:  # decorators register into the registry collecting now: one load at a time
        load_resamplers(specs, registry)
        if entry_points:
            load_entry_points(registry)
        if verifier is not None:
            load_verifier(verifier, registry)
    return registry


def load_resamplers(specs: Iterable[str], registry: Registry) -> None:
    """Run each module (a ``.py`` path or a dotted module name) with its decorators feeding ``registry``."""
    for spec in specs:
        with registry.collecting():
            _load_one(spec)


def _load_one(spec: str, what: str = "resampler module") -> ModuleType:
    path = Path(spec)
    try:
        if spec.endswith(".py") or path.is_file():
            if not path.is_file():
                raise PluginLoadError(f"{what} {spec!r} does not exist")
            return _load_file(path)
        if spec in sys.modules:  # already imported: run it again so its decorators register here
            return importlib.reload(sys.modules[spec])
        return importlib.import_module(spec)
    except ReplayError:
        raise
    except ModuleNotFoundError as exc:
        hint = f"; did you mean the file {spec}.py?" if Path(f"{spec}.py").is_file() else ""
        raise PluginLoadError(f"cannot load {what} {spec!r}: {exc}{hint}") from exc
    except Exception as exc:
        raise PluginLoadError(f"cannot load {what} {spec!r}: {type(exc).__name__}: {exc}") from exc


def _package_root(path: Path) -> tuple[Path, str] | None:
    """For a file inside a package: the folder to put on the path, and the module's dotted name."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return (folder, ".".join(parts)) if len(parts) > 1 else None


def _load_file(path: Path) -> ModuleType:
    resolved = path.resolve()
    package = _package_root(resolved)
    if package is not None:  # import it as what it is, so its relative imports work
        root, dotted = package
        sys.path.insert(0, str(root))
        try:
            if dotted in sys.modules:
                return importlib.reload(sys.modules[dotted])
            return importlib.import_module(dotted)
        finally:
            sys.path.remove(str(root))
    # a stable, unique module name per file, so pickling and tracebacks name something sensible
    name = (
        f"{USER_MODULE_PREFIX}{path.stem}_{hashlib.sha256(str(resolved).encode()).hexdigest()[:8]}"
    )
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise PluginLoadError(f"cannot load resampler module {str(path)!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # the module's own folder comes first on the path, so it can import its neighbours
    sys.path.insert(0, str(resolved.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.path.remove(str(resolved.parent))
    return module


def load_entry_points(registry: Registry) -> list[str]:
    """Load every installed ``otel_replay.resamplers`` entry point; return their names.

    An entry point may name a module (its decorators register) or a callable taking the registry.
    """
    from importlib.metadata import entry_points  # slow to import; only attribute needs it

    loaded = []
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            with registry.collecting():
                imported_before = entry.module in sys.modules
                target = entry.load()
                if isinstance(target, ModuleType):
                    if imported_before:  # its decorators ran into another registry: run them again
                        importlib.reload(target)
                elif callable(target):
                    target(registry)
        except ReplayError:
            raise
        except Exception as exc:
            raise PluginLoadError(
                f"entry point {entry.name!r} ({entry.value}) in group {ENTRY_POINT_GROUP!r} failed "
                f"to load: {type(exc).__name__}: {exc}"
            ) from exc
        loaded.append(entry.name)
    return loaded


def load_object(spec: str, what: str) -> Any:
    """``module:name`` or ``path/to/file.py:name`` → the object (``what`` names it in errors)."""
    module_name, _, attribute = spec.rpartition(":")
    if not module_name or not attribute:
        raise PluginLoadError(f"{what} {spec!r} must look like module:function or file.py:function")
    scratch = Registry()  # whatever the module registers is not wanted here
    with scratch.collecting():
        module = _load_one(module_name, f"{what} module")
    found = getattr(module, attribute, None)
    if found is None:
        raise PluginLoadError(
            f"{what} {spec!r}: module {module_name!r} has no attribute {attribute!r}"
        )
    if not callable(found):
        raise PluginLoadError(f"{what} {spec!r} is not callable: {found!r}")
    return found


def load_verifier(spec: str, registry: Registry) -> None:
    """``--verifier module:function`` (or ``path.py:function``) replaces any registered verifier."""
    registry.replace_verifier(load_object(spec, "--verifier"))
