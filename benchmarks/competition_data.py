"""Synthetic predictions at the scale of the seed's Kaggle-in-class competition (seed 000 §2.7.3).

The competition asked for the 6-bit grey level (64 ordinal classes) of a pixel; 269 submissions of
46 competitors were pooled on 20,000 validation pixels. This generator imitates that setting:

- each item has a latent true distribution, a discretised Gaussian over the K ordinal classes with
  an item-specific centre ``mu_n`` and spread ``sigma_n``; the label is drawn from it;
- agents come in *families* (a competitor's several submissions): every agent estimates the centre
  with an error made of a family-shared part (so agents are correlated, within and, through a
  common part, across families) and its own part, plus a constant bias;
- every agent has its own sharpness (temperature: over- or under-confident spreads), misjudges the
  item's spread with noise, and mixes a small uniform floor ``eps_a`` into its distribution;
- some agents are poor (large errors, strong biases, or nearly flat predictions).

Deterministic given ``seed``; 20,000 x 269 x 64 takes a few seconds (a numba kernel fills the rows) and 2.75 GB in float64.

``make_competition_predictions(n_items, n_agents, n_classes, seed)`` returns ``(log_probs,
labels)`` with ``log_probs`` normalised, float64, shape ``(n_items, n_agents, n_classes)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, fastmath=True)
def _fill_agent_rows(out, start, centre, spread, eps):
    """out[start + c, a, :] = log((1 - eps_a) * DiscGauss(centre, spread) + eps_a / K)."""
    C, A = centre.shape
    K = out.shape[2]
    z = np.empty(K)
    for c in range(C):
        for a in range(A):
            m, inv = centre[c, a], 1.0 / spread[c, a]
            zmax = -1e300
            for k in range(K):
                t = (k - m) * inv
                z[k] = -0.5 * t * t
                if z[k] > zmax:
                    zmax = z[k]
            tot = 0.0
            for k in range(K):
                # below exp(-60) the mass is negligible next to the uniform floor (>= 1e-5 / K)
                z[k] = np.exp(z[k] - zmax) if z[k] - zmax > -60.0 else 0.0
                tot += z[k]
            keep = (1.0 - eps[a]) / tot
            floor = eps[a] / K
            log_floor = np.log(floor)
            for k in range(K):
                out[start + c, a, k] = np.log(z[k] * keep + floor) if z[k] > 0.0 else log_floor


def _log_discretised_gaussian(centre: np.ndarray, spread: np.ndarray, K: int) -> np.ndarray:
    """log-softmax over k of ``-(k - centre)^2 / (2 spread^2)``; broadcasts a trailing class axis."""
    k = np.arange(K, dtype=np.float64)
    z = -0.5 * ((k - centre[..., None]) / spread[..., None]) ** 2
    z -= z.max(axis=-1, keepdims=True)
    z -= np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return z


def make_competition_predictions(
    n_items: int = 20_000,
    n_agents: int = 269,
    n_classes: int = 64,
    seed: int = 0,
    *,
    n_families: int | None = None,
    poor_fraction: float = 0.15,
    chunk: int = 500,
) -> tuple[np.ndarray, np.ndarray]:
    """Realistic synthetic agents' predictions and labels; see the module docstring.

    Returns ``(log_probs, labels)``: normalised float64 log-probabilities ``(n_items, n_agents,
    n_classes)`` and int64 labels ``(n_items,)``.
    """
    if n_items < 1 or n_agents < 1 or n_classes < 2:
        raise ValueError("need n_items >= 1, n_agents >= 1, n_classes >= 2")
    rng = np.random.default_rng(seed)
    K = n_classes
    F = n_families or max(1, int(round(n_agents * 46 / 269)))
    family = np.sort(rng.integers(0, F, n_agents))
    family[: min(F, n_agents)] = np.arange(min(F, n_agents))  # every family has an agent
    family = np.sort(family)

    # items: latent true distribution (centre, spread) and the label drawn from it
    mu = rng.uniform(0.08 * K, 0.92 * K, n_items)
    sigma = np.clip(np.exp(rng.normal(np.log(0.011 * K), 0.45, n_items)), 0.3, 0.3 * K)
    true_lp = _log_discretised_gaussian(mu, sigma, K)
    cdf = np.cumsum(np.exp(true_lp), axis=1)
    u = rng.random(n_items)[:, None]
    labels = np.minimum((cdf < u * cdf[:, -1:]).sum(axis=1), K - 1).astype(np.int64)

    # agents: skill (error scale), shared-error loading, bias, temperature, uniform floor
    fam_skill = np.exp(rng.normal(np.log(0.007 * K), 0.45, F))
    skill = fam_skill[family] * np.exp(rng.normal(0, 0.2, n_agents))
    poor = rng.random(n_agents) < poor_fraction
    skill[poor] *= rng.uniform(2.5, 6.0, poor.sum())
    fam_share = rng.uniform(0.3, 0.8, F)[family]  # weight of the family error in the agent's error
    common_share = 0.35  # part of every error shared by all agents (the hard items)
    bias = rng.normal(0, 0.002 * K, n_agents) + poor * rng.normal(0, 0.01 * K, n_agents)
    temp = np.exp(rng.normal(0, 0.25, n_agents))
    temp[poor] *= rng.choice([0.5, 2.5], poor.sum())
    eps = np.exp(rng.uniform(np.log(1e-5), np.log(2e-2), n_agents))

    out = np.empty((n_items, n_agents, K))
    for start in range(0, n_items, chunk):
        stop = min(n_items, start + chunk)
        c = stop - start
        e_common = rng.standard_normal((c, 1))
        e_fam = rng.standard_normal((c, F))[:, family]
        e_own = rng.standard_normal((c, n_agents))
        a, b = common_share, (1 - common_share)
        err = a * e_common + b * (np.sqrt(fam_share) * e_fam + np.sqrt(1 - fam_share) * e_own)
        centre = mu[start:stop, None] + bias + skill * err
        sig_est = sigma[start:stop, None] * np.exp(0.2 * rng.standard_normal((c, n_agents)))
        spread = np.sqrt(sig_est**2 + skill**2) * temp
        _fill_agent_rows(out, start, centre, np.maximum(spread, 0.3), eps)
    return out, labels


if __name__ == "__main__":  # pragma: no cover - quick look at the data
    import time

    t = time.perf_counter()
    lp, y = make_competition_predictions()
    print(f"generated {lp.shape} in {time.perf_counter() - t:.1f} s")
    ll = lp[np.arange(len(y)), :, y].mean(axis=0)
    print(
        "agent perplexities: best {:.3f} median {:.3f} worst {:.3f}".format(
            *np.exp(-np.array([ll.max(), np.median(ll), ll.min()]))
        )
    )
