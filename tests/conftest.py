"""Suite-wide settings.

Property tests (hypothesis, schemathesis) run derandomized by default: the examples come from a
seed fixed per test, so CI is reproducible and a failure on one machine fails on every machine.
To explore new random examples locally (how the online-training bug in
``test_newton_from_a_stale_warm_start_with_a_nearly_bankrupt_agent`` was found), run with
``HYPOTHESIS_PROFILE=explore``.
"""

import os

from hypothesis import settings

settings.register_profile("agora", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "agora"))
