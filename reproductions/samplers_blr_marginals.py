"""The 2-D marginals of Bayesian logistic regression with 10^6 draws (seed 000 section 4.6.2, Fig. 4.2,
"dimensions 2 and 5"), against a long NUTS reference (BlackJAX).

:mod:`samplers_blr` compares the marginals after 300-1,500 passes (6,000-16,000 draws), where the
Monte Carlo error of the chains hides their discretisation bias. Here every chain runs 10^6 steps
(A = 10, the step ``h_long`` of ``samplers_blr``: 0.005 on both sets), every 10th draw kept, the
first 20 % dropped, on the same two sets (generated: N = 12,214, D = 100, n = 500; scikit-learn's
digits: N = 1,347, D = 65, n = 100), against 20,000 NUTS draws. Reported per method: the distance of
the means in NUTS standard deviations, the 95 % ellipses' area ratio (1 is right), the effective
sample sizes (ArviZ) and the Monte Carlo standard error of the mean distance they imply, so a bias
is told from noise.

CCAdL runs with the **diagonal** covariance here: its full-covariance step on the generated set
(a (500 x 100) covariance per step, per-step Python) measured 37 ms per step at load 19, about
10 hours for 10^6 steps; ``samplers_blr`` reports the full covariance at its shorter length.

    python reproductions/samplers_blr_marginals.py [--draws 1000000] [--short]

``--short`` (the normal suite's version): N = 3,000, D = 20, 20,000 steps, 2,000 NUTS draws.
Writes ``samplers_blr_marginals[_short].md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from samplers import LogisticRegression
from samplers.diagnostics import ess

sys.path.insert(0, str(Path(__file__).resolve().parent))
import samplers_blr as blr  # noqa: E402 (the sibling reproduction script)

HERE = Path(__file__).resolve().parent
H, A, THIN = 0.005, 10.0, 10


def run_marginals(setup: blr.Setup, steps: int, nuts_draws: int, seed: int = 0) -> dict:
    """NUTS's 2-D marginal and each method's after ``steps`` steps: ``{method: row}``."""
    ref, info = blr.nuts_reference(setup.model, max(500, nuts_draws // 10), nuts_draws, seed)
    ref_mean, ref_cov = blr.marginal(ref)
    ref_ess = np.array([ess(ref[:, d]) for d in blr.DIMS])
    out: dict = {"nuts": info | {"draws": nuts_draws, "ess": ref_ess}, "rows": {}}
    passes = steps * setup.batch / setup.model.n_data
    for method in blr.METHODS:
        r = blr.run(setup, method, H, A, passes, seed, thin=THIN, cov="diagonal")
        if not r.ok:
            out["rows"][method] = {"failed": r.message, "seconds": r.seconds}
            continue
        kept = r.samples[len(r.samples) // 5 :]
        mean, cov = blr.marginal(kept)
        dist, area = blr.compare(mean, cov, ref_mean, ref_cov)
        n_eff = np.array([ess(kept[:, d]) for d in blr.DIMS])
        # the MC standard error of (mean - NUTS mean) in NUTS sds, both chains' errors
        se = np.sqrt(np.diag(cov) / n_eff + np.diag(ref_cov) / ref_ess) / np.sqrt(np.diag(ref_cov))
        out["rows"][method] = {
            "steps": r.n_steps,
            "kept": len(kept),
            "dist": dist,
            "se": float(se.max()),
            "area": area,
            "ess": n_eff,
            "seconds": r.seconds,
        }
    return out


def write(results: dict, path: Path, steps: int, short: bool, seconds: float, load: str) -> None:
    lines = [
        "# BLR 2-D marginals with 10^6 draws (seed 000 section 4.6.2)" + (" -- SHORT RUN" if short else ""),
        "",
        f"Command: `python reproductions/samplers_blr_marginals.py --draws {steps}{' --short' if short else ''}` "
        f"(total {seconds:.0f} s; load (1-min) at the start: {load}; 2 shared cores). h = {H}, A = {A:g} "
        f"(SGLD at h/A), every {THIN}th draw kept, the first 20 % dropped; CCAdL with the diagonal covariance.",
        "",
    ]
    for name, (setup, res) in results.items():
        m, ni = setup.model, res["nuts"]
        lines += [
            f"## {name}: N = {m.n_data:,}, D = {m.dim}, mini-batch {setup.batch}, {steps:,} steps",
            "",
            f"NUTS (BlackJAX, window adaptation): {ni['draws']:,} draws, step {ni['step']:.3g}, "
            f"{ni['leapfrog']:.1f} leapfrog steps per draw, ESS {ni['ess'][0]:.0f} / {ni['ess'][1]:.0f} "
            f"(dims 2 / 5), {ni['seconds']:.0f} s.",
            "",
            "| method | steps | kept | mean distance (NUTS sd) | its MC s.e. | area ratio | ESS (dim 2, dim 5) | seconds |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for method, row in res["rows"].items():
            if "failed" in row:
                lines.append(f"| {method} | failed: {row['failed']} | | | | | | {row['seconds']:.0f} |")
                continue
            lines.append(
                f"| {method} | {row['steps']:,} | {row['kept']:,} | {row['dist']:.3f} | {row['se']:.3f} | "
                f"{row['area']:.3f} | {row['ess'][0]:.0f}, {row['ess'][1]:.0f} | {row['seconds']:.0f} |"
            )
        lines.append("")
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=None, help="steps per chain (default 10^6; short 20,000)")
    ap.add_argument("--short", action="store_true")
    a = ap.parse_args(argv)
    steps = a.draws or (20_000 if a.short else 1_000_000)
    threadpool_limits(1)
    t = time.perf_counter()
    load = f"{os.getloadavg()[0]:.1f}"
    if a.short:
        X, y, Xt, yt = blr.generated(3_000, 1_000, 20)
        sets = [blr.Setup("generated", LogisticRegression(X, y), Xt, yt, 500, (H,), 0, 0)]
    else:
        sets = blr.setups(False)
    results = {s.name: (s, run_marginals(s, steps, 2_000 if a.short else 20_000)) for s in sets}
    out = HERE / ("samplers_blr_marginals_short.md" if a.short else "samplers_blr_marginals.md")
    write(results, out, steps, a.short, time.perf_counter() - t, load)
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
