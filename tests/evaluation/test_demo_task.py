"""Algorithm 2.3's pixel task, the demo competition's data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from evaluation.demo_task import (
    PATCH_ROWS,
    PATCH_W,
    W_,
    K,
    _residual_logp,
    load_images,
    make_demo_data,
    sample_pixels,
    warp_image,
)


def test_images_and_pixel_task_follow_algorithm_2_3():
    images = load_images()
    assert len(images) >= 8  # the bundled images load offline
    assert all(im.dtype == np.uint8 and im.max() <= 63 for im in images)
    rng = np.random.default_rng(0)
    d = sample_pixels(images, 500, rng)
    assert d.x.shape == (500, 40) and d.y.min() >= 0 and d.y.max() < K
    # natural images are smooth: the left neighbour predicts the pixel far better than chance
    assert np.mean(np.abs(d.x[:, W_] - d.y)) < 4.0
    # the discretised Laplace residual is a proper distribution peaked at its mean
    lp = _residual_logp(np.array([10.3]), np.array([1.5]), "laplace")
    assert np.exp(logsumexp(lp)) == pytest.approx(1.0) and int(np.argmax(lp)) == 10


# -- the demo's hidden labels are not recomputable from the public images (issue 14) ----------------
_HASH_W = np.random.default_rng(99).integers(1, 2**62, 40, dtype=np.uint64)


def _all_patches(im):
    """Every causal patch of ``im`` (one column per patch pixel, as in sample_pixels) and its pixel."""
    half = PATCH_W // 2
    h, w = im.shape
    r, c = (a.ravel() for a in np.meshgrid(np.arange(PATCH_ROWS, h), np.arange(half, w - half), indexing="ij"))
    cols = [im[r - dr, c + dc] for dr in range(PATCH_ROWS, 0, -1) for dc in range(-half, half + 1)]
    cols += [im[r, c - dc] for dc in range(half, 0, -1)]
    return cols, im[r, c]


def _hash(cols):
    h = np.zeros(len(cols[0]), np.uint64)
    for j, col in enumerate(cols):
        h += col.astype(np.uint64) * _HASH_W[j]  # wraps mod 2^64: a hash of the 40 grey levels
    return h


def _locate_attack(images, te):
    """The issue's attack: find each test patch in the public images, read the pixel there.
    Returns (share of patches located, share of labels read correctly)."""
    hs, vs = zip(*((_hash(c), v) for c, v in map(_all_patches, images)))
    H, V = np.concatenate(hs), np.concatenate(vs)
    order = np.argsort(H)
    H, V = H[order], V[order]
    h = _hash([te.x[:, j].astype(np.uint8) for j in range(te.x.shape[1])])
    pos = np.clip(np.searchsorted(H, h), 0, len(H) - 1)
    found = H[pos] == h
    return float(found.mean()), float((found & (V[pos] == te.y)).mean())


def test_demo_labels_are_not_recomputable_from_the_public_images():
    images = load_images()
    # the attack is real: on patches cut from the public images it reads off nearly every label
    plain = sample_pixels(images, 1000, np.random.default_rng(2026))
    located, correct = _locate_attack(images, plain)
    assert located == 1.0 and correct > 0.98
    # the demo's test pixels come from copies warped by a secret: nothing is located
    hidden = np.random.default_rng(np.random.SeedSequence([12345, 7, 0xDE30]))
    te = sample_pixels([warp_image(im, hidden) for im in images], 1000, hidden)
    located, correct = _locate_attack(images, te)
    assert located < 0.01 and correct < 0.01
    # a stronger attacker, told each patch's image (the demo does not publish it), takes the pixel
    # under the nearest patch of that public image: no better than an honest "copy the left pixel"
    cols, pix = _all_patches(images[0])
    P = np.stack(cols, axis=1).astype(np.float32)
    sel = te.img == 0
    X = te.x[sel].astype(np.float32)
    d2 = (X**2).sum(1)[:, None] - 2.0 * X @ P.T + (P**2).sum(1)[None, :]
    guess = pix[d2.argmin(axis=1)].astype(np.int64)
    y = te.y[sel]
    assert sel.sum() > 30
    assert np.mean(guess == y) < np.mean(te.x[sel, W_] == y) + 0.1
    assert np.abs(guess - y).mean() > 0.8 * np.abs(te.x[sel, W_] - y).mean()


def test_make_demo_data_labels_depend_on_the_secret():
    _, te1, _ = make_demo_data(n_train=500, n_test=300, seed=3, secret=1)
    _, te2, _ = make_demo_data(n_train=500, n_test=300, seed=3, secret=2)
    tr1, te1b, _ = make_demo_data(n_train=500, n_test=300, seed=3, secret=1)
    np.testing.assert_array_equal(te1.y, te1b.y)  # reproducible from (seed, secret)
    assert not np.array_equal(te1.x, te2.x)
    assert len(tr1) == 500


# -- the same task over another number of classes (session 56: real predictions at K = 256) ----------
def test_levels_give_the_same_task_over_more_classes():
    _, te64, field64 = make_demo_data(n_train=3000, n_test=600, seed=3, secret=1)
    _, te256, field256 = make_demo_data(n_train=3000, n_test=600, seed=3, secret=1, levels=256)
    assert te256.y.max() <= 255 and len(np.unique(te256.y)) > 64
    # the same pixels, quantised four times as finely: the labels and patches agree to about one coarse level
    assert np.mean(np.abs(te256.y / 4.0 - te64.y)) < 1.0
    assert np.mean(np.abs(te256.x / 4.0 - te64.x)) < 1.0
    assert len(field256) == len(field64)
    for (who, what, lp64), (who2, what2, lp256) in zip(field64, field256):
        assert (who, what) == (who2, what2) and lp256.shape == (600, 256)
        lp = lp256 - logsumexp(lp256, axis=1, keepdims=True)
        assert np.all(np.isfinite(lp))
        loss256 = -lp[np.arange(600), te256.y].mean()
        loss64 = -(lp64 - logsumexp(lp64, axis=1, keepdims=True))[np.arange(600), te64.y].mean()
        assert loss256 < np.log(256.0) - 0.2, what  # every agent beats the uniform prediction
        if "linear" in what or "median" in what:
            # a parametric agent predicts the pixel as well at either grain: the finer grid costs it
            # about log 4 nats (counting agents, 4x sparser counts from 3,000 pixels, lose more)
            assert abs(loss256 - loss64 - np.log(4.0)) < 0.35, (what, loss64, loss256)


def test_levels_out_of_range_are_refused():
    with pytest.raises(ValueError, match="levels"):
        load_images(levels=300)
