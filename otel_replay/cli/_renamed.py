"""Old spellings of options and values, still read for a release: each is said in one line on
stderr and read as its new spelling.

``attribute --html FILE`` and ``sweep --html FILE`` are ``--out FILE.html`` now (``--out`` takes a
file whose format is its suffix); ``--json-out`` is ``--out``; ``sweep --rollouts`` was a per-cell
maximum and is ``--max-rollouts`` (``--rollouts`` is a fixed number of rollouts per plan
everywhere); ``fork --output`` (a step's value) is ``--value``; the attribution strategy ``sweep``
is ``fixed``, so "sweep" names only the fragility command.
"""

from __future__ import annotations

import sys
from collections.abc import Container
from dataclasses import dataclass

__all__ = ["RENAMED", "RENAMED_VALUES", "Renamed", "modernize"]


@dataclass(frozen=True)
class Renamed:
    """An option's old spelling: ``new`` is what it is read as (None: the old spelling is kept
    as a hidden option of its own, for a meaning the new one spells otherwise)."""

    new: str | None
    advice: str


_HTML = Renamed(None, "--out FILE.html")
_JSON_OUT = Renamed("--out", "--out")

#: The old options of each command (by its name), with what each is now.
RENAMED: dict[str, dict[str, Renamed]] = {
    "attribute": {"--html": _HTML, "--json-out": _JSON_OUT},
    "sweep": {
        "--html": _HTML,
        "--json-out": _JSON_OUT,
        "--rollouts": Renamed("--max-rollouts", "--max-rollouts, the most rollouts per cell"),
    },
    "fork": {"--output": Renamed("--value", "--value")},
}

#: Old values of an option, by command and option: what each is now.
RENAMED_VALUES: dict[tuple[str, str], dict[str, str]] = {
    ("attribute", "--strategy"): {"sweep": "fixed"},
}


def modernize(command: str, args: list[str], takes_value: Container[str]) -> list[str]:
    """``args`` of ``command`` with each old spelling replaced by its new one, each said on
    stderr. ``takes_value``: the command's options that take a value (the word after one is its
    value, never an option), its old spellings among them."""
    options = RENAMED.get(command, {})
    values = {opt: old for (name, opt), old in RENAMED_VALUES.items() if name == command}
    if not options and not values:
        return args
    done: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            done += [word, *words]
            break
        name, equals, value = word.partition("=")
        if name in options:
            renamed = options[name]
            _say(f"{name} is now {renamed.advice}")
            name = renamed.new or name
        if not name.startswith("--") or name not in takes_value:
            done.append(name + equals + value if name.startswith("--") else word)
            continue
        if not equals:
            following = next(words, None)
            if following is None:
                done.append(name)
                break
            value = following
        old = values.get(name, {})
        if value in old:
            _say(f"{name} {value} is now {name} {old[value]}")
            value = old[value]
        done += [f"{name}={value}"] if equals else [name, value]
    return done


def _say(note: str) -> None:
    """One line on stderr, before the command runs."""
    sys.stderr.write(f"note: {note} (the old spelling goes in a later release)\n")
