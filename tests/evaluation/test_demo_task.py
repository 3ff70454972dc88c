"""Algorithm 2.3's pixel task, the demo competition's data."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from evaluation.demo_task import W_, K, _residual_logp, load_images, sample_pixels


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
