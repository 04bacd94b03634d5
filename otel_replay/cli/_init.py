"""``agent-replay init``: write an ``agent-replay.toml`` once, from what a run remembers or from
questions asked on the terminal.

A run remembers the code it was last attributed with (its newest kept report's command line)
and, for a run agent-replay recorded, forked or resumed, the agent, the verifier, the SDKs and
the redaction it was made with. How to re-run the agent goes at the top level, for every command
that takes it; the attribution's question (where it differs from the defaults) goes in the
``[attribute]`` table. The file is read back through the loader every command uses before it is
written, so ``init`` never writes a file a command would refuse.
"""

from __future__ import annotations

import json
import os
import shlex
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from otel_replay.cli._common import StoreOption, err_console, open_store, user_errors
from otel_replay.cli._config import (
    CODE_SPECS,
    CONFIG_NAME,
    default_map,
    is_path_spec,
    option_keys,
    parse_config,
    shown_path,
)
from otel_replay.errors import SettingError
from otel_replay.model import Trajectory

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

#: The parameters that say how to re-run the agent: the file's top level.
CODE_PARAMS = frozenset(
    {
        *CODE_SPECS,
        "success_if",
        "fail_if",
        "judge",
        "judge_model",
        "judge_base_url",
        "tools",
        "llm",
        "llm_base_url",
        "llm_model",
        "llm_temperature",
        "instrument",
        "entry_points",
        "redact",
    }
)
#: What a settings table is: the top level's keys, and a table (a dict) per command.
Settings = dict[str, Any]


def init_command(
    ctx: typer.Context,
    run: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]",
            help="A run whose remembered code to write (an id or a unique prefix); without "
            "one, the questions are asked here.",
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", help="The file to write.", show_default=True)
    ] = Path(CONFIG_NAME),
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
    store: StoreOption = None,
) -> None:
    """Write an agent-replay.toml: how to re-run the agent and the question's defaults, from
    what a run remembers (the code it was recorded or last attributed with) or from questions
    asked here. Every command reads it from then on; flags still win."""
    with user_errors():
        if out.exists() and not force:
            raise SettingError(f"{shown_path(out)} exists; --force replaces it")
        root = ctx.find_root()
        assert isinstance(root.command, TyperGroup)
        attribute = root.command.get_command(root, "attribute")
        assert attribute is not None
        settings = remembered(run, store, attribute) if run is not None else asked()
        text = toml_text(settings, out)
        default_map(parse_config(out, text), root.command, root)  # as a command will read it
        from otel_replay._files import write_output

        write_output(out, text.encode())
    said = sum(not isinstance(v, dict) for v in settings.values())
    said += sum(len(v) for v in settings.values() if isinstance(v, dict))
    err_console.print(f"wrote {shown_path(out)} ({said} setting{'s' * (said != 1)})")


def remembered(run: str, store: Path | None, attribute: click.Command) -> Settings:
    """What ``run`` remembers: its newest report's code and question, else how it was made."""
    with open_store(store) as db:
        trajectory = db.get(run)
        reports = db.reports(trajectory.id)
    settings: Settings = made_with(trajectory)
    if reports:
        rerun = reports[0]["report"].get("config", {}).get("rerun")
        if isinstance(rerun, str):
            attributed = from_command_line(rerun, attribute)
            scoring = {"verifier", "success-if", "fail-if", "judge", "outcome"}
            if scoring & attributed.keys():  # the report's way of scoring replaces the run's
                settings = {k: v for k, v in settings.items() if k not in scoring}
            settings.update(attributed)
    if not any(not isinstance(v, dict) or v for v in settings.values()):
        raise SettingError(
            f"{trajectory.id} remembers no code (it was not recorded or attributed here); "
            "run agent-replay init without an id to be asked"
        )
    return settings


def made_with(run: Trajectory) -> Settings:
    """How a run agent-replay made was made: its agent, verifier, SDKs and redaction."""
    from otel_replay.replay import MADE_HERE, instrumented_with, recorded_answer, recorded_verifier

    if run.metadata.get("source") not in MADE_HERE:
        return {}
    settings: Settings = {}
    agent = run.metadata.get("agent")
    if isinstance(agent, str) and agent:
        settings["agent"] = agent
    sdks = instrumented_with(run)
    if sdks:
        settings["instrument"] = ",".join(sdks)
    verifier, answer = recorded_verifier(run), recorded_answer(run)
    if verifier is not None:
        settings["verifier"] = verifier
    elif answer is not None:
        settings.update({k.replace("_", "-"): v for k, v in answer.items() if v is not None})
    redact = run.metadata.get("redact")
    if isinstance(redact, list) and redact and all(isinstance(p, str) for p in redact):
        settings["redact"] = list(redact)
    return settings


def from_command_line(line: str, command: click.Command) -> Settings:
    """The settings of an ``agent-replay attribute`` command line that differ from the
    command's defaults: the code at the top level, the rest in ``[attribute]``."""
    keys = option_keys(command)
    negated = {o[2:]: p for p in command.params for o in getattr(p, "secondary_opts", ())}
    words = shlex.split(line)[3:]  # agent-replay attribute ID
    values: dict[str, tuple[click.Parameter, Any]] = {}
    while words:
        word = words.pop(0)
        param = keys.get(word[2:]) if word.startswith("--") else None
        if word.startswith("--") and word[2:] in negated:  # --no-entry-points
            values[str(negated[word[2:]].name)] = (negated[word[2:]], False)
            continue
        if param is None or param.name is None:
            continue
        if getattr(param, "is_flag", False):
            value: Any = True
        elif not words:
            break
        else:
            value = _typed(words.pop(0), param)
        if param.multiple:
            value = [*values.get(param.name, (param, []))[1], value]
        values[param.name] = (param, value)
    if values.get("strategy", (None, None))[1] in ("adaptive", "scan"):
        values.pop("rollouts", None)  # rollouts per plan of a fixed sweep: not this question's
    if values.get("strategy", (None, None))[1] == "adaptive" and "rollouts" not in values:
        values.pop("strategy")  # the default when no --rollouts is given
    settings: Settings = {}
    for name, (param, value) in values.items():
        if value == _default(param):
            continue
        table = settings if name in CODE_PARAMS else settings.setdefault(command.name or "", {})
        table[param.opts[0][2:]] = value
    return settings


def _typed(word: str, param: click.Parameter) -> Any:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    try:
        if annotation is int:
            return int(word)
        if annotation is float:
            return float(word)
    except ValueError:
        return word
    return word


def _default(param: click.Parameter) -> Any:
    default = param.default
    return default.value if isinstance(default, Enum) else default


def asked() -> Settings:
    """The settings, asked one by one on the terminal (an empty answer: not set)."""
    settings: Settings = {}

    def ask(key: str, question: str) -> str:
        answer = str(typer.prompt(question, default="", show_default=False)).strip()
        if answer:
            settings[key] = answer
        return answer

    resamplers = ask("resamplers", "Resample functions: .py files or modules, comma-separated")
    if resamplers:
        settings["resamplers"] = [s.strip() for s in resamplers.split(",") if s.strip()]
    ask("agent", "The live agent, module:function or file.py:function (none: leave empty)")
    if not ask("verifier", "The verifier scoring a run, module:function (none: leave empty)"):
        ask("success-if", "A run succeeds when its final answer matches this regex")
    if ask("llm", "A model server for the model steps: openai or anthropic (none: leave empty)"):
        ask("llm-base-url", "Its URL (empty: from the environment)")
        ask("llm-model", "Its model (empty: each step's recorded model)")
    ask("tools", "Tool results from: recorded, recorded,faults, simulate (empty: your code)")
    return settings


def toml_text(settings: Settings, out: Path) -> str:
    """The settings as TOML, each path relative to ``out``'s folder (they were given relative
    to the working directory)."""
    lines = [
        "# agent-replay's settings (docs/configuration.md): the commands' long options, without",
        "# their dashes; a [command] table holds what only that command takes. Flags win.",
    ]
    tables = {k: v for k, v in settings.items() if isinstance(v, dict)}
    for key, value in settings.items():
        if not isinstance(value, dict):
            lines.append(f"{_key(key)} = {_value(key, value, out)}")
    for name, table in tables.items():
        lines += ["", f"[{_key(name)}]"]
        lines += [f"{_key(k)} = {_value(k, v, out)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum()
    return key if bare else json.dumps(key)


def _value(key: str, value: Any, out: Path) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_value(key, v, out) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if key in CODE_SPECS:
        text = _moved(text, out.parent)
    # a TOML basic string: JSON's escapes, and DEL escaped as TOML requires
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _moved(spec: str, folder: Path) -> str:
    """A code spec given from the working directory, as the file in ``folder`` names it."""
    module, colon, name = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not is_path_spec(module) or Path(module).is_absolute():
        return spec
    moved = os.path.relpath(Path.cwd() / module, folder.absolute())
    return f"{moved}{colon}{name}"
