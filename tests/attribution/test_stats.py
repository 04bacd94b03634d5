"""Statistics helpers checked against their textbook definitions."""

from __future__ import annotations

import random

from otel_replay.attribution._stats import levenshtein


def test_levenshtein_agrees_with_the_textbook_recurrence() -> None:
    def textbook(x: str, y: str) -> int:
        previous = list(range(len(y) + 1))
        for i, cx in enumerate(x, start=1):
            current = [i]
            for j, cy in enumerate(y, start=1):
                current.append(
                    min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (cx != cy))
                )
            previous = current
        return previous[-1]

    rng = random.Random(7)
    for _ in range(500):
        x = "".join(rng.choice("abc") for _ in range(rng.randint(0, 70)))
        y = "".join(rng.choice("abcd") for _ in range(rng.randint(0, 70)))
        assert levenshtein(x, y) == textbook(x, y), (x, y)
