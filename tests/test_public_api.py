"""The public surface is deliberate: a change to it must change this test."""

from __future__ import annotations

from pathlib import Path

import pytest

import otel_replay
import otel_replay.importers


def test_top_level_exports() -> None:
    assert otel_replay.__all__ == [
        "AttributionError",
        "CanonicalJSONError",
        "Format",
        "NotFoundError",
        "PluginLoadError",
        "ReadOptions",
        "RegistrationError",
        "Registry",
        "ReplayError",
        "RolloutContext",
        "RolloutError",
        "SpanNode",
        "Step",
        "StepFailed",
        "StepKind",
        "StepStatus",
        "Store",
        "StoreError",
        "TraceFormatError",
        "Trajectory",
        "VerifierError",
        "assistant_message",
        "conversation",
        "instrument",
        "read_path",
        "repair_candidates",
        "resampler",
        "step",
        "steps_frame",
        "tool",
        "verifier",
    ]
    for name in otel_replay.__all__:
        assert getattr(otel_replay, name) is not None


def test_importers_exports() -> None:
    assert sorted(otel_replay.importers.__all__) == otel_replay.importers.__all__
    assert {"read_path", "read_otlp_json", "read_otlp_proto", "read_jsonl"} <= set(
        otel_replay.importers.__all__
    )


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
    assert sorted(where) == sorted(module.__all__)
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
