"""Data families for the log-pool fit benchmark (``bench_logpool_fit.py --family``).

Each family returns ``(log_probs, labels)``: normalised float64 log-probabilities of shape
``(n_items, n_agents, n_classes)`` and int64 labels, deterministic given ``seed``, generated in
item chunks (no array-sized temporaries beyond the output). Items have latent logits
``z_n ~ N(0, I_K)`` (scaled by ``truth_scale``); the label is drawn from ``softmax(z_n)``.

``competition``
    :func:`benchmarks.competition_data.make_competition_predictions` (ordinal classes, agent families).
``gaussian-logit``
    agent ``a`` predicts ``softmax(s_a (z_n + sigma_a e_na))`` with sharpness ``s_a`` in [0.2, 4]
    (log-uniform) and noise ``sigma_a`` in [0.3, 3]: the issue's independent problem (about half of
    the agents end with a non-zero weight).
``many-active``
    every agent sees the truth through its own independent noise of the same size (``sigma = 2``)
    and a sharpness near 1, so pooling many of them pays: most weights are non-zero.
``noise``
    a quarter of the agents are informative Gaussian-logit agents; the others predict
    ``softmax(s_a e_na)``, Gaussian-logit noise unrelated to the label.
``near-duplicate``
    sixteen base Gaussian-logit agents, each copied with a small perturbation of its logits
    (standard deviation 0.01): a nearly singular Hessian.

Off any generator (:data:`REAL_FAMILIES`, not in :data:`FAMILIES`, whose every member takes any shape):

``pixels``
    real predictions and real labels: the demo competition's 22 agents predicting a pixel's grey level over
    ``n_classes`` levels (2-256; :mod:`evaluation.demo_task` with ``levels``), the first ``n_agents`` (at most 22)
    of them, on ``n_items`` test pixels (session 56).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

FAMILIES = ("competition", "gaussian-logit", "many-active", "noise", "near-duplicate")
REAL_FAMILIES = ("pixels",)

_CHUNK = 256


def _log_softmax_inplace(x: np.ndarray) -> None:
    x -= x.max(axis=-1, keepdims=True)
    x -= np.log(np.exp(x).sum(axis=-1, keepdims=True))


def make_family(
    family: str, n_items: int, n_agents: int, n_classes: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(log_probs, labels)`` of one family (see the module docstring)."""
    if family == "competition":
        from benchmarks.competition_data import make_competition_predictions

        return make_competition_predictions(n_items, n_agents, n_classes, seed)
    if family == "pixels":
        return _pixels(n_items, n_agents, n_classes, seed)
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}; got {family!r}")
    rng = np.random.default_rng(seed)
    N, A, K = n_items, n_agents, n_classes
    sharp = np.ones(A)
    sigma = np.ones(A)
    informative = np.ones(A, dtype=bool)
    base = np.arange(A)
    if family == "gaussian-logit":
        sharp = np.exp(rng.uniform(np.log(0.2), np.log(4.0), A))
        sigma = rng.uniform(0.3, 3.0, A)
    elif family == "many-active":
        sharp = rng.uniform(0.8, 1.2, A)
        sigma = np.full(A, 2.0)
    elif family == "noise":
        sharp = np.exp(rng.uniform(np.log(0.2), np.log(3.0), A))
        sigma = rng.uniform(0.3, 2.0, A)
        informative = rng.permutation(A) < max(1, A // 4)
    elif family == "near-duplicate":
        nb = min(16, A)
        sharp = np.exp(rng.uniform(np.log(0.3), np.log(3.0), nb))
        sigma = rng.uniform(0.3, 2.5, nb)
        base = np.arange(A) % nb
    out = np.empty((N, A, K))
    y = np.empty(N, dtype=np.int64)
    for s in range(0, N, _CHUNK):
        c = min(_CHUNK, N - s)
        z = 1.5 * rng.standard_normal((c, K))
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        y[s : s + c] = (p.cumsum(axis=1) > rng.random((c, 1))).argmax(axis=1)
        blk = out[s : s + c]
        if family == "near-duplicate":
            nb = sharp.size
            e = rng.standard_normal((c, nb, K))
            b = sharp[None, :, None] * (z[:, None, :] + sigma[None, :, None] * e)
            blk[:] = b[:, base, :] + 0.01 * rng.standard_normal((c, A, K))
        else:
            blk[:] = rng.standard_normal((c, A, K))
            blk *= sigma[None, :, None]
            blk[:, informative, :] += z[:, None, :]
            blk *= sharp[None, :, None]
        _log_softmax_inplace(blk)
    return out, y


def print_sweep(
    header: list[str], shapes: Iterable[str], families: Iterable[str], row: Callable[[str, int, int, int], str]
) -> None:
    """Print a markdown table: ``header``, then ``row(family, n_items, n_agents, n_classes)`` for every
    shape (``"NxAxK"``) and family, shapes outermost."""
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for shape in shapes:
        n, a, k = (int(v) for v in shape.split("x"))
        for fam in families:
            print(row(fam, n, a, k), flush=True)


def _pixels(n_items: int, n_agents: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``pixels`` family: real predictions and labels (module docstring)."""
    from evaluation.demo_task import make_demo_data

    if not (1 <= n_agents <= 22 and 2 <= n_classes <= 256):
        raise ValueError(f"the pixels family has at most 22 agents and 2-256 classes; got {n_agents}, {n_classes}")
    _, te, field = make_demo_data(n_train=30000, n_test=n_items, secret=1 + seed, levels=n_classes)
    out = np.ascontiguousarray(np.stack([a[2] for a in field[:n_agents]], axis=1), dtype=np.float64)
    for s in range(0, n_items, _CHUNK):
        _log_softmax_inplace(out[s : s + _CHUNK])
    return out, np.asarray(te.y, dtype=np.int64)
