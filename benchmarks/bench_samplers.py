"""SGLD, SGHMC and SGNHT on Bayesian logistic regression: ours (samplers/) against BlackJAX on CPU,
same run, same (h, A), same number of gradient steps and mini-batch size.

Per-step cost (microseconds per gradient step, after JAX's compilation) and effective samples per
second (the mean over coordinates of ArviZ's bulk ESS of the post-burn-in positions, divided by
the sampling seconds). BlackJAX's SGHMC integrates ``L`` steps on one mini-batch and redraws the
momentum per call; ours runs with ``resample_every=L`` and a fresh mini-batch per step. BlackJAX's
SGNHT moves theta before p (ours: p before theta, Alg. 4.3). Data families: Gaussian features,
correlated (AR(0.9)) features, scikit-learn's digits (0-4 vs 5-9); sizes up to the seed's
N = 12,214, D = 100, n = 500 (l.2293).

    python benchmarks/bench_samplers.py [--steps 4000]

Needs the ``bench`` extra (blackjax).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

from samplers import LogisticRegression, sample
from samplers.diagnostics import ess_all

warnings.filterwarnings("ignore")


def family(name: str, N: int, D: int, seed: int = 0) -> LogisticRegression:
    rng = np.random.default_rng(seed)
    if name == "digits":
        from sklearn.datasets import load_digits

        X, t = load_digits(return_X_y=True)
        X = (X - X.mean(0)) / (X.std(0) + 1e-9)
        return LogisticRegression(X, np.where(t < 5, 1.0, -1.0))
    X = rng.standard_normal((N, D))
    if name == "correlated":
        for j in range(1, D):
            X[:, j] = 0.9 * X[:, j - 1] + np.sqrt(1 - 0.81) * X[:, j]
    X /= np.sqrt(D)
    w = rng.standard_normal(D) * 2
    y = np.where(rng.random(N) < 1 / (1 + np.exp(-X @ w)), 1.0, -1.0)
    return LogisticRegression(X, y)


def blackjax_run(model: LogisticRegression, method: str, steps: int, h: float, A: float, n: int, L: int):
    import blackjax
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    X, y = jnp.asarray(model.X), jnp.asarray(model.y)
    N, D = X.shape

    def logprior(w):
        return -0.5 * jnp.sum(w * w) / model.prior_var

    def loglik(w, batch):
        xb, yb = batch
        return jax.nn.log_sigmoid(yb * (xb @ w))

    grad = blackjax.sgmcmc.gradients.grad_estimator(logprior, lambda w, b: loglik(w, b), N)
    calls = steps // L if method == "sghmc" else steps
    if method == "sgld":
        alg = blackjax.sgld(grad)
    elif method == "sghmc":
        alg = blackjax.sghmc(grad, num_integration_steps=L, alpha=A)
    else:
        alg = blackjax.sgnht(grad, alpha=A)

    def one(carry, key):
        state = carry
        k1, k2 = jax.random.split(key)
        idx = jax.random.randint(k1, (n,), 0, N)
        state = alg.step(k2, state, (X[idx], y[idx]), h)
        pos = state if method in ("sgld", "sghmc") else state.position
        return state, pos

    @jax.jit
    def run(key, w0):
        state = alg.init(w0) if method != "sgnht" else alg.init(w0, key)
        _, trace = jax.lax.scan(one, state, jax.random.split(key, calls))
        return trace

    w0 = jnp.zeros(D)
    run(jax.random.PRNGKey(1), w0).block_until_ready()  # compile
    t = time.perf_counter()
    out = run(jax.random.PRNGKey(0), w0).block_until_ready()
    return np.asarray(out), time.perf_counter() - t, calls


def ours_run(model, method, steps, h, A, n, L):
    opts = {"sgld": {}, "sghmc": {"friction": A, "resample_every": L}, "sgnht": {"friction": A}}[method]
    r = sample(model, method, steps, theta0=np.zeros(model.dim), step=h, batch=n, seed=0, record_every=steps, **opts)
    return r.samples, r.seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=4000)
    a = ap.parse_args(argv)
    L = 10
    cases = [("gaussian", 2000, 10), ("gaussian", 12214, 100), ("correlated", 12214, 100), ("digits", 1797, 64)]
    print(f"load (1-min): {os.getloadavg()[0]:.2f}; steps {a.steps}; mini-batch 500; L = {L} for SGHMC")
    print(
        "| family | N | D | method | ours us/step | BlackJAX us/step | ours ESS/s | BlackJAX ESS/s | ESS/s ratio ours/BJ |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for fam, N, D in cases:
        model = family(fam, N, D)
        N, D = model.n_data, model.dim
        n = min(500, N)
        for method, h, A in (
            ("sgld", 0.5 / N, 0.0),
            ("sghmc", 0.5 / np.sqrt(N), 1.0),
            ("sgnht", 0.5 / np.sqrt(N), 1.0),
        ):
            s_o, t_o = ours_run(model, method, a.steps, h, A, n, L)
            s_b, t_b, calls = blackjax_run(model, method, a.steps, h, A, n, L)
            burn_o, burn_b = len(s_o) // 5, len(s_b) // 5
            e_o = float(ess_all(s_o[burn_o:]).mean()) / (t_o * (1 - burn_o / len(s_o)))
            e_b = float(ess_all(s_b[burn_b:]).mean()) / (t_b * (1 - burn_b / len(s_b)))
            print(
                f"| {fam} | {N} | {D} | {method} | {1e6 * t_o / a.steps:.0f} | {1e6 * t_b / a.steps:.0f} | "
                f"{e_o:.0f} | {e_b:.0f} | {e_o / e_b:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
