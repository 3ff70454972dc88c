"""Table 4.1 of seed 000 (l.2240-2287): SGHMC, SGNHT and CCAdL on the Normal-Gamma toy.

N = 100 draws of N(0, 1), mini-batches of n = 10, h in {0.001, 0.01}, A in {1, 10}. Each cell gives,
for mu and gamma, the RMSE of the sample's marginal density against the analytic one (Student-t
with 2 alpha_N dof, Gamma; :func:`samplers.diagnostics.density_rmse`) and the autocorrelation time
(``n / ESS``, ArviZ). SGHMC runs as the seed's Alg. 4.2 without a noise estimate (sigma_hat = 0)
and without momentum resampling (the seed states neither). All chains start at (0, 1), the first
10 % of the steps are burn-in.

``main()`` (``make reproduce``) runs the seed's 10^6 samples and writes ``samplers_table41.md``;
``python reproductions/samplers_table41.py --short`` runs 10^5 samples and writes
``samplers_table41_short.md`` (marked SHORT).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from samplers import NormalGamma, sample
from samplers.diagnostics import autocorrelation_time, density_rmse

HERE = Path(__file__).resolve().parent
METHODS = ("sghmc", "sgnht", "ccadl")
CELLS = ((0.001, 1.0), (0.001, 10.0), (0.01, 1.0), (0.01, 10.0))
SEED_TABLE = {  # (RMSE, autocorrelation time) as printed, l.2280-2285
    "sghmc": ((0.0148, 236.12), (0.0029, 333.04), (0.0531, 29.78), (0.0132, 39.33)),
    "sgnht": ((0.0037, 238.32), (0.0035, 406.71), (0.0044, 26.71), (0.0043, 55.00)),
    "ccadl": ((0.0034, 238.06), (0.0031, 402.45), (0.0021, 26.71), (0.0035, 54.43)),
}


def run_cell(model: NormalGamma, method: str, h: float, A: float, n_samples: int, seed: int = 0) -> dict:
    mu_d, g_d = model.marginals()
    r = sample(
        model,
        method,
        n_samples,
        theta0=np.array([0.0, 1.0]),
        step=h,
        friction=A,
        batch=10,
        burn_in=n_samples // 10,
        seed=seed,
    )
    out = {"ok": r.ok, "message": r.message, "seconds": r.seconds}
    if not r.ok or len(r.samples) < 100:
        return out
    s = r.samples
    out["rmse"] = (density_rmse(s[:, 0], mu_d.pdf, mu_d.ppf), density_rmse(s[:, 1], g_d.pdf, g_d.ppf))
    out["tau"] = (autocorrelation_time(s[:, 0]), autocorrelation_time(s[:, 1]))
    return out


def run_table(n_samples: int, seed: int = 0) -> dict[str, list[dict]]:
    model = NormalGamma.generate(100, seed=seed)
    return {m: [run_cell(model, m, h, A, n_samples, seed) for h, A in CELLS] for m in METHODS}


def _fmt(c: dict) -> str:
    if "rmse" not in c:
        return f"failed: {c['message']}"
    return "({:.4f}, {:.4f}), ({:.1f}, {:.1f})".format(*c["rmse"], *c["tau"])


def write(table: dict[str, list[dict]], n_samples: int, path: Path, short: bool) -> None:
    head = "| method | " + " | ".join(f"h={h}, A={A:g}" for h, A in CELLS) + " |"
    lines = [
        f"# Table 4.1 (seed 000): Normal-Gamma, N = 100, n = 10, {n_samples:,} samples"
        + (" -- SHORT RUN (the seed uses 10^6)" if short else ""),
        "",
        f"Command: `{'python reproductions/samplers_table41.py --short' if short else 'make reproduce'}`. "
        f"Load (uptime) at the start: `{os.getloadavg()[0]:.2f}`. Measured cells: (RMSE mu, RMSE gamma), "
        "(autocorrelation time mu, gamma). Density RMSE: 50-bin histogram over the central 99.9 % of the "
        "analytic marginal (the seed does not state its method, so only orderings compare).",
        "",
        head,
        "|" + "---|" * (len(CELLS) + 1),
    ]
    lines += [f"| {m} | " + " | ".join(_fmt(c) for c in table[m]) + " |" for m in METHODS]
    lines += ["", "The seed's cells (RMSE, autocorrelation time):", "", head, "|" + "---|" * (len(CELLS) + 1)]
    lines += [f"| {m} | " + " | ".join(f"({r}, {t})" for r, t in SEED_TABLE[m]) + " |" for m in METHODS]
    wins = [
        f"h={h}, A={A:g}: " + ("yes" if sum(cc["rmse"]) < sum(cs["rmse"]) else "no")
        for (h, A), cc, cs in zip(CELLS, table["ccadl"], table["sgnht"])
        if "rmse" in cc and "rmse" in cs
    ]
    lines += ["", "CCAdL's summed RMSE below SGNHT's (the seed claims every cell): " + "; ".join(wins), ""]
    lines += [
        "Reading: at h = 0.001 the autocorrelation times are 200-450, so even 10^6 draws hold only a few "
        "thousand effective samples and the histogram RMSE there is dominated by Monte Carlo noise; the "
        "orderings at h = 0.01 are the informative ones. The absolute RMSE scale differs from the seed's, "
        "whose density estimator is not stated.",
        "",
    ]
    path.write_text("\n".join(lines))


def main(short: bool = False) -> int:
    n = 100_000 if short else 1_000_000
    t = time.perf_counter()
    table = run_table(n)
    write(table, n, HERE / ("samplers_table41_short.md" if short else "samplers_table41.md"), short)
    print((HERE / ("samplers_table41_short.md" if short else "samplers_table41.md")).read_text())
    print(f"{time.perf_counter() - t:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(short="--short" in sys.argv))
