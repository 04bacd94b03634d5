"""The public surface is deliberate: a change to it must change this test."""

from __future__ import annotations

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
        "read_path",
        "repair_candidates",
        "resampler",
        "steps_frame",
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
