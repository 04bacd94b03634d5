"""Observability platforms both ways: Arize Phoenix's REST API read as an importer
(`read_phoenix`), and an attribution's verdict written back as span annotations
(`annotate_phoenix`)."""

from otel_replay.platforms.phoenix import (
    Annotation,
    PhoenixAddress,
    annotate_phoenix,
    is_phoenix_url,
    parse_phoenix_url,
    phoenix_annotations,
    read_phoenix,
)

__all__ = [
    "Annotation",
    "PhoenixAddress",
    "annotate_phoenix",
    "is_phoenix_url",
    "parse_phoenix_url",
    "phoenix_annotations",
    "read_phoenix",
]
