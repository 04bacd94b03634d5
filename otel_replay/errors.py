"""Every error agent-replay raises on purpose.

::

    ReplayError                      base; the CLI renders it as one line and exits 1
    ├── TraceFormatError (ValueError)    a trace file that cannot be read: path, line or byte offset, what
    │   └── EditedContentError           a native JSONL run edited after export: its stored hashes no
    │                                    longer match its steps (the run and the step)
    ├── CanonicalJSONError (ValueError)  a value that does not survive a JSON round trip
    ├── StoreError                       the store cannot be opened or has an unknown schema version
    ├── OutputError (OSError)            an output file cannot be written: the file and why (a full
    │                                    disk, a file-size limit, a folder named as the file)
    ├── NotFoundError (LookupError)      no trajectory (or more than one) matches an id or prefix
    ├── RegistrationError (TypeError)    a resample function, verifier or repair source is unusable
    ├── PluginLoadError (ImportError)    a resampler module or entry point cannot be loaded
    ├── VerifierError (ValueError)       no verifier, one that returned no number, a judge's reply that is
    │                                    no verdict
    ├── RolloutError (RuntimeError)      a resample function raised during a rollout
    │   └── UnservableError              a rollout made a call nothing can answer (no run recorded it)
    ├── AttributionError (ValueError)    attribution asked of a run it cannot be done on
    ├── NonDeterminismError (RuntimeError) a replayed agent made a call the record does not have
    ├── AgentError (RuntimeError)        an agent cannot be loaded or run as asked
    ├── RecorderError (RuntimeError)     agent-replay's own recording failed while an agent ran
    ├── ExportError (ConnectionError)    an OTLP endpoint cannot be reached, or refuses what is sent
    ├── InterventionError (ValueError)   a fork or plan names a step the run does not have, or an
    │                                    unknown fault or option; a resume of a run that finished
    ├── SettingError (ValueError)        a setting (a keyword, an option, an environment variable)
    │                                    whose value cannot be used, or settings that do not go together
    ├── AddressError (ValueError)        an address that cannot be used as given: no URL, credentials
    │                                    in it, no host, a bad port, a platform's without its project
    ├── PlatformError                    Phoenix, MLflow or Jaeger unreachable, answering what it should
    │                                    not, lacking what was named, or holding more than an import takes
    ├── ListenError (OSError)            the receiver or the viewer cannot listen on its host and port
    ├── ExecutorError (RuntimeError)     an executor cannot reach its workers (a Ray cluster)
    ├── MissingExtraError (ImportError)  an optional package the feature asked for is not installed
    ├── ReportFormatError (ValueError)   a file given as an attribution report is not one
    ├── TooLargeError (ValueError)       a run larger than the format asked for can hold
    ├── UnreplayableError (ValueError)   a replay or fork needs steps whose record lacks their result
    │                                    (the replayability reasons, `otel_replay.replayable`)
    └── ConfigError (ValueError)         a configuration file (agent-replay.toml) that cannot be
                                         read: the file, the line, the key and its value

Messages show the offending value, and name a setting as the caller gave it (`setting`): the
keyword a Python caller passes (``swap_model='gpt-4o'``), or, while a command runs, the command
line's option (``--swap-model gpt-4o``). The library names the concept; the command adds its flag.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

__all__ = [
    "AddressError",
    "AgentError",
    "AttributionError",
    "CanonicalJSONError",
    "ConfigError",
    "EditedContentError",
    "ExecutorError",
    "ExportError",
    "InterventionError",
    "ListenError",
    "MissingExtraError",
    "NonDeterminismError",
    "NotFoundError",
    "OutputError",
    "PlatformError",
    "PluginLoadError",
    "RecorderError",
    "RegistrationError",
    "ReplayError",
    "ReportFormatError",
    "RolloutError",
    "SettingError",
    "StoreError",
    "TooLargeError",
    "TraceFormatError",
    "UnreplayableError",
    "UnservableError",
    "VerifierError",
    "preview",
    "quoting_through",
    "setting",
    "settings_as_options",
]


def preview(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters: how messages show an offending value; while
    `quoting_through` is in force, redacted before it is cut (a secret cut short would no longer
    be matched)."""
    text = repr(value)
    scrub = _QUOTING.get()
    if scrub is not None:
        text = scrub(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: How `preview` passes what it quotes: the redaction an import or a request is read under.
_QUOTING: ContextVar[Callable[[str], str] | None] = ContextVar("quoting", default=None)


@contextmanager
def quoting_through(scrub: Callable[[str], str]) -> Iterator[None]:
    """While in force (in this thread or task), `preview` passes what it quotes through ``scrub``
    (``import --redact`` and ``serve --redact`` read under their patterns)."""
    token = _QUOTING.set(scrub)
    try:
        yield
    finally:
        _QUOTING.reset(token)


_NO_VALUE: Any = object()
#: While a command runs: the option of each setting whose option is not its name with dashes
#: (``swap_from`` is ``--from``); None: settings are named as Python callers pass them.
_OPTIONS: Mapping[str, str] | None = None


def setting(
    name: str, value: Any = _NO_VALUE, *, quoted: bool = False, text: str | None = None
) -> str:
    """The setting ``name`` (a keyword: ``swap_model``), with ``value`` if given, as a message names
    it: ``swap_model='gpt-4o'`` for a Python caller; ``--swap-model gpt-4o`` while a command runs
    (`settings_as_options`; ``quoted``: the value as its ``repr`` there too). ``text``: how to
    write the value, for both (a number as ``f"{x:g}"``)."""
    if _OPTIONS is None:
        if value is _NO_VALUE:
            return name
        return f"{name}={value!r}" if text is None else f"{name}={text}"
    option = _OPTIONS.get(name) or "--" + name.replace("_", "-")
    if value is _NO_VALUE:
        return option
    if text is not None:
        return f"{option} {text}"
    return f"{option} {value!r}" if quoted else f"{option} {value}"


@contextmanager
def settings_as_options(options: Mapping[str, str]) -> Iterator[None]:
    """While the block runs, messages name settings as the command line's options (``options``:
    those that are not the setting's name with dashes). Process-wide, so rollouts on other
    threads speak the same way."""
    global _OPTIONS
    before, _OPTIONS = _OPTIONS, dict(options)
    try:
        yield
    finally:
        _OPTIONS = before


class ReplayError(Exception):
    """Base of every error agent-replay raises deliberately."""


class TraceFormatError(ReplayError, ValueError):
    """A trace file, or one record in it, cannot be read.

    Attributes:
        path: the file (``None`` for in-memory input).
        line: 1-based line number when the format is line-oriented or the position is known.
        offset: byte offset for binary input.
        where: a JSON path inside the record (``resourceSpans[0].scopeSpans[1].spans[3].kind``).
        reason: what was wrong, showing the offending value.
    """

    def __init__(
        self,
        reason: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        offset: int | None = None,
        where: str | None = None,
    ) -> None:
        self.reason = reason
        self.path = str(path) if path is not None else None
        self.line = line
        self.offset = offset
        self.where = where
        super().__init__(self._render())

    def _render(self) -> str:
        location = self.path or "<input>"
        if self.line is not None:
            location += f":{self.line}"
        if self.offset is not None:
            location += f" (byte {self.offset})"
        at = f" at {self.where}" if self.where else ""
        return f"{location}: {self.reason}{at}"

    def located(
        self,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        offset: int | None = None,
    ) -> TraceFormatError:
        """Return a copy that also names the file and position (keeps what is already known)."""
        return TraceFormatError(
            self.reason,
            path=self.path or path,
            line=self.line if self.line is not None else line,
            offset=self.offset if self.offset is not None else offset,
            where=self.where,
        )


class EditedContentError(TraceFormatError):
    """A native JSONL run (an export, a cassette) whose steps no longer match the hashes it was
    written with: its content was edited afterwards. Read leniently it is still read, its hashes
    made afresh from the content as it is now, and this is its warning (`ReadReport.edited`);
    read strictly (``ReadOptions.strict``) it is refused with this error.

    Attributes (besides `TraceFormatError`'s ``path`` and ``line``, the line the step is on):
        run_id: the run.
        step_index: the first step whose stored hash is not the hash of its content (a step is
            checked against the hash stored before it, so an edit is named where it was made, not
            at every step chained after it); None when every step matches and only the run's
            ``final_hash`` does not (steps removed from its end, or added).
        step_name: that step's name (None with ``step_index``).
        others: how many later steps of the run do not match either.
    """

    def __init__(
        self,
        *,
        path: str | Path | None,
        line: int | None,
        run_id: str,
        step_index: int | None,
        step_name: str | None = None,
        others: int = 0,
    ) -> None:
        self.run_id, self.step_index, self.step_name, self.others = (
            run_id,
            step_index,
            step_name,
            others,
        )
        if step_index is None:
            what = "its final_hash no longer names its steps: steps were removed or added"
        else:
            what = f"step {step_index} {step_name!r} no longer matches its stored hash"
            if others:
                what += f" (nor {'does' if others == 1 else 'do'} {others} later "
                what += "step)" if others == 1 else "steps)"
            what += ": its content was edited"
        super().__init__(f"run {run_id!r}: {what} after export", path=path, line=line)

    def located(
        self,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        offset: int | None = None,
    ) -> EditedContentError:
        """A copy that also names the file and line (keeps what is already known)."""
        return EditedContentError(
            path=self.path or path,
            line=self.line if self.line is not None else line,
            run_id=self.run_id,
            step_index=self.step_index,
            step_name=self.step_name,
            others=self.others,
        )


class CanonicalJSONError(ReplayError, ValueError):
    """A value cannot be stored as canonical JSON (NaN, a set, bytes, a non-string key, ...)."""


class ConfigError(ReplayError, ValueError):
    """A configuration file that cannot be read: no TOML, a key no command takes, a table that
    is no command, a value of the wrong type (``FILE:LINE: KEY = VALUE: what was wrong``)."""


class StoreError(ReplayError):
    """The store cannot be opened or used.

    Attributes (set when the store refused a write, so a caller can say what it keeps):
        refused: what stopped the write (``no space left on the disk holding ...``).
        fix: what the user can do about it (``free some space``).
    """

    def __init__(self, message: str, *, refused: str | None = None, fix: str | None = None) -> None:
        super().__init__(message)
        self.refused, self.fix = refused, fix


class OutputError(ReplayError, OSError):
    """An output file (``--out``, ``--json-out``, ``--html``, an export, a cassette) cannot be
    written: ``cannot write FILE: REASON``. A file being replaced is left as it was.

    Attributes (besides `OSError`'s ``errno``, ``strerror``, which is the reason, and
    ``filename``):
        path: the file as the caller named it.
        reason: why, in the system's words (``No space left on device``) or ours.
    """

    def __init__(self, path: str | Path, reason: str, *, errno: int | None = None) -> None:
        super().__init__(errno, reason, str(path))
        self.path, self.reason = str(path), reason

    @classmethod
    def of(cls, path: str | Path, exc: OSError) -> OutputError:
        """The error for ``exc``, raised writing ``path``."""
        return cls(path, exc.strerror or str(exc), errno=exc.errno)

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.reason}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_output_error, (self.path, self.reason, self.errno))


class NotFoundError(ReplayError, LookupError):
    """No trajectory matches an id or prefix, or a prefix is ambiguous."""


class RegistrationError(ReplayError, TypeError):
    """A resample function, verifier or repair-candidate source cannot be registered."""


class PluginLoadError(ReplayError, ImportError):
    """A ``--resamplers`` module or an ``otel_replay.resamplers`` entry point failed to load."""


class VerifierError(ReplayError, ValueError):
    """There is no verifier, or it returned something that is not a finite number."""


class RolloutError(ReplayError, RuntimeError):
    """A resample function raised; names the step, the function and the exception."""

    def __init__(self, message: str, *, step_index: int, function: str) -> None:
        super().__init__(message)
        self.step_index = step_index
        self.function = function

    def __reduce__(self) -> tuple[Any, ...]:  # crosses to and from worker processes intact
        return (_rollout_error, (str(self), self.step_index, self.function))


class UnservableError(RolloutError):
    """A rollout made a call nothing can answer: ``--tools recorded`` found no run that recorded
    that tool called with those arguments (and no fallback was chosen). Attribution holds such a
    rollout as unservable (neither a success nor a failure, left out of the estimates, counted
    and reported with the call); a resample function of a user's may raise it for the same reason.
    ``arguments`` is the call's arguments as canonical JSON text; ``draws``, what the rollout was
    served from the store before it (set by whoever ran the rollout)."""

    def __init__(
        self,
        message: str,
        *,
        step_index: int,
        function: str,
        tool: str,
        arguments: str,
        draws: Any = None,
    ) -> None:
        super().__init__(message, step_index=step_index, function=function)
        self.tool = tool
        self.arguments = arguments
        self.draws = draws

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _unservable_error,
            (str(self), self.step_index, self.function, self.tool, self.arguments, self.draws),
        )


class AttributionError(ReplayError, ValueError):
    """Attribution cannot run as asked (a passing run without ``--on-success credit``, ...)."""


class NonDeterminismError(ReplayError, RuntimeError):
    """A replayed agent asked for an operation the record does not hold: the timeline diverged.

    The message names the step and lists the nearest recorded calls with what differed.
    """

    def __init__(self, message: str, *, step_index: int) -> None:
        super().__init__(message)
        self.step_index = step_index

    def __reduce__(self) -> tuple[Any, ...]:
        return (_nondeterminism_error, (str(self), self.step_index))


class AgentError(ReplayError, RuntimeError):
    """An agent function cannot be loaded, or was called with inputs it does not accept."""


class RecorderError(ReplayError, RuntimeError):
    """agent-replay's own recording failed while an agent ran (its bookkeeping, or the ledger that
    keeps the run as it is made): the agent was let go on untouched, but what was recorded is not
    what it did, so the run is never kept as the agent's outcome."""


class ExportError(ReplayError, ConnectionError):
    """An OTLP endpoint cannot be reached, or answers what is sent with an error status: the
    message names the URL and the status (``status`` holds it; None: no answer came)."""

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url, self.status = url, status

    def __reduce__(self) -> tuple[Any, ...]:
        return (_export_error, (str(self), self.url, self.status))


class InterventionError(ReplayError, ValueError):
    """A fork, fault or plan asks for something the run cannot take: a step it does not have, an
    unknown fault, an option outside its range, a resume of a run whose agent returned."""


class UnreplayableError(ReplayError, ValueError):
    """A replay or fork would serve steps whose record lacks what serving needs (their result, cut
    or hidden by the instrumentation); the message names the steps and what each lacks. Also a
    recorded run whose seed is not an integer: its agent cannot be run again as it was."""


class SettingError(ReplayError, ValueError):
    """A setting (a keyword a Python caller passes, a command line's option, an environment
    variable) has a value that cannot be used, or names something that does not go with the
    other settings; the message names the setting (`setting`) and shows the value."""


class AddressError(ReplayError, ValueError):
    """An address cannot be used as given: not a URL, not of a scheme the setting takes, a user
    name or password in it, no host, a port that is no number from 1 to 65535, or a platform's
    address (``phoenix://HOST:PORT/PROJECT``) without the project, experiment or service it must
    name, or of a platform that cannot take what is asked of it."""


class PlatformError(ReplayError):
    """An observability platform (Phoenix, MLflow, Jaeger) cannot be reached, answers with what it
    should not (no JSON, a page without its list, errors), lacks what was named (a project, an
    experiment, a service, a run's spans or trace), or holds more than one import follows or
    keeps; or a run has no span or trace the platform could know it by. The message names the
    platform's address and what it gave up on."""


class ListenError(ReplayError, OSError):
    """A server of agent-replay's (the OTLP receiver of ``serve``, the viewer of ``ui``) cannot
    listen on its host and port; the message says why and which setting picks another port."""


class ExecutorError(ReplayError, RuntimeError):
    """An executor cannot start or reach its workers (a Ray cluster that does not answer)."""


class MissingExtraError(ReplayError, ImportError):
    """A feature asked for needs an optional package that is not installed; the message gives the
    command that installs its extra."""


class ReportFormatError(ReplayError, ValueError):
    """A file given as an attribution report cannot be read as one: no JSON, no object, a version
    this agent-replay does not read, or a field of the wrong type."""


class TooLargeError(ReplayError, ValueError):
    """A run larger than the format asked for can hold (a request of a length-prefixed protobuf
    export beyond its 4-byte length)."""


def _export_error(message: str, url: str, status: int | None) -> ExportError:
    return ExportError(message, url=url, status=status)


def _output_error(path: str, reason: str, errno: int | None) -> OutputError:
    return OutputError(path, reason, errno=errno)


def _rollout_error(message: str, step_index: int, function: str) -> RolloutError:
    return RolloutError(message, step_index=step_index, function=function)


def _unservable_error(
    message: str, step_index: int, function: str, tool: str, arguments: str, draws: Any
) -> UnservableError:
    return UnservableError(
        message,
        step_index=step_index,
        function=function,
        tool=tool,
        arguments=arguments,
        draws=draws,
    )


def _nondeterminism_error(message: str, step_index: int) -> NonDeterminismError:
    return NonDeterminismError(message, step_index=step_index)
