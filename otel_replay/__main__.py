from otel_replay.cli import main

main()
