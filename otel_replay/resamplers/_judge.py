"""A verifier for success criteria a pattern cannot check: ``--judge QUESTION``.

A model on an OpenAI-compatible ``/v1/chat/completions`` server (the ``--llm-*`` server, or OpenAI's)
is asked ``QUESTION`` about a run: it is shown the task (the run's first user message, else its
recorded input) and the final answer (`Trajectory.final_answer`, what ``--success-if`` reads), and
asked for a JSON object ``{"verdict": "yes" | "no", "reason": "..."}``. ``yes`` scores 1.0, ``no``
0.0; a run without a final answer scores 0.0 and no model is asked.

Deterministic as far as a model can be: the judge asks at temperature 0, and it keeps each verdict
by the answer it judged (with the task and the model), so one answer is judged once, however many
rollouts reach it, and every rollout that reached it gets the same verdict. The verdicts live in the
`Judge` that made them: attribution scores every rollout in the process that runs it (rollouts made
by a process pool or Ray come back to it to be scored), so one attribution has one cache whatever
its executor; `attribute` of many runs judges each run's answers in the worker attributing that run.

A reply is read leniently (a JSON object alone, in a code fence, or inside prose; a reply that
starts with the word yes or no), and what still says neither is an error naming the reply: counting
it as a failure, or leaving it out, would change the failure rates the attribution estimates without
saying so.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from otel_replay.errors import VerifierError, setting
from otel_replay.messages import message_text
from otel_replay.model import StepKind, Trajectory
from otel_replay.resamplers._openai import counted_tokens, failed_request, openai_client, server
from otel_replay.transcript import task as task_asked

#: What the judge is told it is; the question, the task and the answer follow in the user message.
INSTRUCTIONS = (
    "You judge the final answer of an AI agent against one question. Read the agent's task and "
    "its final answer, then answer the question about that answer with yes or no. Reply with "
    'only a JSON object: {"verdict": "yes" or "no", "reason": "one sentence saying why"}.'
)

#: How much of an unreadable reply an error shows.
_SHOWN = 200


@dataclass(frozen=True, slots=True)
class JudgeOptions:
    """
    Attributes:
        question: what the judge is asked about the final answer (yes: success).
        base_url: the server (``…/v1``); default ``$OPENAI_BASE_URL``, else OpenAI's. The
            command line's ``--judge-base-url``, else its ``--llm-base-url``.
        model: the judge's model; default the run's recorded model (its first model turn's).
        max_retries: retries (with backoff) of a rate-limited or failed request.
        timeout_s: how long one request may take.
    """

    question: str
    base_url: str | None = None
    model: str | None = None
    max_retries: int = 4
    timeout_s: float = 60.0

    def canonical(self) -> dict[str, Any]:
        """What can change a verdict (the retries and the timeout cannot)."""
        return {"question": self.question, "base_url": self.base_url, "model": self.model}

    def flags(self, llm_base_url: str | None = None) -> list[str]:
        """The options naming this judge (``llm_base_url``: the server ``--llm-base-url`` names,
        which the judge asks unless told otherwise)."""
        flags = ["--judge", self.question]
        if self.model:
            flags += ["--judge-model", self.model]
        if self.base_url and self.base_url != llm_base_url:
            flags += ["--judge-base-url", self.base_url]
        return flags


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """What the judge said of one final answer: ``verdict`` is ``yes`` or ``no``."""

    answer: str
    verdict: str
    reason: str
    model: str

    @property
    def score(self) -> float:
        return 1.0 if self.verdict == "yes" else 0.0

    def to_record(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "verdict": self.verdict,
            "reason": self.reason,
            "model": self.model,
        }


@dataclass(frozen=True, slots=True)
class JudgeTally:
    """A verdict and how many of the runs the judge scored gave its answer."""

    verdict: JudgeVerdict
    runs: int


@dataclass(frozen=True, slots=True)
class JudgeSummary:
    """What a judge did in one attribution: its question, the model calls it made (the distinct
    answers it had not judged before), and each verdict with the runs that reached it."""

    question: str
    calls: int
    verdicts: tuple[JudgeTally, ...]


class Judge:
    """The verifier of ``--judge QUESTION``. Safe to call from many threads at once: a verdict
    being asked for is waited for, never asked twice. The client is made on the first call, so a
    judge built where it is never called (a worker that only rolls out) opens no connection."""

    def __init__(self, options: JudgeOptions) -> None:
        if not options.question.strip():
            raise VerifierError(f"{setting('judge', '', quoted=True)} asks no question")
        self.options = options
        self.base_url = server(
            options.base_url, setting("judge"), setting("judge_base_url", "URL", text="URL")
        )
        self._client: Any = None
        self._errors: tuple[type[Exception], ...] = ()
        self._lock = threading.Lock()
        self._verdicts: dict[tuple[str, str, str], Future[JudgeVerdict]] = {}
        self._runs: Counter[tuple[str, str, str]] = Counter()
        self.calls = 0  # requests made: one per distinct answer judged
        shown = options.question if len(options.question) <= 60 else options.question[:59] + "…"
        self.__qualname__ = f"judge({shown!r}, model={options.model or 'recorded'})"
        self.__module__ = "builtin"

    def __call__(self, trajectory: Trajectory) -> float:
        verdict = self.verdict(trajectory)
        return 0.0 if verdict is None else verdict.score

    def verdict(self, trajectory: Trajectory, *, counted: bool = True) -> JudgeVerdict | None:
        """The verdict on ``trajectory``'s final answer (None: it has none, and scores 0.0),
        asked of the model unless this answer was judged before (``counted``: the run is one
        more that reached it, as `summary` tallies)."""
        answer = trajectory.final_answer
        if answer is None:
            return None
        task = task_of(trajectory)
        model = self.options.model or recorded_model(trajectory)
        key = (task, answer, model)
        with self._lock:
            self._runs[key] += counted
            pending = self._verdicts.get(key)
            asking = pending is None
            if pending is None:
                pending = self._verdicts[key] = Future()
                self.calls += 1
        if asking:
            try:
                pending.set_result(self._ask(task, answer, model))
            except BaseException as exc:
                pending.set_exception(exc)
        return pending.result()

    def summary(self, calls_before: int = 0) -> JudgeSummary:
        """The verdicts so far, each with the runs that reached it (``calls_before``: the calls
        made before the part being summed up began)."""
        with self._lock:
            done = [
                (future.result(), self._runs[key])
                for key, future in self._verdicts.items()
                if future.done() and future.exception() is None
            ]
        tallies = tuple(JudgeTally(verdict, runs) for verdict, runs in done)
        return JudgeSummary(self.options.question, self.calls - calls_before, tallies)

    def close(self) -> None:
        """Close the client's connections (if it made any)."""
        if self._client is not None:
            self._client.close()

    def _ask(self, task: str, answer: str, model: str) -> JudgeVerdict:
        with self._lock:
            if self._client is None:
                self._client, self._errors = openai_client(
                    self.base_url,
                    setting("judge"),
                    self.options.max_retries,
                    self.options.timeout_s,
                )
        prompt = (
            f"Question: {self.options.question}\n\n"
            f"The agent's task:\n{task}\n\n"
            f"The agent's final answer:\n{answer}"
        )
        try:
            response = self._client.chat.completions.create(
                model=model,
                messages=[
                    {"role": "system", "content": INSTRUCTIONS},
                    {"role": "user", "content": prompt},
                ],
                temperature=0,
            )
        except self._errors as exc:
            raise VerifierError(f"the judge: {failed_request(self.base_url, exc)}") from None
        reply = response.choices[0].message.content or ""
        verdict, reason = read_verdict(reply)
        return JudgeVerdict(answer, verdict, reason, model)


def judge(options: JudgeOptions) -> Judge:
    """The verifier of ``--judge`` (raises `RegistrationError` when no server is named, and
    `VerifierError` for an empty question)."""
    return Judge(options)


def read_verdict(reply: str) -> tuple[str, str]:
    """``(verdict, reason)`` from a judge's reply: a JSON object (alone, in a code fence, or the
    first ``{…}`` in prose) whose ``verdict`` is yes or no (any case; true and false too), else a
    reply whose first word is yes or no (the rest its reason). Anything else is a
    `VerifierError` showing the reply."""
    text = reply.strip()
    for candidate in _objects(text):
        if isinstance(candidate, dict) and "verdict" in candidate:
            verdict = _yes_no(candidate["verdict"])
            if verdict is not None:
                reason = candidate.get("reason")
                return verdict, reason if isinstance(reason, str) else message_text(reason or "")
    first = re.match(r"\W*(yes|no)\b\W*(.*)", text, re.IGNORECASE | re.DOTALL)
    if first:
        return first.group(1).lower(), first.group(2).strip()
    shown = text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
    raise VerifierError(
        f'the judge answered {shown!r}, not a verdict: it must reply {{"verdict": "yes" or '
        '"no", "reason": "..."}'
    )


def _objects(text: str) -> list[Any]:
    """The JSON values ``text`` may hold: itself, a fenced block's content, its first ``{…}``."""
    found = [text]
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fence:
        found.append(fence.group(1))
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        found.append(text[start : end + 1])
    values = []
    for candidate in found:
        try:
            values.append(json.loads(candidate))
        except ValueError:
            continue
    return values


def _yes_no(value: Any) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and value.strip().lower().strip(".!") in ("yes", "no"):
        return value.strip().lower().strip(".!")
    return None


def task_of(trajectory: Trajectory) -> str:
    """What the agent was asked (`otel_replay.transcript.task`), or a note that it was not
    recorded."""
    asked = task_asked(trajectory.steps, trajectory.metadata)
    return "(not recorded)" if asked is None else asked


def ask_model(
    base_url: str | None,
    model: str,
    instructions: str,
    prompt: str,
    needed_by: str,
    *,
    max_retries: int = 4,
    timeout_s: float = 60.0,
) -> tuple[str, int | None]:
    """One question to the judge's server (``base_url``, as `server` resolves it) through the
    judge's client, at temperature 0: the reply's text and the tokens the server counted (None:
    it did not). A request that fails after its retries is a `VerifierError` naming
    ``needed_by``."""
    client, errors = openai_client(base_url, needed_by, max_retries, timeout_s)
    try:
        response = client.chat.completions.create(
            model=model,
            messages=[
                {"role": "system", "content": instructions},
                {"role": "user", "content": prompt},
            ],
            temperature=0,
        )
    except errors as exc:
        raise VerifierError(f"{needed_by}: {failed_request(base_url, exc)}") from None
    finally:
        client.close()
    tokens = counted_tokens(response, ("prompt_tokens", "completion_tokens"))
    return response.choices[0].message.content or "", tokens


def recorded_model(trajectory: Trajectory) -> str:
    """The model of the run's first model turn (what ``--llm openai`` asks by default)."""
    for step in trajectory.steps:
        if step.kind is StepKind.LLM:
            model = step.inputs.get("model")
            return model if isinstance(model, str) and model else step.name
    raise VerifierError(
        f"run {trajectory.id} has no model turn whose model could judge it: name one with "
        f"{setting('judge_model', 'MODEL', text='MODEL')}"
    )


def judged(trajectory: Trajectory, verifier: object) -> Trajectory:
    """``trajectory`` with the verdict that scored it in its metadata (``judge``: the question,
    verdict, reason and model) when ``verifier`` is a `Judge`; else as it is. The verdict is the
    one the judge gave when it scored the run (asked now only if it never did)."""
    if not isinstance(verifier, Judge):
        return trajectory
    verdict = verifier.verdict(trajectory, counted=False)
    said = (
        {"verdict": None, "reason": "the run has no final answer"}
        if verdict is None
        else verdict.to_record()
    )
    metadata = {**trajectory.metadata, "judge": {"question": verifier.options.question, **said}}
    return dataclasses.replace(trajectory, metadata=metadata)
