"""Samplers against their peers on Bayesian logistic regression, same run.

1. SGLD, SGHMC and SGNHT against BlackJAX on CPU: same (h, A), same number of gradient steps and
   mini-batch size. Per-step cost (microseconds per gradient step, after compilation on both sides:
   ours runs blocks of steps in one numba call, ``samplers/compiled.py``) and effective samples per
   second (the mean over coordinates of ArviZ's bulk ESS of the last 80 % of the positions, divided by
   the sampling seconds; each side's seconds are the median of ``REPEATS`` identical runs, ours and
   BlackJAX's interleaved). BlackJAX's SGHMC integrates ``L`` steps on one mini-batch, redraws the
   momentum per call and returns the position after each call; ours runs with ``resample_every=L``
   and ``thin=L`` (the same positions) and either a fresh mini-batch per step (row ``sghmc``) or one per
   outer iteration (row ``sghmc-reuse``, ``reuse_batch=True``: like for like). BlackJAX's SGNHT moves
   theta before p (ours: p before theta, Alg. 4.3).
2. HMC against NumPyro's HMC (no adaptation, identity mass, the same step and path length ``h L``):
   ESS per gradient evaluation (the statistical efficiency, which should agree) and wall time.

Data families: Gaussian features, correlated (AR(0.9)) features, scikit-learn's digits (0-4 vs 5-9);
a sweep of D in {10, 50, 100} and mini-batch n in {100, 500} at the seed's N = 12,214 (l.2293).

    python benchmarks/bench_samplers.py [--steps 10000] [--hmc-samples 1000] [--quick]

Needs the ``bench`` extra (blackjax, numpyro).
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


#: every timing is the median of this many identical runs (the same draws: a seed, a PRNG key), ours
#: and the peer's interleaved, so the load of a shared machine falls on both sides alike
REPEATS = 3


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

    def timed() -> tuple[np.ndarray, float]:
        t = time.perf_counter()
        out = run(jax.random.PRNGKey(0), w0).block_until_ready()
        return np.asarray(out), time.perf_counter() - t

    return timed


#: our options per row: SGHMC draws a fresh mini-batch per step ("sghmc") or one per outer iteration
#: of L steps ("sghmc-reuse", BlackJAX's policy); both keep the position after every L-th step (thin
#: L), the draws BlackJAX returns (one per call of L integration steps)
OURS = {
    "sgld": lambda A, L: {},
    "sghmc": lambda A, L: {"friction": A, "resample_every": L, "thin": L},
    "sghmc-reuse": lambda A, L: {"friction": A, "resample_every": L, "thin": L, "reuse_batch": True},
    "sgnht": lambda A, L: {"friction": A},
}


def ours_run(model, method, steps, h, A, n, L):
    opts = OURS[method](A, L)
    thin = opts.get("thin", 1)
    r = sample(
        model,
        method.split("-")[0],
        steps // thin,
        theta0=np.zeros(model.dim),
        step=h,
        batch=n,
        seed=0,
        record_every=steps,
        **opts,
    )
    return r.samples, r.seconds


def ess_per_second(draws: np.ndarray, seconds: float) -> float:
    """Mean bulk ESS of the last 80 % of the draws over the seconds spent on them."""
    burn = len(draws) // 5
    return float(ess_all(draws[burn:]).mean()) / (seconds * (1 - burn / len(draws)))


def hmc_step(model: LogisticRegression, L: int, seed: int = 0) -> float:
    """A step with acceptance in [0.6, 0.95] on a short run of ours (halved or raised from 0.5/sqrt(N))."""
    h = 0.5 / np.sqrt(model.n_data)
    for _ in range(12):
        r = sample(model, "hmc", 100, theta0=np.zeros(model.dim), step=h, n_leapfrog=L, seed=seed, burn_in=50)
        if r.accept_rate < 0.6:
            h /= 2
        elif r.accept_rate > 0.95:
            h *= 1.5
        else:
            break
    return h


def numpyro_hmc(model: LogisticRegression, n_samples: int, h: float, L: int):
    import jax
    import jax.numpy as jnp
    from numpyro.infer import HMC, MCMC

    jax.config.update("jax_enable_x64", True)
    yX = jnp.asarray(model.y[:, None] * model.X)

    def potential(w):
        return 0.5 * jnp.sum(w * w) / model.prior_var - jnp.sum(jax.nn.log_sigmoid(yX @ w))

    kernel = HMC(
        potential_fn=potential,
        step_size=h,
        trajectory_length=h * L,
        adapt_step_size=False,
        adapt_mass_matrix=False,
    )

    def run(key):
        mcmc = MCMC(kernel, num_warmup=0, num_samples=n_samples, progress_bar=False)
        mcmc.run(key, init_params=jnp.zeros(model.dim), extra_fields=("accept_prob",))
        return mcmc

    run(jax.random.PRNGKey(1)).get_samples().block_until_ready()  # compile
    t = time.perf_counter()
    mcmc = run(jax.random.PRNGKey(0))
    out = mcmc.get_samples().block_until_ready()
    seconds = time.perf_counter() - t
    return np.asarray(out), seconds, float(np.mean(mcmc.get_extra_fields()["accept_prob"]))


def _timed(call) -> tuple[np.ndarray, float, float]:
    """``call()``'s draws, wall seconds and CPU seconds of the process (every thread: XLA's pool too)."""
    c = time.process_time()
    draws, wall = call()
    return draws, wall, time.process_time() - c


def sg_table(cases, steps: int, L: int, methods: tuple[str, ...]) -> None:
    """Per cell: wall and CPU microseconds per step, ESS per wall second and per CPU second (the CPU
    time does not count the time the loaded machine gave to other processes), and the two ratios."""
    print(
        "| family | N | D | n | method | ours us/step | BlackJAX us/step | ours CPU us/step | BlackJAX CPU us/step "
        "| ours ESS/s | BlackJAX ESS/s | ESS/s ratio ours/BJ | ESS/CPU-s ratio ours/BJ |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for fam, N, D, n in cases:
        model = family(fam, N, D)
        N, D, n = model.n_data, model.dim, min(n, model.n_data)
        for method in methods:
            h, A = (0.5 / N, 0.0) if method == "sgld" else (0.5 / np.sqrt(N), 1.0)
            ours_run(model, method, 2 * L, h, A, n, L)  # loads the compiled loops once
            peer = blackjax_run(model, method.split("-")[0], steps, h, A, n, L)
            t_o, t_b = [], []
            for _ in range(REPEATS):  # interleaved: a load spike hits both sides alike
                s_o, *t = _timed(lambda: ours_run(model, method, steps, h, A, n, L))
                t_o.append(t)
                s_b, *t = _timed(peer)
                t_b.append(t)
            (w_o, c_o), (w_b, c_b) = np.median(t_o, axis=0), np.median(t_b, axis=0)
            e_o, e_b = ess_per_second(s_o, w_o), ess_per_second(s_b, w_b)
            print(
                f"| {fam} | {N} | {D} | {n} | {method} | {1e6 * w_o / steps:.0f} | {1e6 * w_b / steps:.0f} | "
                f"{1e6 * c_o / steps:.0f} | {1e6 * c_b / steps:.0f} | {e_o:.0f} | {e_b:.0f} | {e_o / e_b:.2f} | "
                f"{e_o * w_o / c_o / (e_b * w_b / c_b):.2f} |",
                flush=True,
            )


def hmc_table(cases, n_samples: int, L: int) -> None:
    print(
        "| family | N | D | h | L | ours accept | NumPyro accept | ours ESS/grad | NumPyro ESS/grad | "
        "ours s | NumPyro s | wall ratio ours/NumPyro |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for fam, N, D in cases:
        model = family(fam, N, D)
        h = hmc_step(model, L)
        r = sample(
            model, "hmc", n_samples, theta0=np.zeros(model.dim), step=h, n_leapfrog=L, seed=0, record_every=n_samples
        )
        s_n, t_n, acc_n = numpyro_hmc(model, n_samples, h, L)
        grads = n_samples * L
        burn = n_samples // 5
        e_o = float(ess_all(r.samples[burn:]).mean()) / (grads * 0.8)
        e_n = float(ess_all(s_n[burn:]).mean()) / (grads * 0.8)
        print(
            f"| {fam} | {model.n_data} | {model.dim} | {h:.2e} | {L} | {r.accept_rate:.2f} | {acc_n:.2f} | "
            f"{e_o:.3f} | {e_n:.3f} | {r.seconds:.1f} | {t_n:.1f} | {r.seconds / t_n:.2f} |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    # one BLAS thread: on a shared 2-core machine a threaded dgemv stalls (measured: one 12,214 x 100
    # matrix-vector product 28 ms threaded against 0.3 ms single-threaded); ours calls BLAS only in the
    # full-data densities (HMC, the trace points), BlackJAX and NumPyro run XLA's own kernels
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, "blas"):
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--hmc-samples", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="the seed's size only")
    ap.add_argument("--methods", default="sgld,sghmc,sghmc-reuse,sgnht", help="rows of the SG table")
    ap.add_argument("--no-hmc", action="store_true", help="skip the HMC table")
    a = ap.parse_args(argv)
    L = 10
    if a.quick:
        sg_cases = [("gaussian", 12214, 100, 500), ("correlated", 12214, 100, 500)]
        hmc_cases = [("gaussian", 12214, 100)]
    else:
        sg_cases = [(f, 12214, D, n) for f in ("gaussian", "correlated") for D in (10, 50, 100) for n in (100, 500)]
        sg_cases += [("digits", 1797, 64, 100), ("digits", 1797, 64, 500)]
        hmc_cases = [("gaussian", 2000, 10), ("gaussian", 12214, 100), ("correlated", 12214, 100), ("digits", 1797, 64)]
    print(f"load (1-min) at start: {os.getloadavg()[0]:.2f}; {a.steps} SG steps; L = {L} (SGHMC refresh, HMC path)")
    sg_table(sg_cases, a.steps, L, tuple(a.methods.split(",")))
    if not a.no_hmc:
        print(f"\nload (1-min): {os.getloadavg()[0]:.2f}; HMC: {a.hmc_samples} samples each")
        hmc_table(hmc_cases, a.hmc_samples, L)
    print(f"\nload (1-min) at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
