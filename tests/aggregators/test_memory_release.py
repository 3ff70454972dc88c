"""A fit frees its working copies of the data when the fitted pool (or the equilibrium's result) is
dropped, without waiting for Python's cyclic garbage collector.

The Rényi weight problem used to hold itself as its own root (``self._root = self``): every fit left a
reference cycle owning the floored copy of the data, freed only when the cyclic collector next ran. A
loop of fits (a service, a γ sweep driven by a user, a benchmark) held one more data-sized copy per fit:
at 20,000 × 269 × 64 the peak resident memory of three fits in a row grew 5.4 → 8.0 → 10.6 GiB.
(``gamma="learn_per_agent"`` builds the same problem; it is left out for time: 14 s here, and its kernels
keep ~0.1 MB of their own after a second fit, numba's, not the data's.)
"""

import gc
import tracemalloc

import pytest

from aggregators.linear import LinearPool
from aggregators.logpool import LogPool
from aggregators.renyi import RenyiPool
from benchmarks.logpool_families import make_family
from markets import equilibrium

CASES = {
    "log": lambda X, y: LogPool().fit(X, y),
    "linear": lambda X, y: LinearPool().fit(X, y),
    "renyi 0.5": lambda X, y: RenyiPool(gamma=0.5).fit(X, y),
    "renyi grid": lambda X, y: RenyiPool(gamma="grid", gamma_grid=(0.1, 0.5, 1.0)).fit(X, y),
    "market": lambda X, y: equilibrium(X, 10.0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_dropping_a_fit_frees_its_copies_of_the_data_without_the_cyclic_collector(case):
    X, y = make_family("gaussian-logit", 800, 12, 8, seed=2)  # 614 kB of data
    CASES[case](X, y)  # once outside the measurement: compilation and the kernels' reused workspaces
    gc.collect()
    gc.disable()
    try:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        fitted = CASES[case](X, y)
        del fitted
        left = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.stop()
    finally:
        gc.enable()
    # NumPy reports its buffers to tracemalloc: what is still allocated after the fit is dropped
    # must be far below one copy of the data (a fit makes one to three)
    assert left < 0.1 * X.nbytes, (case, left, X.nbytes)
