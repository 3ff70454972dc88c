"""The public/private split and the private subsets of a competition."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.split import grouped_split, private_subsets, public_private_split, split_mask, stratified_split
from solvers.errors import InputError


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


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("fraction", [0.1, 0.37, 0.5, 0.83])
def test_stratified_split_keeps_each_class_share_within_one_item(seed, fraction):
    rng = np.random.default_rng(seed)
    # unbalanced classes, one of them tiny, labels in a random order
    y = rng.permutation(np.repeat(np.arange(6), [400, 123, 61, 17, 5, 1]))
    mask = stratified_split(y, fraction, seed)
    assert mask.sum() == int(round(fraction * len(y)))  # the same size as a random split
    for c in range(6):
        n_c = int((y == c).sum())
        assert abs(int(mask[y == c].sum()) - fraction * n_c) < 1.0, (c, n_c)
    assert np.array_equal(mask, stratified_split(y, fraction, seed))
    assert not np.array_equal(mask, stratified_split(y, fraction, seed + 10))
    # a random split of the same size misses the shares by far more on the big class
    worst = max(abs(int(public_private_split(len(y), fraction, s)[y == 0].sum()) - fraction * 400) for s in range(20))
    assert worst > 1.0


def test_grouped_split_never_splits_a_group():
    rng = np.random.default_rng(5)
    groups = rng.permutation(np.repeat([f"img{i}" for i in range(12)], rng.integers(20, 200, 12)))
    for seed in range(10):
        mask = grouped_split(groups, 0.5, seed)
        for g in np.unique(groups):
            side = mask[groups == g]
            assert side.all() or not side.any(), g
        assert 0 < mask.sum() < len(groups)
        assert np.array_equal(mask, grouped_split(groups, 0.5, seed))
    # the public part is close to the asked share: within the largest group's size
    sizes = np.unique(groups, return_counts=True)[1]
    assert abs(grouped_split(groups, 0.3, 0).sum() - 0.3 * len(groups)) <= sizes.max()
    # different seeds give different splits
    assert len({grouped_split(groups, 0.5, s).tobytes() for s in range(10)}) > 3


def test_split_mask_dispatches_and_names_bad_input():
    y = np.array([0, 1] * 10)
    assert np.array_equal(split_mask("random", 20, 0.5, 3), public_private_split(20, 0.5, 3))
    assert np.array_equal(split_mask("stratified", 20, 0.5, 3, labels=y), stratified_split(y, 0.5, 3))
    g = np.repeat([7, 8, 9, 10], 5)
    assert np.array_equal(split_mask("grouped", 20, 0.5, 3, groups=g), grouped_split(g, 0.5, 3))
    cases = [
        (("grouped", 20, 0.5, 3), {}, "groups"),  # no group column
        (("grouped", 20, 0.5, 3), {"groups": g[:10]}, "groups"),  # not one per item
        (("grouped", 20, 0.5, 3), {"groups": np.zeros(20)}, "groups"),  # one group only
        (("grouped", 20, 0.5, 3), {"groups": np.full(20, np.nan)}, "groups"),
        (("stratified", 20, 0.5, 3), {}, "labels"),
        (("stratified", 1, 0.5, 3), {"labels": [0]}, "n_items"),  # too few items
        (("random", 1, 0.5, 3), {}, "n_items"),
        (("bydate", 20, 0.5, 3), {}, "split"),
        (("stratified", 20, 1.5, 3), {"labels": y}, "public_fraction"),
    ]
    for args, kw, field in cases:
        with pytest.raises(InputError) as exc:
            split_mask(*args, **kw)
        assert exc.value.field == field, (args, kw, exc.value)
