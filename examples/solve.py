"""Script the solver core over HTTP: list problems and solvers, then run two solvers on the log
pool's weight problem and compare their traces: /v1/solve."""

from _common import parse_args, synthetic

from app.client import AgoraClient

args = parse_args(__doc__)
lp, y = synthetic(500, 5, 4, seed=4)
with AgoraClient(args.url, api_key=args.api_key) as c:
    print("problems:", [p["name"] for p in c.problems()])
    print("solvers:", [s["name"] for s in c.solvers()])
    data = {"log_probs": lp, "labels": y}
    for method in ("newton", "projected_gradient"):
        try:
            r = c.solve("ConditionalLogLinear.from_log_probs", data, method=method, tol=1e-10)
        except Exception as exc:  # a solver may not apply to this problem
            print(method, "->", exc)
            continue
        print(
            f"{r['method']:20s} f={r['fun']:.12f} iterations={r['n_iter']} passes={r['n_passes']:.0f} "
            f"converged={r['converged']} trace points={len(r['trace']['objective'])}"
        )
