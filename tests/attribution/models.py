"""The synthetic structural causal models in ``scm/`` and what theory says about each.

Every model is a native JSONL trajectory (``scm/<name>.jsonl``, the factual failed run) and a
resampler module (``scm/<module>.py``) loaded exactly as ``agent-replay attribute --resamplers`` loads
it. The numbers below are derived in each module's docstring; tests compare the estimates with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from otel_replay import Registry, StepKind, Trajectory
from otel_replay.importers.jsonl import read_jsonl
from otel_replay.resamplers._loading import load_resamplers
from otel_replay.resamplers._registry import ResampleFunction

SCM = Path(__file__).resolve().parent / "scm"
#: Where the models the docs run live (shipped with the examples, read from there by the tests).
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "docs"


@dataclass(frozen=True)
class Model:
    """One SCM: where it lives and its theoretical attribution and Shapley values.

    Attributes:
        name: ``scm/<name>.jsonl`` holds the factual run.
        module: ``scm/<module>.py`` registers its resample functions and verifier.
        trajectory_id: the id inside the JSONL file.
        point_of_commitment: the step theory names.
        attribution: ``P(fail | kept_i) - P(fail | ablate_from(i))`` per resamplable step.
        shapley: exact Shapley values per resamplable step, for ``v(S) = P(fail | S kept)``.
        v_all, v_none: ``v`` of the full and of the empty coalition.
        observed_only: steps with no resample function.
        folder: where both files are (`SCM`, or `EXAMPLES` for the models the docs run).
    """

    name: str
    module: str
    trajectory_id: str
    point_of_commitment: int
    attribution: dict[int, float]
    shapley: dict[int, float]
    v_all: float
    v_none: float
    observed_only: tuple[int, ...] = field(default=())
    folder: Path = SCM

    @property
    def jsonl(self) -> Path:
        return self.folder / f"{self.name}.jsonl"

    @property
    def resamplers(self) -> Path:
        return self.folder / f"{self.module}.py"

    def trajectory(self) -> Trajectory:
        (trajectory,) = read_jsonl(self.jsonl)
        assert trajectory.id == self.trajectory_id
        return trajectory

    def registry(self, replace: Mapping[str, ResampleFunction | None] | None = None) -> Registry:
        """A fresh registry holding this model's module, loaded as the CLI loads it.

        ``replace`` maps step names to another resample function (or None: observed-only); the
        result is a copy of the loaded registry with those steps changed.
        """
        loaded = Registry()
        load_resamplers([str(self.resamplers)], loaded)
        if not replace:
            return loaded
        copy = Registry()
        added: set[tuple[StepKind, str | None]] = set()
        for step in self.trajectory().steps:
            if step.name in replace:
                function = replace[step.name]
                key: tuple[StepKind, str | None] = (step.kind, step.name)
                if function is not None and key not in added:
                    copy.add_resampler(step.kind, function, step.name)
                    added.add(key)
                continue
            registration = loaded.lookup(step)
            if registration is None or (registration.kind, registration.name) in added:
                continue
            copy.add_resampler(registration.kind, registration.function, registration.name)
            added.add((registration.kind, registration.name))
        assert loaded.verifier is not None
        copy.set_verifier(loaded.verifier)
        return copy


CHAIN = Model(
    name="chain",
    module="chain",
    trajectory_id="scm-chain",
    point_of_commitment=1,
    attribution={0: 0.0, 1: 0.6, 3: 0.0, 4: 0.0, 5: 0.0},
    shapley={0: 0.0, 1: 0.2, 3: 0.2, 4: 0.2, 5: 0.0},
    v_all=1.0,
    v_none=0.4,
    observed_only=(2,),
)
AND_GATE = Model(
    name="and_gate",
    module="and_gate",
    folder=EXAMPLES,
    trajectory_id="scm-and",
    point_of_commitment=3,
    attribution={0: 0.0, 1: 0.16, 2: 0.0, 3: 0.8, 4: 0.0},
    shapley={0: 0.0, 1: 0.48, 2: 0.0, 3: 0.48, 4: 0.0},
    v_all=1.0,
    v_none=0.04,
)
OR_GATE = Model(
    name="or_gate",
    module="or_gate",
    trajectory_id="scm-or",
    point_of_commitment=1,
    attribution={0: 0.0, 1: 0.64, 2: 0.0, 3: 0.0, 4: 0.0},
    shapley={0: 0.0, 1: 0.32, 2: 0.0, 3: 0.32, 4: 0.0},
    v_all=1.0,
    v_none=0.36,
)
BUTTERFLY = Model(
    name="butterfly",
    module="butterfly",
    trajectory_id="scm-butterfly",
    point_of_commitment=3,
    attribution={0: 0.0, 1: 0.4, 2: 0.0, 3: 0.2, 4: 0.0, 5: 0.0},
    shapley={0: 0.0, 1: 2 / 15, 2: 0.0, 3: 7 / 30, 4: 7 / 30, 5: 0.0},
    v_all=1.0,
    v_none=0.4,
)
LATE = Model(
    name="late",
    module="late",
    trajectory_id="scm-late",
    point_of_commitment=4,
    attribution={0: 0.0, 1: 0.2, 3: 0.0, 4: 0.4},
    shapley={0: 0.0, 1: 0.1, 3: 0.0, 4: 0.5},
    v_all=1.0,
    v_none=0.4,
    observed_only=(2, 5),
)
HISTORY = Model(
    name="history",
    module="history",
    trajectory_id="scm-history",
    point_of_commitment=1,
    attribution={0: 0.06, 1: 0.8, 3: 0.0, 4: 0.0},
    shapley={0: 0.22, 1: 0.32, 3: 0.32, 4: 0.0},
    v_all=1.0,
    v_none=0.14,
    observed_only=(2,),
)
#: ``history`` with a ``reply`` that reads the record instead of ``ctx.history``: localises wrongly.
HISTORY_FROM_THE_RECORD = Model(
    name="history",
    module="history_factual",
    trajectory_id="scm-history",
    point_of_commitment=0,
    attribution={0: 0.3, 1: 0.0, 3: 0.0, 4: 0.0},
    shapley={0: 0.3, 1: 0.0, 3: 0.0, 4: 0.0},
    v_all=1.0,
    v_none=0.7,
    observed_only=(2,),
)

#: Every model with a planted culprit (the broken ``history_factual`` variant is not one).
#: The swap question's model: its numbers hold under ``--swap-model large`` (re-run with the
#: recorded model, no step matters); not in `MODELS`, whose numbers hold without a swap.
SWAP = Model(
    name="swap",
    module="swap",
    folder=EXAMPLES,
    trajectory_id="scm-swap",
    point_of_commitment=2,
    attribution={0: 0.0, 1: 0.0, 2: 0.9, 3: 0.0, 4: 0.0},
    shapley={0: 0.0, 1: 0.0, 2: 0.45, 3: 0.45, 4: 0.0},
    v_all=1.0,
    v_none=0.1,
)
MODELS = (CHAIN, AND_GATE, OR_GATE, BUTTERFLY, LATE, HISTORY)
