"""Observability platforms both ways: `otel_replay.platforms.phoenix` reads an Arize Phoenix
project through its REST API as runs, and writes an attribution's verdict back as span
annotations."""

#: The inside API: nothing lent; the other floors import the public modules (`schemes`, `phoenix`,
#: `mlflow`, `jaeger`).
__inside__: list[str] = []
