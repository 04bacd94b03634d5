"""The outputs of a fixed set of commands, as digests: run before and after a change that must not
change behaviour (moving code between modules), and compare.

    python scripts/same_outputs.py --out before.json      # on the commit before the change
    python scripts/same_outputs.py --compare before.json  # after it: exit 1 naming what differs

Every command runs in one fixed folder with a fresh store of the bundled samples, so paths and
ids are the same on every run; standard output, standard error and the exit code are digested
(and files the command writes, where it writes one).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# what changes from one run to the next of the same code: clocks, and a recorded run's fresh ids
VOLATILE = [
    (re.compile(rb'"wall_seconds": ?[0-9.e-]+'), b'"wall_seconds": 0'),
    (re.compile(rb'_unix_nano": ?[0-9]+'), b'_unix_nano": 0'),
    (re.compile(rb"step executions, [0-9.]+ s"), b"step executions, 0 s"),
    (re.compile(rb"(resample-function calls\)|judge calls), [0-9.]+ s"), rb"\1, 0 s"),
]
FRESH_IDS = re.compile(rb"\b[0-9a-f]{32}\b|\b[0-9a-f]{24}\b|\b[0-9a-f]{16}\b")

ROOT = Path(__file__).resolve().parent.parent
TOOLS = str(ROOT / "examples" / "incident" / "tools.py")
AGENT = str(ROOT / "examples" / "incident" / "agent.py")
# one folder per checkout, so two checkouts can be compared at once
WORK = Path("/tmp") / f"agent-replay-same-outputs-{hashlib.sha256(bytes(ROOT)).hexdigest()[:8]}"

# the id of the run the command `record` made, wherever a later command names it
RECORDED = "{recorded}"
WITH_TOOLS = ["--resamplers", TOOLS, "--json"]
FORK_TOOL = ["fork", "e88b7591", "--at", "3", *WITH_TOOLS]
FORK_RECORDED = ["fork", RECORDED, "--at", "3", "--agent", f"{AGENT}:investigate", "--json"]
EDIT_SERVICE = '[{"op": "replace", "path": "/arguments/service", "value": "payments"}]'

# (name, arguments, file the command writes or None)
COMMANDS: list[tuple[str, list[str], str | None]] = [
    ("import", ["import", str(ROOT / "sample_traces"), "--json"], None),
    ("import-again", ["import", str(ROOT / "sample_traces")], None),
    ("list", ["list"], None),
    ("list-json", ["list", "--json"], None),
    ("show", ["show", "ef2843ff"], None),
    ("show-tree", ["show", "780c4b16", "--tree"], None),
    ("show-json", ["show", "ef2843ff", "--json"], None),
    ("export-jsonl", ["export", "ef2843ff", "5bb5", "--format", "jsonl"], None),
    ("diff", ["diff", "ef2843ff", "5bb5"], None),
    ("diff-json", ["diff", "ef2843ff", "5bb5", "--json"], None),
    ("replay-chat", ["replay", "ef2843ff", "--json"], None),
    (
        "attribute-chat",
        ["attribute", "ef2843ff", "--resamplers", TOOLS, "--success-if", "v841", "--repair"],
        None,
    ),
    (
        "attribute-chat-json",
        ["attribute", "ef2843ff", "--resamplers", TOOLS, "--success-if", "v841", "--json"],
        None,
    ),
    (
        "attribute-trace-json",
        [
            *("attribute", "ef2843ff", "--resamplers", TOOLS, "--success-if", "v841"),
            *("--driver", "trace", "--json"),
        ],
        None,
    ),
    (
        "attribute-shapley-json",
        [
            *("attribute", "incident-fail", "--resamplers", TOOLS, "--success-if", "v841"),
            *("--method", "shapley", "--permutations", "8", "--json"),
        ],
        None,
    ),
    (
        "attribute-dry-run",
        ["attribute", "ef2843ff", "--resamplers", TOOLS, "--success-if", "v841", "--dry-run"],
        None,
    ),
    (
        "attribute-html",
        [
            *("attribute", "ef2843ff", "--resamplers", TOOLS, "--success-if", "v841"),
            *("--out", "report.html"),
        ],
        "report.html",
    ),
    (
        "fork-chat",
        [
            *("fork", "e88b7591", "--at", "3", "--value", "[]"),
            *("--resamplers", TOOLS, "--json"),
        ],
        None,
    ),
    (
        "fork-trace",
        [
            *("fork", "e88b7591", "--at", "3", "--value", "[]"),
            *("--resamplers", TOOLS, "--driver", "trace", "--json"),
        ],
        None,
    ),
    (
        "record",
        [
            *("record", "--agent", f"{AGENT}:investigate"),
            *("--verifier", f"{AGENT}:outcome", "--json"),
        ],
        None,
    ),
    ("bad-id", ["show", "nosuchrun"], None),
    ("bad-resamplers", ["attribute", "ef2843ff", "--resamplers", "nosuch.py"], None),
    # every move of `fork`, its rules' messages, and the built-in agent it chooses
    ("fork-observe", ["fork", "e88b7591", "--at", "3", "--observe", "[]", *WITH_TOOLS], None),
    ("fork-observe-error", [*FORK_TOOL, "--observe-error", "reset", "--driver", "trace"], None),
    ("fork-fault", ["fork", "e88b7591", "--at", "3", "--fault", "timeout", *WITH_TOOLS], None),
    ("fork-fault-text", [*FORK_TOOL[:-1], "--fault", "truncate"], None),
    ("fork-do-tool", [*FORK_TOOL, "--do", '{"arguments": {"service": "payments"}}'], None),
    (
        "fork-do-turn",
        ["fork", "e88b7591", "--at", "2", "--do", '{"role": "assistant", "content": "done"}'],
        None,
    ),
    ("fork-edit", [*FORK_TOOL, "--edit", EDIT_SERVICE], None),
    (
        "fork-swap-model",
        ["fork", "e88b7591", "--at", "1", "--swap-model", "other", *WITH_TOOLS],
        None,
    ),
    (
        "fork-chat-driver",
        ["fork", "incident-fail", "--at", "3", "--value", "[]", "--driver", "chat"],
        None,
    ),
    ("fork-no-move", ["fork", "e88b7591", "--at", "3"], None),
    (
        "fork-two-moves",
        ["fork", "e88b7591", "--at", "3", "--observe", "[]", "--fault", "error"],
        None,
    ),
    ("fork-bad-at", ["fork", "e88b7591", "--at", "9", "--observe", "nojson"], None),
    ("fork-observe-turn", ["fork", "e88b7591", "--at", "2", "--observe", "nojson"], None),
    ("fork-bad-json", ["fork", "e88b7591", "--at", "3", "--value", "nojson"], None),
    (
        "fork-bad-edit",
        ["fork", "e88b7591", "--at", "3", "--edit", '[{"op": "remove", "path": "/x"}]'],
        None,
    ),
    ("fork-do-shape", ["fork", "e88b7591", "--at", "3", "--do", '{"args": {}}'], None),
    ("fork-do-not-object", ["fork", "e88b7591", "--at", "3", "--do", '{"arguments": 5}'], None),
    (
        "fork-do-trace",
        ["fork", "e88b7591", "--at", "3", "--do", '{"arguments": {}}', "--driver", "trace"],
        None,
    ),
    ("fork-bad-fault", ["fork", "e88b7591", "--at", "3", "--fault", "nosuch"], None),
    (
        "fork-max-turns",
        ["fork", "e88b7591", "--at", "3", "--observe", "[]", "--max-turns", "0"],
        None,
    ),
    (
        "fork-bad-agent",
        ["fork", "e88b7591", "--at", "3", "--observe", "[]", "--agent", "nosuch:f"],
        None,
    ),
    (
        "replay-agent-json",
        ["replay", "e88b7591", "--agent", f"{AGENT}:investigate", "--json"],
        None,
    ),
    ("replay-agent", ["replay", "e88b7591", "--agent", f"{AGENT}:investigate"], None),
    ("diff-runs-json", ["diff", "e88b7591", "incident-pass", "--json"], None),
    ("resume-finished", ["resume", "ef2843ff", "--resamplers", TOOLS], None),
    # the run `record` made (its id is fresh each time, so ids are digested as ID)
    (
        "fork-agent-observe",
        [*FORK_RECORDED, "--observe", "[]", "--verifier", f"{AGENT}:outcome"],
        None,
    ),
    ("fork-agent-fault", [*FORK_RECORDED, "--fault", "timeout"], None),
    ("fork-agent-do", [*FORK_RECORDED, "--do", '{"arguments": {"service": "payments"}}'], None),
    ("fork-agent-edit", [*FORK_RECORDED, "--edit", EDIT_SERVICE], None),
    ("replay-recorded", ["replay", RECORDED, "--agent", f"{AGENT}:investigate", "--json"], None),
    ("resume-recorded", ["resume", RECORDED, "--agent", f"{AGENT}:investigate"], None),
    ("diff-recorded-json", ["diff", RECORDED, "e88b7591", "--json"], None),
]


def run_all() -> dict[str, str]:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("AGENT_REPLAY_STORE", None)
    command = [str(Path(sys.executable).parent / "agent-replay")]
    digests = {}
    recorded = RECORDED
    for name, arguments, written in COMMANDS:
        fresh = name == "record" or RECORDED in arguments
        arguments = [recorded if a == RECORDED else a for a in arguments]
        done = subprocess.run(
            [*command, *arguments], cwd=WORK, env=env, capture_output=True, timeout=600
        )
        if name == "record":
            recorded = json.loads(done.stdout)["id"]
        parts = [done.stdout, done.stderr, str(done.returncode).encode()]
        if written is not None:
            parts.append((WORK / written).read_bytes())
        whole = hashlib.sha256()
        for part in parts:
            for pattern, fixed in VOLATILE:
                part = pattern.sub(fixed, part)
            if fresh:
                part = FRESH_IDS.sub(b"ID", part)
            whole.update(hashlib.sha256(part).digest())
        digests[name] = whole.hexdigest()[:16]
    return digests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the digests here")
    parser.add_argument("--compare", type=Path, help="compare with digests written earlier")
    options = parser.parse_args()
    digests = run_all()
    if options.out is not None:
        options.out.write_text(json.dumps(digests, indent=2) + "\n")
    if options.compare is None:
        print(json.dumps(digests, indent=2))
        return 0
    before = json.loads(options.compare.read_text())
    changed = sorted(k for k in before.keys() | digests.keys() if before.get(k) != digests.get(k))
    for name in changed:
        print(f"differs: {name}")
    print(f"{len(digests) - len(changed)} of {len(digests)} commands give the same outputs")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
