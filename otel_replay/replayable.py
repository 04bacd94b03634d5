"""Replayability: what a run's record lets agent-replay do with it, and what it lacks.

`replayability(run)` reads a trajectory and says, step by step, what its instrumentation left out:

* a model call without its input messages, or with messages whose content was not captured
  (OTel GenAI instrumentations record none unless asked): it cannot be **re-asked**;
* a tool call without its arguments: it cannot be **resampled** as the same call; a step without
  its result (status ok, no output): it cannot be **served**;
* a value the instrumentation cut: a truncation marker at its end (``[TRUNCATED]``, ``...
  (truncated)``, ``<truncated 120 chars>``, ...), or **length clustering**: the OTel SDK's attribute
  length limit (``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, ``SpanLimits(max_attribute_length=N)``)
  cuts every longer string at exactly N characters and says nothing, so two or more different
  strings of one run ending at exactly the same length, none longer, were cut there (an ellipsis
  appended after the cut is read as part of the same marker);
* a value the instrumentation hid (OpenInference's ``__REDACTED__``, its ``OPENINFERENCE_HIDE_*``
  settings);
* a step no span recorded, rebuilt from the conversation (``metadata["reconstructed_steps"]``): it
  has no span id or clock, its content is what the next turn showed.

The verdict: **replayable** with nothing to say; **not-replayable** when the run has no steps, or
not one of its steps can be re-run or served (attribution has nothing to work with: `lint`'s exit
1, `attribute`'s refusal); **partial** otherwise. A pure function of the run: the store keeps the
verdict of each run it holds (``list`` reads it from the row), ``show`` and ``lint`` compute the
reasons again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from otel_replay.errors import AttributionError, UnreplayableError
from otel_replay.messages import conversation
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.transcript import chained, previous_response

__all__ = [
    "Replayability",
    "ReplayabilityGap",
    "ReplayabilityReason",
    "ReplayabilityVerdict",
    "check_attributable",
    "check_servable",
    "lacking_note",
    "replayability",
]


class ReplayabilityVerdict(str, Enum):
    """What a run's record allows: everything, part of it, or nothing attribution can use."""

    REPLAYABLE = "replayable"
    PARTIAL = "partial"
    NOT_REPLAYABLE = "not-replayable"


class ReplayabilityGap(str, Enum):
    """What one step's record lacks (or, for the rebuilt and unrecognised, how it was made)."""

    NO_MESSAGES = "no-input-messages"
    NO_CONTENT = "no-message-content"
    NO_ARGUMENTS = "no-arguments"
    NO_INPUT = "no-input"
    NO_RESULT = "no-result"
    TRUNCATED_INPUT = "truncated-input"
    TRUNCATED_OUTPUT = "truncated-output"
    HIDDEN_INPUT = "hidden-input"
    HIDDEN_OUTPUT = "hidden-output"
    REBUILT = "rebuilt"
    NO_OPERATIONS = "no-operations"
    NO_STEPS = "no-steps"


#: The gaps that keep a step from being re-run (re-asked, resampled as the same call).
_NOT_RERUN = frozenset(
    {
        ReplayabilityGap.NO_MESSAGES,
        ReplayabilityGap.NO_CONTENT,
        ReplayabilityGap.NO_ARGUMENTS,
        ReplayabilityGap.NO_INPUT,
        ReplayabilityGap.TRUNCATED_INPUT,
        ReplayabilityGap.HIDDEN_INPUT,
    }
)
#: The gaps that keep a step from being served as it happened.
_NOT_SERVED = frozenset(
    {ReplayabilityGap.NO_RESULT, ReplayabilityGap.TRUNCATED_OUTPUT, ReplayabilityGap.HIDDEN_OUTPUT}
)

#: OpenInference's value for what its trace configuration hides (``REDACTED_VALUE``).
HIDDEN_VALUE = "__REDACTED__"
#: A truncation marker at the end of a value, as instrumentations and SDKs append them.
TRUNCATION_MARKER = re.compile(
    r"(?:(?:\.\.\.|…)\s*)?"
    r"(?:[\[(<]\s*(?:\.\.\.\s*)?(?:truncated|\d+\s+(?:more\s+)?(?:chars?|characters|bytes|tokens)"
    r"\s+(?:truncated|omitted|elided|removed))[^\])>\n]{0,60}[\])>]"
    r"|(?:\.\.\.|…)\s*truncated)\s*$",
    re.IGNORECASE,
)
#: The shortest length read as an attribute length limit: shorter strings of equal length are
#: common (ids, dates, short answers), cut ones are not.
MIN_CUT_LENGTH = 64
_ELLIPSES = ("...", "…")


@dataclass(frozen=True, slots=True)
class ReplayabilityReason:
    """One thing a run's record lacks: the step (None: the run as a whole), what is missing, and
    where (``where``: the value's path, as ``output.content`` or ``inputs.messages[1].content``)."""

    step: int | None
    kind: StepKind | None
    name: str | None
    gap: ReplayabilityGap
    detail: str

    @property
    def rerun(self) -> bool:
        """Whether the step can still be re-run despite this gap."""
        return self.gap not in _NOT_RERUN

    @property
    def served(self) -> bool:
        """Whether the step can still be served as it happened despite this gap."""
        return self.gap not in _NOT_SERVED

    def __str__(self) -> str:
        if self.step is None:
            return self.detail
        return (
            f"step {self.step} ({self.kind.value if self.kind else '?'} {self.name}): {self.detail}"
        )

    def to_record(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "kind": None if self.kind is None else self.kind.value,
            "name": self.name,
            "missing": self.gap.value,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Replayability:
    """A run's verdict and the reasons for it, in step order (run-level reasons first)."""

    verdict: ReplayabilityVerdict
    reasons: tuple[ReplayabilityReason, ...] = ()

    @property
    def attributable(self) -> bool:
        """Whether attribution has anything to work with (the verdict is not ``not-replayable``)."""
        return self.verdict is not ReplayabilityVerdict.NOT_REPLAYABLE

    def unserved(self, steps: Iterable[int]) -> tuple[ReplayabilityReason, ...]:
        """The reasons that keep any of ``steps`` from being served as recorded."""
        wanted = set(steps)
        return tuple(r for r in self.reasons if r.step in wanted and not r.served)

    def summary(self, limit: int = 3) -> str:
        """One line: the verdict and its first ``limit`` reasons."""
        if not self.reasons:
            return self.verdict.value
        shown = "; ".join(str(r) for r in self.reasons[:limit])
        more = len(self.reasons) - limit
        return f"{self.verdict.value}: {shown}" + (f"; and {more} more" if more > 0 else "")

    def to_record(self) -> dict[str, Any]:
        """The JSON form ``show --json``, ``lint --json`` and the viewer use."""
        return {
            "verdict": self.verdict.value,
            "reasons": [r.to_record() for r in self.reasons],
        }


def replayability(run: Trajectory) -> Replayability:
    """What ``run``'s record allows (see the module's docstring); never raises on a well-formed
    trajectory, whatever its inputs and outputs hold."""
    if not run.steps:
        reason = ReplayabilityReason(
            None, None, None, ReplayabilityGap.NO_STEPS, "the run has no steps"
        )
        return Replayability(ReplayabilityVerdict.NOT_REPLAYABLE, (reason,))
    reasons: list[ReplayabilityReason] = []
    if all(s.kind is StepKind.OTHER for s in run.steps):
        reasons.append(
            ReplayabilityReason(
                None, None, None, ReplayabilityGap.NO_OPERATIONS,
                "no span is an operation a convention recognises (a model call, a tool, a "
                "retrieval): the trace's leaf spans were read as 'other' steps",
            )
        )  # fmt: skip
    cut = _cut_length(run.steps)
    rebuilt = _rebuilt(run)
    blocked = 0
    seen = _Resent()
    for step in run.steps:
        gaps = list(_step_gaps(step, cut, seen))
        if step.index in rebuilt:
            gaps.append((ReplayabilityGap.REBUILT, _why_rebuilt(step)))
        gaps.extend(_chain_gap(run, step))
        reasons.extend(
            ReplayabilityReason(step.index, step.kind, step.name, gap, detail)
            for gap, detail in gaps
        )
        found = {gap for gap, _ in gaps}
        if found & _NOT_RERUN and found & _NOT_SERVED:
            blocked += 1
    if blocked == len(run.steps):
        verdict = ReplayabilityVerdict.NOT_REPLAYABLE
    elif reasons:
        verdict = ReplayabilityVerdict.PARTIAL
    else:
        verdict = ReplayabilityVerdict.REPLAYABLE
    return Replayability(verdict, tuple(reasons))


def _why_rebuilt(step: Step) -> str:
    """What no span recorded of a rebuilt step, and what it was rebuilt from."""
    if step.kind is StepKind.LLM:
        return (
            "no span recorded this model turn: rebuilt from the conversation (a later model "
            "call's input, or the tool calls it made)"
        )
    if step.kind in (StepKind.TOOL, StepKind.RETRIEVER):
        return (
            "no span recorded this tool call: rebuilt from the model's call and the result a "
            "later model call was sent"
        )
    return "no span recorded this step: rebuilt from the conversation"


def _rebuilt(run: Trajectory) -> set[int]:
    listed = run.metadata.get("reconstructed_steps")
    if not isinstance(listed, list):
        return set()
    return {i for i in listed if isinstance(i, int) and not isinstance(i, bool)}


def _step_gaps(
    step: Step, cut: int | None, seen: _Resent
) -> Iterator[tuple[ReplayabilityGap, str]]:
    """What ``step`` lacks, each gap once (its first place)."""
    yield from _missing(step)
    for side, value in (("inputs", step.inputs), ("output", step.output)):
        found: dict[str, str] = {}
        for part in seen.parts(step, side, value):
            for what, detail in part.findings(cut):
                found.setdefault(what, detail)
        for what, detail in found.items():
            yield _SIDE_GAPS[side, what], detail


#: Each side's gap for a value hidden or cut.
_SIDE_GAPS = {
    ("inputs", "hidden"): ReplayabilityGap.HIDDEN_INPUT,
    ("inputs", "cut"): ReplayabilityGap.TRUNCATED_INPUT,
    ("output", "hidden"): ReplayabilityGap.HIDDEN_OUTPUT,
    ("output", "cut"): ReplayabilityGap.TRUNCATED_OUTPUT,
}
#: How far from a value's end a truncation marker is looked for.
_MARKER_WINDOW = 120


class _Part:
    """One value of a step (a message, or the rest of its inputs, or its output), its strings read
    once and what they show found once."""

    __slots__ = ("_found", "strings")

    def __init__(self, where: str, value: Any) -> None:
        self.strings = list(_strings(value, where))
        self._found: tuple[int | None, list[tuple[str, str]]] | None = None

    def findings(self, cut: int | None) -> list[tuple[str, str]]:
        """``("hidden" | "cut", detail)``: the first value hidden and the first cut, if any."""
        if self._found is None or self._found[0] != cut:
            self._found = (cut, _findings(self.strings, cut))
        return self._found[1]


def _findings(strings: Sequence[tuple[str, str]], cut: int | None) -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for where, text in strings:
        if "hidden" not in found and text == HIDDEN_VALUE:
            found["hidden"] = f"{where} hidden by the instrumentation ({HIDDEN_VALUE})"
        elif "cut" not in found and (marker := TRUNCATION_MARKER.search(text[-_MARKER_WINDOW:])):
            found["cut"] = f"{where} cut: it ends with {marker.group().strip()!r}"
        elif "cut" not in found and cut is not None and _cut_at(text, cut):
            found["cut"] = (
                f"{where} cut at {cut} characters (the attribute length limit: values of the "
                "run end at exactly that length, none longer)"
            )
        if len(found) == 2:
            break
    return list(found.items())


class _Resent:
    """Each step's values as parts, a model call's messages that the previous model call sent too
    read only once: an agent resends its history on every call, and reading it again each time
    made the check quadratic in the run's length (500 turns of a growing history: 6.3 s read
    again, 0.63 s so, against 4 s to store the run). A resent message is the same part, with what
    was found in it (a cut message is cut in every call that resends it)."""

    def __init__(self) -> None:
        self._messages: list[Any] = []
        self._parts: list[_Part] = []

    def parts(self, step: Step, side: str, value: Any, *, again: bool = True) -> Iterator[_Part]:
        """The parts of ``value``; ``again=False``: the resent messages left out."""
        messages = value.get("messages") if isinstance(value, dict) else None
        if side != "inputs" or step.kind is not StepKind.LLM or not isinstance(messages, list):
            yield _Part(side, value)
            return
        yield _Part(side, {k: v for k, v in value.items() if k != "messages"})
        parts: list[_Part] = []
        for i, message in enumerate(messages):
            if i < len(self._messages) and self._messages[i] == message:
                parts.append(self._parts[i])
                if again:
                    yield parts[-1]
            else:
                parts.append(_Part(f"{side}.messages[{i}]", message))
                yield parts[-1]
        self._messages, self._parts = messages, parts


def _chain_gap(run: Trajectory, step: Step) -> Iterator[tuple[ReplayabilityGap, str]]:
    """A Responses API call that continues a response the run does not hold: the conversation
    before it stayed on the server, so the call cannot be asked again as it was."""
    if step.kind is not StepKind.LLM:
        return
    previous = previous_response(step.inputs)
    if previous is not None and chained(step, run.steps[: step.index]) is None:
        yield (
            ReplayabilityGap.NO_MESSAGES,
            f"continues response {previous}, which the run does not hold: the conversation "
            "before it stayed on the server, and the call cannot be asked again",
        )


def _missing(step: Step) -> Iterator[tuple[ReplayabilityGap, str]]:
    inputs = step.inputs
    if step.kind is StepKind.LLM:
        # whichever API the call was made in: chat messages, the Responses API's input items
        # and instructions, Anthropic's messages after its system prompt
        messages = inputs.get("messages")
        if not isinstance(messages, list) or not messages:
            messages = conversation(inputs)
        if not messages:
            yield ReplayabilityGap.NO_MESSAGES, "no input messages: the call cannot be asked again"
        elif not any(_has_content(m) for m in messages):
            yield (
                ReplayabilityGap.NO_CONTENT,
                (
                    "input messages without their content (not captured): the call cannot be "
                    "asked again"
                ),
            )
    elif step.kind is StepKind.TOOL:
        if inputs.get("arguments") is None:
            yield (
                ReplayabilityGap.NO_ARGUMENTS,
                "no arguments: the call cannot be made again as it was",
            )
    elif step.kind is not StepKind.OTHER and not inputs:
        yield ReplayabilityGap.NO_INPUT, "no input: it cannot be run again"
    if step.kind is not StepKind.OTHER and step.status is StepStatus.OK and step.output is None:
        yield ReplayabilityGap.NO_RESULT, "no result recorded: it cannot be served"


def _has_content(message: Any) -> bool:
    if not isinstance(message, dict):
        return message not in (None, "")
    return message.get("content") not in (None, "", []) or bool(message.get("tool_calls"))


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string in ``value`` with its path, depth first (iteratively: a value may be deep)."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            yield path, item
        elif isinstance(item, dict):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(item))))


def _bare(text: str) -> str:
    """``text`` without an ellipsis appended after a cut."""
    for ellipsis in _ELLIPSES:
        if text.endswith(ellipsis):
            return text[: -len(ellipsis)]
    return text


def _cut_at(text: str, length: int) -> bool:
    return len(text) == length or (len(_bare(text)) == length and _bare(text) != text)


def _cut_length(steps: Sequence[Step]) -> int | None:
    """The attribute length limit the run's strings show, if they show one: two or more distinct
    strings (an appended ellipsis aside) of exactly the longest length, at least
    `MIN_CUT_LENGTH`. A history resent on every turn repeats one string, so strings count once."""
    longest = 0
    at_longest: set[str] = set()
    seen = _Resent()
    for step in steps:
        for side, value in (("inputs", step.inputs), ("output", step.output)):
            texts = (t for p in seen.parts(step, side, value, again=False) for _, t in p.strings)
            for text in texts:
                bare = _bare(text)
                if len(bare) > longest:
                    longest, at_longest = len(bare), {bare}
                elif len(bare) == longest:
                    at_longest.add(bare)
    if longest >= MIN_CUT_LENGTH and len(at_longest) >= 2:
        return longest
    return None


def check_attributable(run: Trajectory) -> Replayability:
    """``run``'s replayability, or an `AttributionError` naming why attribution has nothing to
    work with (the verdict ``not-replayable``)."""
    verdict = replayability(run)
    if not verdict.attributable:
        raise AttributionError(f"run {run.id} cannot be attributed: {verdict.summary()}")
    return verdict


def check_servable(run: Trajectory, steps: Iterable[int], what: str) -> Replayability:
    """``run``'s replayability, or an `UnreplayableError` when one of ``steps`` (those ``what``,
    a replay or a fork, serves from the record) cannot be served: its result is missing, cut or
    hidden."""
    verdict = replayability(run)
    lacking = verdict.unserved(steps)
    if lacking:
        listed = "; ".join(str(r) for r in lacking[:3])
        more = f"; and {len(lacking) - 3} more" if len(lacking) > 3 else ""
        raise UnreplayableError(
            f"{what} of run {run.id} would serve steps its record cannot give: {listed}{more}"
        )
    return verdict


def lacking_note(verdict: Replayability) -> list[str]:
    """What a command notes of a run whose record lacks something a step needs to be re-run or
    served (a step rebuilt from the conversation lacks neither): none, or one line."""
    lacking = [r for r in verdict.reasons if not (r.rerun and r.served)]
    if not lacking:
        return []
    listed = "; ".join(str(r) for r in lacking[:2])
    more = f"; and {len(lacking) - 2} more" if len(lacking) > 2 else ""
    return [f"the run's record is {verdict.verdict.value}: {listed}{more}"]
