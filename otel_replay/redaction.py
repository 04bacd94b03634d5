"""Redaction: text that must not be stored, replaced with ``[REDACTED]`` before it is.

A pattern is a regular expression; text it matches becomes ``[REDACTED]``, or, when the pattern
has a group named ``secret``, only that group does (``Bearer [REDACTED]``: what the value was stays
readable, never the value). `COMMON_SECRET_PATTERNS` is a set for the secrets agents leak most:
model providers' API keys, bearer tokens and Authorization values, AWS, GitHub and Slack
credentials, private keys. They are plain strings, so ``redact=[*COMMON_SECRET_PATTERNS, r"tok-\\d+"]``
adds them to one's own.

`redact_run` is the one way a whole run is redacted (what `import --redact` and `serve --redact`
store, what a fork or kept rollout of a redacted recording stores): every string of its steps
(names, inputs, outputs, errors), of its metadata and of its span tree, before the hashes are made,
so they cover the redacted content; its metadata's ``redact`` keeps every pattern it was redacted
with (never what they matched). Redacting twice is redacting once: ``[REDACTED]`` itself is never
matched again.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from otel_replay.errors import SettingError, setting
from otel_replay.model import Trajectory

__all__ = [
    "COMMON_SECRET_PATTERNS",
    "REDACTED",
    "Redactor",
    "patterns_of",
    "redact_error",
    "redact_run",
    "with_patterns",
]

REDACTED = "[REDACTED]"

E = TypeVar("E", bound=BaseException)

# A token's characters: what keys and tokens are written with (base64, base64url, dots of a JWT).
_TOKEN = r"[A-Za-z0-9._~+/=-]"

#: Patterns for common secrets (``--redact-common``), each written to leave the words around it
#: (``skill``, ``ask-me``, a bare ``sk-``, ``Bearer of news``) alone: a key's prefix at a word's
#: start and a length no word has, a header's value only when it looks like a credential.
COMMON_SECRET_PATTERNS: tuple[str, ...] = (
    # OpenAI: sk-…, sk-proj-…, sk-svcacct-…, sk-admin-… (Anthropic's sk-ant-… too)
    r"\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,}",
    r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",  # Google (Gemini, Maps, Firebase)
    r"\bgsk_[A-Za-z0-9]{20,}",  # Groq
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bxai-[A-Za-z0-9]{20,}",  # xAI
    r"\bpplx-[A-Za-z0-9]{20,}",  # Perplexity
    r"\br8_[A-Za-z0-9]{20,}",  # Replicate
    r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    # a bearer token: the scheme kept, the token (one with a digit in it) redacted
    r"(?i)\bbearer\s+(?P<secret>(?=" + _TOKEN + r"*\d)" + _TOKEN + r"{8,})",
    # an Authorization header's value, whatever its scheme (Basic, Token, none)
    r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:[a-z]+\s+)?"
    r"(?P<secret>(?=[^\s\"',;]{16}|[^\s\"',;]*\d)[^\s\"',;]{8,})",
    r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",  # AWS access key ids
    # AWS secret access keys and session tokens as configuration writes them
    r"(?i)\baws_(?:secret_access_key|session_token)[\"']?\s*[:=]\s*[\"']?"
    r"(?P<secret>[A-Za-z0-9/+=]{20,})",
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",  # GitHub fine-grained tokens
    r"\bxox[baprs]-[A-Za-z0-9-]{10,}",  # Slack
    # a private key: its body never crosses another BEGIN line, so a text of BEGIN lines with no
    # END is scanned once, not once from each of them (which took minutes for 200 KB)
    r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----(?:[^-]|-(?!----BEGIN ))*?"
    r"-----END (?:[A-Z]+ )*PRIVATE KEY-----",
)


class Redactor:
    """Replaces text matching any of ``patterns`` (regular expressions) with ``[REDACTED]`` in every
    string of a JSON value, object keys included; with no patterns, returns the value itself. A
    pattern that does not compile is a `ReplayError` naming it.

    Three rules make a value redacted the same however it arrives (parsed, or as JSON text inside a
    string, as a span attribute holds a tool's arguments):

    * a string that is JSON text (an object, an array, a string of JSON text) and holds a match is
      parsed, redacted as a value and written back as JSON text, so its keys are redacted as keys
      are;
    * an object's string value is matched with its key in front (``Authorization: Token …``), as
      the same pair is matched in JSON or header text;
    * two keys that redact to the same text both stay: the later one takes a numbered suffix,
      ``[REDACTED] (2)``, ``[REDACTED] (3)``, the first number no other key of the object has.
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        try:
            self._compiled = [re.compile(p) for p in self.patterns]
        except re.error as exc:
            raise SettingError(
                f"{setting('redact', exc.pattern, quoted=True)} is not a regular expression: {exc}"
            ) from None

    def __bool__(self) -> bool:
        return bool(self._compiled)

    def __call__(self, value: Any) -> Any:
        if not self._compiled:
            return value
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, dict):
            return self._object(value)
        if isinstance(value, list):
            return [self(item) for item in value]
        return value

    def text(self, text: str) -> str:
        """``text`` redacted; what is ``[REDACTED]`` already is never matched again (redacting
        twice is redacting once, and no pattern can eat into the marker)."""
        for pattern in self._compiled:
            if pattern.search(text) is None:  # the common case: nothing to do
                continue
            text = REDACTED.join(pattern.sub(_replaced, piece) for piece in text.split(REDACTED))
        return text

    def string(self, text: str) -> str:
        """``text`` redacted; JSON text (an object, an array, a string) redacted as the value it
        holds."""
        redacted = self.text(text)
        if redacted == text or text.lstrip()[:1] not in ("{", "[", '"'):
            return redacted
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return redacted
        if not isinstance(value, dict | list | str):
            return redacted
        structured = self(value)
        written = json.dumps(structured, ensure_ascii=False)
        try:
            written.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate the text escaped: escaped it stays
            written = json.dumps(structured)
        written = self.text(written)
        # a pattern written against the text as it was (its spacing, its escapes) may match what
        # the value written again no longer shows: then the text redacted as text is kept
        return redacted if any(found in written for found in self._found(text)) else written

    def _found(self, text: str) -> list[str]:
        """What the patterns match in ``text`` (each ``secret`` group, or the whole match)."""
        found = []
        for pattern in self._compiled:
            group = "secret" if "secret" in pattern.groupindex else 0
            found += [m.group(group) for m in pattern.finditer(text) if m.group(group)]
        return found

    def _object(self, value: dict[Any, Any]) -> dict[Any, Any]:
        keys = [self.text(key) if isinstance(key, str) else key for key in value]
        taken = {key for key, new in zip(value, keys, strict=True) if key == new}
        redacted: dict[Any, Any] = {}
        for (key, item), new in zip(value.items(), keys, strict=True):
            if new != key:
                new = _unclaimed(new, taken)
                taken.add(new)
            redacted[new] = self._paired(key, item) if isinstance(key, str) else self(item)
        return redacted

    def _paired(self, key: str, item: Any) -> Any:
        """``item`` redacted, a string matched with its key in front (``key: item``) too."""
        item = self(item)
        if not isinstance(item, str):
            return item
        prefix = f"{key}: "
        paired = self.text(prefix + item)
        return paired[len(prefix) :] if paired.startswith(prefix) else item


def _unclaimed(name: Any, taken: set[Any]) -> Any:
    """``name``, or with the first numbered suffix no key in ``taken`` has."""
    if name not in taken:
        return name
    number = 2
    while f"{name} ({number})" in taken:
        number += 1
    return f"{name} ({number})"


def _replaced(match: re.Match[str]) -> str:
    """The match as stored: ``[REDACTED]``, or with a ``secret`` group only that group."""
    if "secret" not in match.re.groupindex:
        return REDACTED
    start, end = match.span("secret")
    if start < 0:
        return match.group(0)
    whole = match.group(0)
    offset = match.start()
    return whole[: start - offset] + REDACTED + whole[end - offset :]


def patterns_of(run: Trajectory | Mapping[str, Any]) -> list[str]:
    """The patterns ``run`` was redacted with (its metadata's ``redact``; a run, or its metadata)."""
    metadata = run.metadata if isinstance(run, Trajectory) else run
    patterns = metadata.get("redact") or []
    return [p for p in patterns if isinstance(p, str)] if isinstance(patterns, list) else []


def with_patterns(*lists: Sequence[str]) -> list[str]:
    """Every pattern of ``lists``, once each, in the order first given."""
    return list(dict.fromkeys(p for patterns in lists for p in patterns))


def redact_run(run: Trajectory, patterns: Sequence[str]) -> Trajectory:
    """``run`` with ``patterns`` applied to every string it holds (step names, inputs, outputs and
    errors, metadata, span names), rebuilt so its hashes cover what is stored, its metadata's
    ``redact`` the patterns it had and ``patterns``. With no patterns, ``run`` itself."""
    scrub = Redactor(patterns)
    if not scrub:
        return run
    steps = [
        dataclasses.replace(
            step,
            name=scrub.text(step.name),
            inputs=scrub(step.inputs),
            output=scrub(step.output),
            error=None if step.error is None else scrub.text(step.error),
        )
        for step in run.steps
    ]
    metadata = {
        key: (value if key == "redact" else scrub(value)) for key, value in run.metadata.items()
    }
    metadata["redact"] = with_patterns(patterns_of(run), scrub.patterns)
    spans = [dataclasses.replace(node, name=scrub.text(node.name)) for node in run.spans]
    return Trajectory.build(run.id, steps, outcome=run.outcome, metadata=metadata, spans=spans)


def redact_error(exc: E, patterns: Sequence[str]) -> E:
    """``exc`` with ``patterns`` applied to its message (what user code's exception text or a trace
    puts in it), in place: raise it again and its type and attributes are what they were."""
    scrub = Redactor(patterns)
    if scrub:
        exc.args = tuple(scrub.text(a) if isinstance(a, str) else a for a in exc.args)
    return exc
