"""The public/private split and the private subsets of a competition."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.split import private_subsets, public_private_split


def test_split_is_fixed_by_seed_and_sized():
    a = public_private_split(1000, 0.3, seed=7)
    b = public_private_split(1000, 0.3, seed=7)
    c = public_private_split(1000, 0.3, seed=8)
    assert a.dtype == bool and a.sum() == 300
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # extremes keep at least one item on each side
    assert public_private_split(3, 0.01, seed=0).sum() == 1
    assert public_private_split(3, 0.99, seed=0).sum() == 2
    with pytest.raises(ValueError, match="public_fraction"):
        public_private_split(10, 1.0, seed=0)


def test_private_subsets_partition():
    parts = private_subsets(103, seed=1)
    assert len(parts) == 10
    allidx = np.concatenate(parts)
    assert np.array_equal(np.sort(allidx), np.arange(103))
