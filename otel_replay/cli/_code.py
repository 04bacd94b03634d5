"""The options that name a command's user code, one definition for every command that takes them
(``attribute``, ``fork``, ``record``): resample functions (``--resamplers``, the built-ins
``--tools`` and ``--llm``), and how a run is scored (``--verifier``, ``--success-if``,
``--fail-if``, ``--judge``). `user_code` turns what was given into the library's `UserCode` and
says its mistakes at once (two ways of scoring, a model with no server), before a store is opened.
"""

from __future__ import annotations

from typing import Annotated

import typer

from otel_replay.resamplers import ChatModelOptions, JudgeOptions, ModelSource, ToolSource, UserCode

ResamplersOption = Annotated[
    list[str] | None,
    typer.Option(
        "--resamplers",
        metavar="FILE",
        help="Resample functions: a .py file or module (repeatable).",
    ),
]
VerifierOption = Annotated[
    str | None,
    typer.Option(
        "--verifier",
        "--outcome",
        metavar="FUNCTION",
        help="module:function scoring a run (1.0 success, 0.0 failure).",
    ),
]
SuccessIfOption = Annotated[
    str | None,
    typer.Option(metavar="REGEX", help="Success when the final answer matches REGEX."),
]
FailIfOption = Annotated[
    str | None,
    typer.Option(metavar="REGEX", help="Failure when the final answer matches REGEX."),
]
JudgeOption = Annotated[
    str | None,
    typer.Option(
        "--judge",
        metavar="QUESTION",
        help="Success when a model answers yes to QUESTION.",
    ),
]
JudgeModelOption = Annotated[
    str | None,
    typer.Option(metavar="MODEL", help="--judge's model (default: --llm-model)."),
]
JudgeBaseUrlOption = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        help="--judge's server (default: --llm-base-url).",
    ),
]
ToolsOption = Annotated[
    ToolSource | None,
    typer.Option(
        metavar="SOURCE",  # the help names both: as a metavar they break mid-word
        help="Resample tools: recorded, recorded,faults, simulate, recorded,simulate.",
    ),
]
LlmOption = Annotated[
    ModelSource | None,
    typer.Option(
        metavar="API",
        help="Resample model steps: openai (or compatible) or anthropic.",
    ),
]
LlmBaseUrlOption = Annotated[
    str | None,
    typer.Option(
        metavar="URL",
        help="The model server (default $OPENAI_BASE_URL, $ANTHROPIC_BASE_URL).",
    ),
]
LlmModelOption = Annotated[
    str | None, typer.Option(metavar="MODEL", help="Model (default: the recorded one).")
]
LlmTemperatureOption = Annotated[float, typer.Option(metavar="X", help="Sampling temperature.")]


def user_code(
    *,
    resamplers: list[str] | None = None,
    verifier: str | None = None,
    success_if: str | None = None,
    fail_if: str | None = None,
    judge: str | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    tools: ToolSource | None = None,
    llm: ModelSource | None = None,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    llm_temperature: float = 1.0,
    agent: str | None = None,
    instrument: str | None = None,
    entry_points: bool = True,
    suspect_judge: bool = False,
) -> UserCode:
    """The code the options name, checked (`UserCode.check`): its mistakes are said before a
    store is opened or anything runs. The judge asks ``--judge-base-url`` (else the
    ``--llm-base-url`` server) for ``--judge-model`` (else ``--llm-model``); so does
    ``--suspect judge`` (``suspect_judge``), which without ``--llm`` keeps the ``--llm-*``
    server and model for itself."""
    model = (
        ChatModelOptions(
            base_url=llm_base_url, model=llm_model, temperature=llm_temperature, source=llm
        )
        if llm
        else None
    )
    judged = (
        None
        if judge is None
        else JudgeOptions(
            judge, base_url=judge_base_url or llm_base_url, model=judge_model or llm_model
        )
    )
    code = UserCode(
        resamplers=tuple(resamplers or ()), verifier=verifier, agent=agent,
        entry_points=entry_points, success_if=success_if, fail_if=fail_if, tools=tools,
        llm=model, instrument=sdks(instrument), judge=judged,
        suspect_model=ChatModelOptions(base_url=llm_base_url, model=llm_model)
        if suspect_judge and not llm and (llm_base_url or llm_model) else None,
    )  # fmt: skip
    code.check()
    return code


def sdks(instrument: str | None) -> tuple[str, ...]:
    """``--instrument openai,anthropic`` as the SDKs' names."""
    return tuple(name.strip() for name in (instrument or "").split(",") if name.strip())
