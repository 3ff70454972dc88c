"""The reproduction of seed 001's comparison (reproductions/incremental_comparison.py), quick mode.

Checks the thesis's qualitative claims that hold on our data: with the seed's default steps and the
big-data regularisation, SAGA, SAG, SVRG and Finito reach 1e-10 relative suboptimality on every
problem, and Finito (permuted) needs no more epochs than SAGA to reach 1e-6 on most of them
(seed 001 L702-718: "Finito with permutation is clearly best").
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "reproductions"))


@pytest.mark.slow
def test_incremental_comparison_quick(tmp_path):
    import incremental_comparison as ic

    rows = ic.main(["--quick", "--epochs", "120", "--out", str(tmp_path / "inc")])
    assert (tmp_path / "inc.png").exists() and (tmp_path / "inc_table.md").exists()
    by = {(d, l, m): (e6, e10) for d, l, m, e6, e10, *_ in rows}
    problems = {(d, l) for d, l, *_ in rows}
    for d, l in problems:
        for m in ("saga", "sag", "svrg", "finito"):
            assert np.isfinite(by[(d, l, m)][1]), (d, l, m)
    wins = sum(by[(d, l, "finito")][0] <= by[(d, l, "saga")][0] for d, l in problems)
    assert wins >= len(problems) // 2
