"""The chunked log-pool fit in-process (the Dask runs are in test_on_dask.py): same optimum, bad input."""

import numpy as np
import pytest

from aggregators import LogPool
from benchmarks.competition_data import make_competition_predictions
from cluster.chunked_fit import fit_log_pool
from solvers.errors import InputError


def test_above_8000_items_the_subsampled_hessian_path_is_the_in_memory_one():
    lp, y = make_competition_predictions(9000, 30, 8, seed=0)
    ref = LogPool().fit(lp, y)
    pool = fit_log_pool(lp, y, chunk_items=1700)
    np.testing.assert_allclose(pool.weights_, ref.weights_, atol=1e-10)
    assert pool.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(pool.predict(lp[:20]), ref.predict(lp[:20]), atol=1e-10)


def test_bad_input_names_the_argument(tmp_path):
    lp, y = make_competition_predictions(50, 3, 4, seed=0)
    cases = [
        ((lp[:, :, :1], y), {}, "log_probs"),
        ((lp, y[:-1]), {}, "y"),
        ((lp, y), {"chunk_items": 0}, "chunk_items"),
        ((str(tmp_path / "missing.zarr"), y), {}, "log_probs"),
    ]
    for args, kw, field in cases:
        with pytest.raises(InputError) as e:
            fit_log_pool(*args, **kw)
        assert e.value.field == field
    bad = lp.copy()
    bad[37, 1, 2] = np.nan
    with pytest.raises(InputError) as e:
        fit_log_pool(bad, y, chunk_items=10)
    assert e.value.item == 37  # the item in the whole array, not in its block
