"""The public surface is deliberate: a change to it must change this test."""

from __future__ import annotations

from pathlib import Path

import pytest

import otel_replay
import otel_replay.importers


def test_top_level_exports() -> None:
    """The user API: what users of agent-replay import, all of it at the top level."""
    assert otel_replay.__all__ == [
        "COMMON_SECRET_PATTERNS",
        "FAIL_THRESHOLD",
        "REPORT_SCHEMA",
        "REPORT_VERSION",
        "AgentContext",
        "AgentError",
        "AgentRaised",
        "AttributionConfig",
        "AttributionError",
        "AttributionResult",
        "CanonicalJSONError",
        "ChatModelOptions",
        "Driver",
        "EditedContentError",
        "Format",
        "FragilityRow",
        "Intervention",
        "InterventionError",
        "Judge",
        "JudgeOptions",
        "JudgeVerdict",
        "KeptFork",
        "Method",
        "Mode",
        "Move",
        "MoveKind",
        "NonDeterminismError",
        "NotFoundError",
        "OnResamplerError",
        "OnSuccess",
        "OpenAIChatModel",
        "Plan",
        "PluginLoadError",
        "Processes",
        "RayExecutor",
        "ReadOptions",
        "RecorderError",
        "Recording",
        "RegistrationError",
        "Registry",
        "Replay",
        "ReplayError",
        "Replayability",
        "ReplayabilityGap",
        "ReplayabilityReason",
        "ReplayabilityVerdict",
        "Resumed",
        "RolloutContext",
        "RolloutError",
        "Scored",
        "Selection",
        "SpanNode",
        "Step",
        "StepError",
        "StepFailed",
        "StepKind",
        "StepStatus",
        "Store",
        "StoreError",
        "Strategy",
        "SweepResult",
        "Threads",
        "ToolSource",
        "TraceFormatError",
        "Trajectory",
        "TrajectoryDiff",
        "UnreplayableError",
        "UnservableError",
        "UserCode",
        "Verdict",
        "VerifierError",
        "answer_verifier",
        "assistant_message",
        "attribute",
        "attribute_runs",
        "attribute_stored",
        "blame",
        "build_report",
        "conversation",
        "current_context",
        "diff",
        "dumps_report",
        "fault",
        "fork",
        "fork_move",
        "fragility",
        "html_report",
        "instrument",
        "keep_fork",
        "load_object",
        "load_registry",
        "pairs",
        "read_jsonl",
        "read_path",
        "rebuild_messages",
        "record",
        "repair_candidates",
        "replayability",
        "resampler",
        "resume",
        "run_agent",
        "score",
        "score_runs",
        "step",
        "steps_frame",
        "sweep",
        "sweep_stored",
        "tool",
        "uninstrument",
        "verifier",
    ]
    for name in otel_replay.__all__:
        assert getattr(otel_replay, name) is not None


def test_no_export_is_hidden_by_a_module_of_its_name() -> None:
    """``import otel_replay.replay`` sets ``otel_replay.replay`` to the module: an export of that
    name would be the function before and the module after."""
    root = Path(otel_replay.__file__).parent
    modules = {p.stem for p in root.glob("*.py")} | {
        p.parent.name for p in root.glob("*/__init__.py")
    }
    assert sorted(set(otel_replay.__all__) & modules) == []


SUBPACKAGES = sorted(p.parent.name for p in Path(otel_replay.__file__).parent.glob("*/__init__.py"))


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_a_subpackage_exports_only_user_api(name: str) -> None:
    """Everything else of a subpackage is private to the package (imported from its modules);
    ``otel_replay.replay.replay`` is the one name the top level cannot export as itself."""
    import importlib

    package = importlib.import_module(f"otel_replay.{name}")
    exported = set(getattr(package, "__all__", ()))
    assert exported - set(otel_replay.__all__) - {"app", "main", "replay"} == set()
    for exported_name in exported & set(otel_replay.__all__):
        assert getattr(package, exported_name) is getattr(otel_replay, exported_name)


def test_errors_subclass_the_matching_builtin() -> None:
    assert issubclass(otel_replay.TraceFormatError, ValueError)
    assert issubclass(otel_replay.NotFoundError, LookupError)
    assert issubclass(otel_replay.TraceFormatError, otel_replay.ReplayError)


LAZY_PACKAGES = [
    "otel_replay",
    "otel_replay.importers",
    "otel_replay.attribution",
    "otel_replay.replay",
    "otel_replay.report",
    "otel_replay.resamplers",
]


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_exports_are_the_type_checked_imports(package: str) -> None:
    """A lazy package's ``__all__`` and its ``if TYPE_CHECKING:`` imports name the same things, and
    each export resolves to the object its module defines."""
    import importlib

    from otel_replay._lazy import _type_checking_imports

    module = importlib.import_module(package)
    where = _type_checking_imports(Path(str(module.__file__)).read_text())
    # what the package lends its other floors loads so too (tests/test_inside_api.py)
    assert sorted(where) == sorted([*module.__all__, *getattr(module, "__inside__", [])])
    for name, source in where.items():
        defined = importlib.import_module(source, package)
        assert getattr(module, name) is getattr(defined, name), name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        module.nonexistent  # noqa: B018


def test_the_cli_loads_no_engine_until_a_command_runs() -> None:
    """``--help`` and ``list`` used to load the attribution engine, the replay machinery and every
    reader before doing anything (issue 11, item 27; ``benchmarks/startup_bench.py`` times it)."""
    import subprocess
    import sys

    probe = (
        "import sys, otel_replay.cli; "
        "print(' '.join(m for m in sys.modules if m.startswith('otel_replay')))"
    )
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                check=True).stdout.split())  # fmt: skip
    heavy = {
        "otel_replay.attribution._engine",
        "otel_replay.attribution._api",
        "otel_replay.replay._live",
        "otel_replay.replay._rollout",
        "otel_replay.report._json",
        "otel_replay.otlp_encode",
        "otel_replay.importers._merge",
        "otel_replay.importers.otlp_proto",
        "otel_replay.ingest",
    }
    assert loaded & heavy == set()
