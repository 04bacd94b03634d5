"""`long_runs.EARLY_ROOT`'s resample functions and verifier, for ``agent-replay attribute
--resamplers``: its root cause (step 1) comes long before its Point of Commitment (step 12)."""

from __future__ import annotations

from tests.attribution.long_runs import EARLY_ROOT

EARLY_ROOT.register()
