"""``solver="auto"`` for :class:`~solvers.problems.linear_models.MultinomialLogistic` (softmax regression).

Rule (measured by ``benchmarks/bench_multinomial.py``, see ``benchmarks/results/solvers-incremental.md``,
section "Multinomial (compiled kernels)"):

- an l1 term -> ``saga`` (prox; on make_classification n=20000, d=100, K=10, C = 1, l1 = 1e-3 it
  reached 1e-6 in 0.46 s against 1.5 s for our SVRG and 4.1 s for scikit-learn's elastic-net ``saga``
  (``--l1 1e-3``); FISTA (``nesterov``) needed 12 s in a separate single run);
- otherwise -> ``lbfgs``. A first rule sent large well-conditioned dense problems to ``svrg``
  (measured 0.18 / 0.14 s against 0.41 / 0.23 s for ``lbfgs``), but those ``lbfgs`` times were inflated
  by the benchmark harness (it evaluated the objective in a callback on the clock) and by a slower
  ``value_and_grad``; re-measured on a quiet machine (2026-11-21, 21:45 UTC) at n = 20000, d = 100,
  K = 10, C = 1, ``lbfgs`` reached 1e-6 in 0.115 s (0.98x the best peer, scipy L-BFGS-B; 0.84x at
  1e-8) against 0.154 s for ``svrg`` (1.29x). On digits (n = 1797) ``lbfgs`` was 0.95x / 0.99x the
  best peer at C = 1 / 0.01 and no stochastic method reached 1e-4 in 400 epochs at C = 1; on sparse
  CSR rows (2e4 x 2e4, 50 unit-norm nonzeros, K = 10) it needed 0.17 s to 1e-6 against 1.0-1.1 s for
  our SAGA/SVRG (0.70x the best peer).

Newton, the rule that would otherwise apply (dim <= 1000), forms the (dK x dK) Hessian column by column
and was 100x slower.
A separate module, ranked first by ``registry.AUTO_PRIORITY`` (10: before ``newton``/``quasi_newton``); it leaves
every other problem to the other rules.
"""

from __future__ import annotations

from ..problem import capability
from ..registry import register_auto_rule


def _rule(problem) -> str | None:
    if capability(problem, "multinomial_terms") is None:
        return None
    if capability(problem, "l1", 0.0) > 0:
        return "saga"
    return "lbfgs"


register_auto_rule("variance_reduced_auto_multinomial", _rule)
