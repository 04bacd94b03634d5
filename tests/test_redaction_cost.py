"""``--redact-common`` over hostile trace content costs time linear in the text (issue 40, item 3).

The patterns run over whatever a trace holds, so a trace can be written against them: 200 KB of
``-----BEGIN PRIVATE KEY-----`` lines with no end line made the private-key pattern scan to the end
of the text from every one of them, minutes for one string under ``import --redact-common`` or
``serve --redact-common``. Each common pattern is run here over long runs of its own near-misses.
"""

from __future__ import annotations

import time

import pytest

from otel_replay.redaction import COMMON_SECRET_PATTERNS, REDACTED, Redactor

SIZE = 200_000
#: Linear patterns take milliseconds here; the backtracking private-key pattern took 20 s. The
#: budget is of this thread's processor time, which other work on the machine does not stretch.
BUDGET = 3.0

NEAR_MISSES = {
    "private-key-begins": "-----BEGIN PRIVATE KEY-----\n",
    "rsa-begins": "-----BEGIN RSA PRIVATE KEY-----\nMIIE",
    "ends": "-----END PRIVATE KEY-----\n",
    "key-words": "-----BEGIN A B C D E F G H ",
    "bearer": "bearer abcdefghijk ",
    "bearer-long-token": "Bearer " + "a" * 5000 + " ",
    "authorization": "authorization: abcdefg ",
    "authorization-spaces": "Authorization" + " " * 500,
    "openai": "sk-" + "a" * 19 + " ",
    "google": "AIza" + "a" * 34 + " ",
    "aws-id": "AKIA" + "A" * 15 + " ",
    "aws-secret": "aws_secret_access_key=" + "a" * 19 + " ",
    "github": "ghp_" + "a" * 29 + " ",
    "slack": "xoxb-" + "-" * 9 + " ",
}


@pytest.mark.parametrize("piece", list(NEAR_MISSES.values()), ids=list(NEAR_MISSES))
def test_the_common_patterns_search_their_near_misses_in_linear_time(piece: str) -> None:
    text = piece * (SIZE // len(piece) + 1)
    redact = Redactor(COMMON_SECRET_PATTERNS)
    started = time.thread_time()
    redact.text(text)
    assert time.thread_time() - started < BUDGET


def test_a_private_key_among_unended_begin_lines_is_still_redacted() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
    text = "-----BEGIN PRIVATE KEY-----\n" * 3 + key + "\nafter"
    redacted = Redactor(COMMON_SECRET_PATTERNS).text(text)
    assert "MIIEow" not in redacted and redacted.endswith(f"{REDACTED}\nafter")
