"""The inside API is deliberate: what each subpackage lends the package's other floors is listed
here, as tests/test_public_api.py lists what users import, and a change to it must change this test.

A subpackage's ``__init__`` is its face. ``__all__`` is its part of the user API; ``__inside__``
names what the other floors of the package may import from it besides (a lazy package loads them
on first use, as it loads its exports: `otel_replay._lazy`). Another floor imports from the
subpackage itself (``from otel_replay.store import outcome_source``), never from one of its private
modules, so a subpackage rearranges its rooms without touching another floor. Modules without a
leading underscore (``otel_replay.platforms.phoenix``) are public and may be imported as they are.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

from otel_replay._lazy import _type_checking_imports
from tests.conftest import ROOT

PACKAGE = ROOT / "otel_replay"
SUBPACKAGES = sorted(path.parent.name for path in PACKAGE.glob("*/__init__.py"))

#: What each subpackage lends the other floors: its ``__inside__``, in order.
INSIDE: dict[str, list[str]] = {
    "attribution": [
        "BOOTSTRAP",
        "ERROR_BOUND",
        "EXACT_DIFFERENCE",
        "MAX_PERMUTATIONS",
        "STATED_PROPORTION",
        "WILSON",
        "WORLD",
        "BudgetUnit",
        "CellVerdict",
        "PlannedCost",
        "Progress",
        "Proportion",
        "RootCause",
        "RunJob",
        "Share",
        "Spend",
        "Spending",
        "Spent",
        "StepAttribution",
        "SuffixTest",
        "Suspect",
        "SweepCell",
        "SweepCost",
        "Told",
        "Variation",
        "attribute_job",
        "budget_settings",
        "budget_text",
        "budget_words",
        "config_digest",
        "job_of",
        "percent",
        "planned_cost_stored",
        "rerun_command",
        "suspect_setting",
        "sweep_cost_stored",
        "wilson",
    ],
    "cli": [],
    "executors": [
        "ExecutorKind",
        "executor",
    ],
    "fleet": [
        "Attributed",
        "ScoreStatus",
        "Unpaired",
        "keep",
        "parse_since",
        "pending",
        "triage",
        "unpaired",
    ],
    "importers": [
        "DEFAULT_MAX_RECORD_BYTES",
        "JAEGER_FORMAT",
        "MLFLOW_FORMAT",
        "PHOENIX_FORMAT",
        "REBUILT_ATTRIBUTE",
        "RECORD_ATTRIBUTE",
        "LintedRun",
        "SpanEvent",
        "SpanRecord",
        "TraceBuffer",
        "assemble_trace",
        "built_from_spans",
        "decode_jaeger",
        "decode_mlflow_trace",
        "decode_phoenix_page",
        "lint_file",
        "lint_stored",
        "merge_partial",
        "span_bytes",
        "span_from_bytes",
        "spans_of_request",
    ],
    "platforms": [],
    "receiver": [
        "Receiver",
    ],
    "replay": [
        "AS_RECORDED",
        "FAULTS",
        "MADE_HERE",
        "DurableLedger",
        "Rollout",
        "TraceDriver",
        "Verifying",
        "agent_driver",
        "built_in_agent",
        "chat_driver",
        "chat_loop",
        "fork_injection",
        "injection",
        "instrumented_with",
        "recorded_answer",
        "recorded_verifier",
        "send_run",
    ],
    "report": [
        "SWEEP_SCHEMA",
        "build_sweep_report",
        "diff_record",
        "dumps_sweep_report",
        "esc",
        "fork_record",
        "page",
        "question",
        "read_report",
        "recorded_record",
        "replay_record",
        "report_body",
        "rerun_sweep",
        "resumed_record",
        "run_section",
        "sweep_html",
    ],
    "resamplers": [
        "FAILURES",
        "NO_DRAWS",
        "USER_MODULE_PREFIX",
        "AnswerVerifier",
        "BuiltIns",
        "Call",
        "DrawLog",
        "Draws",
        "History",
        "JudgeSummary",
        "ModelSource",
        "RecordedOutcomes",
        "Registration",
        "RolloutSeed",
        "SimulatedTools",
        "VerifierFunction",
        "add_built_ins",
        "ask_model",
        "call_of",
        "current_log",
        "current_registry",
        "describe",
        "drawing",
        "judged",
        "noted_call",
        "noted_unanswered",
        "recorded_model",
        "rollout_code",
        "server",
        "standing_in",
        "step_seed",
        "tool_draws",
        "unrecorded",
        "ways_to_resample",
    ],
    "store": [
        "MAX_ROWS",
        "SORTS",
        "QueryError",
        "QueryTimeout",
        "RecordedResult",
        "TrajectorySummary",
        "check_page",
        "damaged",
        "default_store_path",
        "outcome_source",
        "parse_filter",
        "parse_sort",
        "summarize",
    ],
    "viewer": [
        "Viewer",
    ],
}


def _package(name: str) -> ModuleType:
    return importlib.import_module(f"otel_replay.{name}")


def test_every_subpackage_is_listed() -> None:
    assert sorted(INSIDE) == SUBPACKAGES


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_declares_what_it_lends(name: str) -> None:
    """A new name lent, or one taken back, changes this test as well as the ``__init__``."""
    assert list(_package(name).__inside__) == INSIDE[name]


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_lent_names_are_the_objects_their_modules_define(name: str) -> None:
    """Each lent name resolves from the package (lazily where the package is lazy) to what its
    module defines; none is also user API, none is private by its own name."""
    package = _package(name)
    lent = list(package.__inside__)
    assert sorted(set(lent) & set(getattr(package, "__all__", ()))) == []
    assert [n for n in lent if n.startswith("_")] == []
    where = _type_checking_imports(Path(str(package.__file__)).read_text(encoding="utf-8"))
    for lent_name in lent:
        value = getattr(package, lent_name)
        if lent_name in where:  # lazy: the module the TYPE_CHECKING block names defines it
            source = importlib.import_module(where[lent_name])
            assert value is getattr(source, lent_name), lent_name
        assert lent_name in dir(package)


def _floor(module: str) -> str | None:
    """The subpackage a dotted module of the package is in (None: a top-level module)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in SUBPACKAGES else None


def reaches(
    importer: str, source: str, declared: dict[str, set[str]]
) -> list[tuple[int, str, str]]:
    """The imports in ``source`` (the module ``importer``, dotted) that reach into another
    subpackage past what it declares: ``(line, module, name)`` each. ``declared`` is each
    subpackage's ``__all__`` and ``__inside__`` together."""
    own = _floor(importer)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in targets:
            parts = module.split(".")
            if parts[0] != "otel_replay" or len(parts) < 2 or parts[1] not in declared:
                continue
            if parts[1] == own:
                continue  # inside a subpackage its rooms import one another freely
            if any(part.startswith("_") for part in parts[2:]):  # a private module
                found.append((node.lineno, module, name))
            elif len(parts) == 2 and name not in declared[parts[1]]:
                public_module = (PACKAGE / parts[1] / f"{name}.py").exists()
                if name.startswith("_") or not public_module:
                    found.append((node.lineno, module, name))
    return found


def _declared() -> dict[str, set[str]]:
    faces = {}
    for name in SUBPACKAGES:
        package = _package(name)
        faces[name] = set(getattr(package, "__all__", ())) | set(package.__inside__)
    return faces


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _all_reaches(root: Path, declared: dict[str, set[str]]) -> list[str]:
    return [
        f"{path.relative_to(root.parent)}:{line} imports {name or '(module)'} from {module}"
        for path in sorted(root.rglob("*.py"))
        for line, module, name in reaches(
            ".".join(path.relative_to(root.parent).with_suffix("").parts),
            path.read_text(encoding="utf-8"),
            declared,
        )
    ]


def test_no_floor_reaches_into_another_subpackages_private_modules() -> None:
    """Another floor imports a subpackage's user API or what its ``__inside__`` lends, from the
    subpackage itself. A name found here is lent first (its ``__init__`` and INSIDE above), or,
    better, kept at home."""
    found = _all_reaches(PACKAGE, _declared())
    assert found == [], (
        "import these from the subpackage itself, lending what is not user API in its "
        "__init__ (__inside__ and the TYPE_CHECKING block) and in INSIDE here"
    )


def test_every_lent_name_is_borrowed() -> None:
    """A name no other floor imports is taken back: the inside API stays what is used."""
    borrowed: set[tuple[str, str]] = set()
    for path in PACKAGE.rglob("*.py"):
        own = _floor(_dotted(path))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parts = node.module.split(".")
                if len(parts) >= 2 and parts[0] == "otel_replay" and parts[1] != own:
                    borrowed |= {(parts[1], alias.name) for alias in node.names}
    unused = sorted(f"{name}.{lent}" for name in SUBPACKAGES for lent in INSIDE[name]
                    if (name, lent) not in borrowed)  # fmt: skip
    assert unused == []


def test_a_new_reach_is_found() -> None:
    """The check above fails on an undeclared import into another floor, in each form it can take,
    and passes what is declared or stays inside a subpackage."""
    declared = {"resamplers": {"JudgeOptions", "describe"}, "store": {"Store"}, "cli": set()}
    source = "\n".join(
        [
            "from otel_replay.resamplers._judge import JudgeSummary",  # a private module
            "from otel_replay.resamplers import _judge",  # the private module itself
            "import otel_replay.store._query",  # a plain import of one
            "from otel_replay.store import parse_filter",  # a name not lent
            "from otel_replay.resamplers._registry import describe",  # lent, but not so
            "from otel_replay.resamplers import JudgeOptions, describe",  # declared: fine
            "from otel_replay.cli._common import print_error",  # its own floor: fine
            "from otel_replay.errors import ReplayError",  # a top-level module: fine
        ]
    )
    assert reaches("otel_replay.cli._code", source, declared) == [
        (1, "otel_replay.resamplers._judge", "JudgeSummary"),
        (2, "otel_replay.resamplers", "_judge"),
        (3, "otel_replay.store._query", ""),
        (4, "otel_replay.store", "parse_filter"),
        (5, "otel_replay.resamplers._registry", "describe"),
    ]
    # a top-level module of the package is another floor to every subpackage
    assert reaches("otel_replay.ingest", source, declared)[:1] == [
        (1, "otel_replay.resamplers._judge", "JudgeSummary")
    ]
