"""Bayesian logistic regression at the seed's scale (seed 000 section 4.6.2, l.2289-2308, Fig. 4.2):
SGLD, SGHMC, SGNHT and CCAdL (full covariance) against a long NUTS reference (BlackJAX).

Model (Eq. 4.51-4.52): likelihood ``prod_i sigma(y_i w^T x_i)``, prior ``N(0, I)``. Data, offline:

* ``generated``: the seed's sizes, 12,214 training and 2,037 test points, D = 100 (the seed's MNIST
  7-vs-9 random projection is not available offline): Gaussian features of variance ``9/D``, a true
  ``w ~ N(0, I)``, labels drawn from the model;
* ``digits``: scikit-learn's 8x8 digits (1,797 images), the task "digit >= 5", pixels / 16 and an
  intercept (D = 65), a stratified 75/25 split (1,347 / 450). Seven-vs-nine, the seed's pair,
  leaves 359 images: too few for mini-batches.

Mini-batches of ``n = 500`` (generated, the seed's) and ``n = 100`` (digits). The seed's grid of
``(h, A)`` is not stated; here two steps ``h`` per set (``setups``) and ``A`` in {1, 10}. SGLD has no friction: it runs
at ``h / A``, the time step of SGHMC's overdamped limit (``dtheta = -(1/A) grad U dt +
sqrt(2/A) dW``). All chains start at 0.

Measured: (1) the test log-likelihood (mean per test point) of the posterior mean against passes
(:func:`samplers.posterior_mean.posterior_mean_curve`: the mean of the second half of the draws so
far), against the NUTS posterior mean's; (2) the 2-D marginal of coordinates 2 and 5 (the seed's
"dimensions 2 and 5", 1-based) at A = 10 from a long run after a 20 % burn-in: its mean and
covariance against NUTS's, as the distance of the means in NUTS standard deviations and the
ratio of the 95 % ellipses' areas.

``main()`` (``make reproduce``) writes ``samplers_blr.md`` and ``figures/samplers_blr_*.png``;
``--short`` runs a scaled-down version (N = 3,000, D = 20) and writes ``samplers_blr_short.md``.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import expit

from samplers import LogisticRegression, sample
from samplers.diagnostics import ess
from samplers.posterior_mean import posterior_mean_curve

HERE = Path(__file__).resolve().parent
METHODS = ("sgld", "sghmc", "sgnht", "ccadl")
DIMS = (1, 4)  # the seed's dimensions 2 and 5, 0-based


@dataclass
class Setup:
    name: str
    model: LogisticRegression
    X_test: np.ndarray
    y_test: np.ndarray
    batch: int
    steps: tuple[float, ...]  # the h grid
    passes: float  # length of the grid runs
    long_passes: float  # length of the A = 10 runs for the 2-D marginal


def generated(n_train: int = 12_214, n_test: int = 2_037, dim: int = 100, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_train + n_test, dim)) * (3.0 / np.sqrt(dim))
    y = np.where(rng.random(len(X)) < expit(X @ rng.standard_normal(dim)), 1.0, -1.0)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def digits(seed: int = 0):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    X = np.hstack([d.data / 16.0, np.ones((len(d.data), 1))])
    y = np.where(d.target >= 5, 1.0, -1.0)
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
    return Xa, ya, Xb, yb


def setups(short: bool) -> list[Setup]:
    g = generated(3_000, 1_000, 20) if short else generated()
    d = digits()
    gen = LogisticRegression(g[0], g[1])
    dig = LogisticRegression(d[0], d[1])
    return [
        Setup("generated", gen, g[2], g[3], 500, (0.005, 0.02), *((30, 100) if short else (100, 300))),
        Setup("digits", dig, d[2], d[3], 100, (0.002, 0.005), *((100, 300) if short else (300, 1500))),
    ]


def nuts_reference(model: LogisticRegression, n_warmup: int, n_samples: int, seed: int = 0) -> tuple[np.ndarray, dict]:
    """Draws of the posterior by BlackJAX's NUTS (window adaptation of the step and a diagonal mass
    matrix), its log density written independently in ``jax.numpy``, in float64."""
    import blackjax
    import jax
    import jax.numpy as jnp

    t = time.perf_counter()
    with jax.enable_x64(True):
        yX = jnp.asarray(model.y[:, None] * model.X)
        logp = lambda w: -0.5 * (w @ w) / model.prior_var + jnp.sum(jax.nn.log_sigmoid(yX @ w))
        warm = blackjax.window_adaptation(blackjax.nuts, logp)
        (state, params), _ = warm.run(jax.random.key(seed), jnp.zeros(model.dim), num_steps=n_warmup)
        kernel = jax.jit(blackjax.nuts(logp, **params).step)

        def one(s, key):
            s, info = kernel(key, s)
            return s, (s.position, info.num_integration_steps)

        _, (pos, n_leap) = jax.lax.scan(one, state, jax.random.split(jax.random.key(seed + 1), n_samples))
        draws, n_leap, step = np.asarray(pos), np.asarray(n_leap), float(params["step_size"])
    info = {"seconds": time.perf_counter() - t, "step": step, "leapfrog": float(np.mean(n_leap))}
    return draws, info


def run(setup: Setup, method: str, h: float, A: float, passes: float, seed: int = 0, thin: int = 1, cov: str = "full"):
    """One chain of ``passes`` passes keeping every ``thin``-th draw; SGLD at step ``h / A``; CCAdL
    with the ``cov`` covariance ("full" or "diagonal")."""
    m = setup.model
    n_steps = int(np.ceil(passes * m.n_data / setup.batch))
    opts = {"batch": setup.batch, "seed": seed, "theta0": np.zeros(m.dim), "thin": thin}
    if method == "sgld":
        return sample(m, method, n_steps // thin, step=h / A, **opts)
    extra = {"covariance": cov} if method == "ccadl" else {}
    return sample(m, method, n_steps // thin, step=h, friction=A, **opts, **extra)


def curve(setup: Setup, r) -> tuple[np.ndarray, np.ndarray]:
    score = lambda w: setup.model.predictive_loglik(w, setup.X_test, setup.y_test)
    return posterior_mean_curve(r.samples, setup.batch / setup.model.n_data, score, points=30)


def marginal(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = draws[:, DIMS]
    return s.mean(axis=0), np.cov(s.T)


def compare(mean: np.ndarray, cov: np.ndarray, ref_mean: np.ndarray, ref_cov: np.ndarray) -> tuple[float, float]:
    """(largest distance of the means in reference standard deviations, ratio of the ellipse areas)."""
    dist = float(np.max(np.abs(mean - ref_mean) / np.sqrt(np.diag(ref_cov))))
    return dist, float(np.sqrt(np.linalg.det(cov) / np.linalg.det(ref_cov)))


def run_setup(setup: Setup, nuts_draws: int, seed: int = 0) -> dict:
    ref, nuts_info = nuts_reference(setup.model, max(500, nuts_draws // 5), nuts_draws, seed)
    ref_mean = ref.mean(axis=0)
    out: dict = {"nuts": nuts_info, "nuts_ll": setup.model.predictive_loglik(ref_mean, setup.X_test, setup.y_test)}
    out["ref_marginal"] = marginal(ref)
    out["curves"] = {}
    for h in setup.steps:
        for A in (1.0, 10.0):
            for method in METHODS:
                r = run(setup, method, h, A, setup.passes, seed)
                out["curves"][method, h, A] = (curve(setup, r) if r.ok else None, r.message, r.seconds)
    out["long"] = {}
    # the largest step of the grid at which every method's A = 10 chain ran to its end
    stable = [h for h in setup.steps if all(out["curves"][m, h, 10.0][0] is not None for m in METHODS)]
    out["long_h"] = h_long = max(stable or [min(setup.steps)])
    for method in METHODS:
        r = run(setup, method, h_long, 10.0, setup.long_passes, seed)
        if not r.ok:
            out["long"][method] = (None, r.message, r.seconds, len(r.samples))
            continue
        kept = r.samples[len(r.samples) // 5 :]
        mean, cov = marginal(kept)
        n_eff = tuple(ess(kept[:, d]) for d in DIMS)
        out["long"][method] = (
            (mean, cov, *compare(mean, cov, *out["ref_marginal"]), n_eff),
            r.message,
            r.seconds,
            len(kept),
        )
    return out


def plot(setup: Setup, res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [(h, A) for h in setup.steps for A in (1.0, 10.0)]
    fig, axes = plt.subplots(1, len(cells) + 1, figsize=(4 * (len(cells) + 1), 3.6))
    for ax, (h, A) in zip(axes, cells):
        for method in METHODS:
            c = res["curves"][method, h, A][0]
            if c is not None:
                ax.semilogx(*c, label=method)
        ax.axhline(res["nuts_ll"], color="k", ls="--", lw=1, label="NUTS mean")
        lo = res["nuts_ll"] - 0.3 * abs(res["nuts_ll"])
        ax.set_ylim(lo, res["nuts_ll"] + 0.05 * abs(res["nuts_ll"]))
        ax.set_title(f"{setup.name}: h={h}, A={A:g}")
        ax.set_xlabel("passes")
    axes[0].set_ylabel("test log-likelihood of the posterior mean")
    axes[0].legend(fontsize=7)
    ax = axes[-1]
    t = np.linspace(0, 2 * np.pi, 200)
    circle = np.sqrt(5.991) * np.vstack([np.cos(t), np.sin(t)])  # chi2(2) 95 %
    for name, (mean, cov), style in [("NUTS", res["ref_marginal"], "k-")] + [
        (m, res["long"][m][0][:2], "-") for m in METHODS if res["long"][m][0] is not None
    ]:
        e = mean[:, None] + np.linalg.cholesky(cov) @ circle
        ax.plot(*e, style, label=name)
        ax.plot(*mean, "x" if name != "NUTS" else "o", color=ax.lines[-1].get_color())
    rm, rc = res["ref_marginal"]
    span = 4 * np.sqrt(np.diag(rc))
    ax.set_xlim(rm[0] - span[0], rm[0] + span[0])
    ax.set_ylim(rm[1] - span[1], rm[1] + span[1])
    ax.set_title(f"2-D marginal, dims 2 and 5, h={res['long_h']}, A=10")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write(results: dict[str, tuple[Setup, dict]], path: Path, short: bool, seconds: float, load: str) -> None:
    lines = [
        "# Bayesian logistic regression (seed 000 section 4.6.2, Fig. 4.2)" + (" -- SHORT RUN" if short else ""),
        "",
        f"Command: `python reproductions/samplers_blr.py{' --short' if short else ''}` "
        f"({'scaled down: generated N = 3,000, D = 20; ' if short else ''}total {seconds:.0f} s). "
        f"Load (uptime) at the start: `{load}`.",
        "",
    ]
    for name, (setup, res) in results.items():
        m = setup.model
        ni = res["nuts"]
        lines += [
            f"## {name}: N = {m.n_data:,}, test {len(setup.y_test):,}, D = {m.dim}, mini-batch {setup.batch}",
            "",
            f"NUTS reference (BlackJAX, window adaptation): step {ni['step']:.3g}, "
            f"{ni['leapfrog']:.1f} leapfrog steps per draw, {ni['seconds']:.0f} s; "
            f"test log-likelihood of its posterior mean **{res['nuts_ll']:.5f}**.",
            "",
            f"Test log-likelihood of the posterior mean after {setup.passes:g} passes (and the first pass count "
            "from which it stays within 0.005 of the NUTS value; '-' never):",
            "",
            "| method | " + " | ".join(f"h={h}, A={A:g}" for h in setup.steps for A in (1.0, 10.0)) + " |",
            "|---|" + "---|" * (2 * len(setup.steps)),
        ]
        for method in METHODS:
            cells = []
            for h in setup.steps:
                for A in (1.0, 10.0):
                    c, msg, _ = res["curves"][method, h, A]
                    if c is None:
                        cells.append(f"failed: {msg}")
                        continue
                    passes, ll = c
                    close = np.abs(ll - res["nuts_ll"]) <= 0.005
                    stays = [p for i, p in enumerate(passes) if close[i:].all()]
                    cells.append(f"{ll[-1]:.5f} ({stays[0]:.3g})" if stays else f"{ll[-1]:.5f} (-)")
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines += [
            "",
            f"2-D marginal of dims 2 and 5 at h = {res['long_h']} (the largest grid step at which every A = 10 "
            f"chain ran to its end), A = 10, {setup.long_passes:g} passes, the first 20 % dropped: distance of the "
            "means in NUTS standard deviations, the 95 % ellipse's area over NUTS's (1 is right), and the "
            "effective sample sizes of the two coordinates (ArviZ).",
            "",
            "| method | draws | mean distance (sd) | area ratio | ESS (dim 2, dim 5) | seconds |",
            "|---|---|---|---|---|---|",
        ]
        for method in METHODS:
            v, msg, sec, n = res["long"][method]
            lines.append(
                f"| {method} | {n:,} | failed: {msg} | | | {sec:.0f} |"
                if v is None
                else f"| {method} | {n:,} | {v[2]:.2f} | {v[3]:.2f} | {v[4][0]:.0f}, {v[4][1]:.0f} | {sec:.0f} |"
            )
        lines += ["", f"![{name}](figures/samplers_blr_{name}{'_short' if short else ''}.png)", ""]
    path.write_text("\n".join(lines) + "\n")


def main(short: bool = False) -> int:
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # one BLAS thread: on a loaded machine two thrash on the (D, D) covariance
    t = time.perf_counter()
    load = open("/proc/loadavg").read().split()[0] if os.path.exists("/proc/loadavg") else "?"
    results = {}
    for setup in setups(short):
        res = run_setup(setup, 2_000 if short else 4_000)
        results[setup.name] = (setup, res)
        (HERE / "figures").mkdir(exist_ok=True)
        plot(setup, res, HERE / "figures" / f"samplers_blr_{setup.name}{'_short' if short else ''}.png")
    out = HERE / ("samplers_blr_short.md" if short else "samplers_blr.md")
    write(results, out, short, time.perf_counter() - t, load)
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main(short="--short" in sys.argv))
