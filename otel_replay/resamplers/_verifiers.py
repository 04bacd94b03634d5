"""Verifiers without code: ``--success-if REGEX`` and ``--fail-if REGEX`` on the run's final answer.

`answer_verifier` scores a trajectory 1.0 when its `Trajectory.final_answer` matches the success
pattern (when given) and does not match the failure pattern (when given), else 0.0; a run without a
final answer fails. Patterns are regular expressions in RE2's syntax (`otel_replay._regex`: a
model's answer is searched in time linear in its length, whatever the pattern), searched anywhere
in the answer.
"""

from __future__ import annotations

from otel_replay._regex import PatternError, compiled, searches
from otel_replay.errors import RegistrationError, setting
from otel_replay.model import Trajectory


class AnswerVerifier:
    """A verifier on the final answer (the reports name it by its patterns)."""

    def __init__(self, success_if: str | None, fail_if: str | None) -> None:
        if success_if is None and fail_if is None:
            raise RegistrationError(
                f"an answer verifier needs {setting('success_if')} or {setting('fail_if')} (or "
                "both)"
            )
        #: the patterns, as a run's metadata remembers them (``answer_verifier``)
        self.patterns = {"success_if": success_if, "fail_if": fail_if}
        self._success = _compiled(success_if, "success_if")
        self._failure = _compiled(fail_if, "fail_if")
        tests = [f"success_if({success_if!r})"] if success_if is not None else []
        tests += [f"fail_if({fail_if!r})"] if fail_if is not None else []
        self.__qualname__ = " and ".join(tests)
        self.__module__ = "builtin"  # how reports name it: builtin.success_if('v841')

    def __call__(self, trajectory: Trajectory) -> float:
        answer = trajectory.final_answer
        if answer is None:
            return 0.0
        if self._success is not None and not searches(self._success, answer):
            return 0.0
        if self._failure is not None and searches(self._failure, answer):
            return 0.0
        return 1.0


def answer_verifier(success_if: str | None = None, fail_if: str | None = None) -> AnswerVerifier:
    """The verifier of ``--success-if`` / ``--fail-if`` (raises `RegistrationError` for a pattern
    that is not a regular expression, naming it)."""
    return AnswerVerifier(success_if, fail_if)


def _compiled(pattern: str | None, name: str) -> str | None:
    """``pattern`` once checked (RE2 keeps it compiled, `otel_replay._regex.compiled`)."""
    if pattern is None:
        return None
    try:
        compiled(pattern)
    except PatternError as exc:
        raise RegistrationError(
            f"{setting(name, pattern, quoted=True)} is not a regular expression: {exc}"
        ) from None
    return pattern
