"""Stochastic Frank-Wolfe for the CVM-form kernel SVM: SFW and MSFW (seed 002, Ouyang, ch. IV, Alg. 4-7).

Both maximise ``f(alpha) = -alpha^T A alpha`` over the unit simplex (:class:`~solvers.problems.cvm_svm.CVMDual`,
eq. aD/116) with the seed's gradient ``g = -2 A alpha`` (eq. 117), streaming the samples in a random
order. **SFW** (Alg. 4, L1750-1766): start from ``alpha = e(p0)`` for a random ``p0``; for each new
sample ``k`` compute ``g_k`` (O(d |S|) kernel evaluations against the working set ``S``); add ``k`` to
``S`` when ``g_k >= max_S g_p``; then take a TOWARD step (Alg. 5) on ``S``:

    p* = argmax_S g_p,   lambda* = clamp(1 - (g_p*/2 + A_p*p*) / (q + g_p* + A_p*p*), [0, 1])     (eq. 118)
    q <- (1 - l)^2 q - l (1 - l) g_p* + l^2 A_p*p*                                                  (eq. 119)
    g_p <- (1 - l) g_p - 2 l A_pp*  (p in S),    alpha <- (1 - l) alpha + l e(p*)

**MSFW** (L1868) replaces TOWARD by DECIDESTEP (Alg. 6): TOWARD when ``d_t^T grad f >= d_a^T grad f``,
i.e. ``g_max + 2q >= -2q - g_min`` [derived, with ``alpha^T g = -2q``], else AWAY (Alg. 7):

    p* = argmin g_p over the support,  lambda* = clamp((g_p*/2 + A_p*p*)/(q + g_p* + A_p*p*) - 1, [0, a_p*/(1 - a_p*)])
    q <- (1 + l)^2 q + l (1 + l) g_p* + l^2 A_p*p*,   g_p <- (1 + l) g_p + 2 l A_pp*,   alpha <- (1 + l) alpha - l e(p*)

Choices the seed leaves open, stated: the AWAY candidate is the argmin over the *support* of alpha
(an index of ``S`` whose weight went to 0 cannot move away: its step bound is 0); ``alpha = e(p*)``
makes the away direction zero, so no step is taken. After the first epoch (the seed's "batch mode",
L1744) the samples are streamed again in a fresh order: a sample outside ``S`` is tested for entry as
in epoch 1, a sample in ``S`` only triggers the step on ``S``.

The scaled-alpha trick (L1818): ``alpha = c a`` with a global scale ``c = prod (1 - lambda)``, so a TOWARD
step touches only ``a_p*`` (``c <- (1 - l) c``, ``a_p* += l / c``), an AWAY step likewise (``c <- (1 + l) c``,
``a_p* -= l / c``): O(1) instead of O(|S|). ``c`` is folded back into ``a`` when it leaves
``[1e-150, 1e150]`` (an O(|S|) step, rare) and reset at ``lambda = 1``. With the problem's kernel-column
cache (``CVMDual(cache_columns=...)``) the column ``A[:, p*]`` of a repeated ``p*`` costs O(|S|), not
O(d |S|). ``b = y^T alpha`` (L1766) and prediction are :meth:`CVMDual.decision_function`.

``max_iter`` counts epochs (the seed reports 1 and 2). The trace records ``q = alpha^T A alpha`` (the
minimisation objective) per epoch, with the Frank-Wolfe gap of the working-set problem (aD-k),
``max_S g_p + 2q``, as the stopping measure (``tol``).

Cost per sample: O(d |S|) for ``g_k``, O(d |S|) (O(|S|) cached) for the column update, O(1) for alpha.
"""

from __future__ import annotations

from typing import Any, Unpack

import numpy as np

from ..checks import check_count
from ..errors import InputError
from ..monitor import Run, Stop
from ..problems.cvm_svm import CVMDual
from ..progress import report
from ..registry import register
from ._kernel_classifier import BinaryKernelClassifier

_LO, _HI = 1e-150, 1e150


class WorkingSet:
    """The state of SFW/MSFW: the working set ``S``, ``g`` on ``S``, the scaled ``alpha = c a`` and ``q``."""

    def __init__(self, kern: CVMDual, p0: int, *, cached: bool) -> None:
        n = kern.n_terms
        self.kern = kern
        self.cached = cached
        self.idx = np.empty(n, dtype=np.int64)
        self.pos = np.full(n, -1, dtype=np.int64)
        self.g = np.empty(n)
        self.a = np.zeros(n)
        self.XS = np.empty_like(kern.X)  # the points of S, contiguous (no gather per step)
        self.yS = np.empty(n)
        self.sqS = np.empty(n)
        self.m = 0
        self.c = 1.0
        self.App = kern.diag
        self._add(p0, -2.0 * self.App)
        self.a[0] = 1.0
        self.q = self.App  # q^(1) = A_p0p0 (Alg. 4 line 1)
        self.toward = self.away = 0

    def _add(self, k: int, gk: float) -> None:
        self.idx[self.m], self.pos[k], self.g[self.m], self.a[self.m] = k, self.m, gk, 0.0
        self.XS[self.m], self.yS[self.m], self.sqS[self.m] = self.kern.X[k], self.kern.y[k], self.kern.sq[k]
        self.m += 1

    def _row(self, p: int) -> np.ndarray:
        """``A[p, S]``: from the cached column, or computed (O(d |S|))."""
        S = self.idx[: self.m]
        return self.kern.column(p)[S] if self.cached else self.kern.entries(p, S, self._rows())

    def _rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.XS[: self.m], self.yS[: self.m], self.sqS[: self.m]

    def alpha(self) -> np.ndarray:
        """The explicit ``alpha`` (length ``n``)."""
        out = np.zeros(self.kern.n_terms)
        out[self.idx[: self.m]] = self.c * self.a[: self.m]
        return out

    def offer(self, k: int) -> None:
        """Alg. 4 lines 4-9: compute ``g_k`` and add ``k`` to ``S`` when it beats every ``g_p`` of ``S``."""
        if self.pos[k] >= 0:
            return
        S = self.idx[: self.m]
        gk = -2.0 * self.c * float(self.kern.entries(k, S, self._rows()) @ self.a[: self.m])
        if gk >= self.g[: self.m].max():
            self._add(k, gk)

    def _rescale(self) -> None:
        if not _LO <= self.c <= _HI:
            self.a[: self.m] *= self.c
            self.c = 1.0

    def toward_step(self) -> None:
        """Alg. 5."""
        i = int(np.argmax(self.g[: self.m]))
        p, gp, App, q = int(self.idx[i]), float(self.g[i]), self.App, self.q
        den = q + gp + App  # (e_p - alpha)^T A (e_p - alpha) >= 0
        lam = min(max(1.0 - (gp / 2 + App) / den, 0.0), 1.0) if den > 0 else 0.0
        self.toward += 1
        if lam == 0.0:
            return
        self.q = (1 - lam) ** 2 * q - lam * (1 - lam) * gp + lam * lam * App
        self.g[: self.m] = (1 - lam) * self.g[: self.m] - 2 * lam * self._row(p)
        if lam == 1.0:
            self.a[: self.m] = 0.0
            self.a[i], self.c = 1.0, 1.0
            return
        self.c *= 1 - lam
        self.a[i] += lam / self.c
        self._rescale()

    def away_step(self) -> None:
        """Alg. 7 (the argmin over the support of alpha)."""
        a = self.a[: self.m]
        sup = np.flatnonzero(a > 0)
        i = int(sup[np.argmin(self.g[sup])])
        p, gp, App, q = int(self.idx[i]), float(self.g[i]), self.App, self.q
        ap = self.c * float(a[i])
        self.away += 1
        den = q + gp + App
        if ap >= 1.0 or den <= 0:
            return  # alpha = e(p): the away direction is zero
        top = ap / (1 - ap)
        lam = min(max((gp / 2 + App) / den - 1.0, 0.0), top)
        if lam == 0.0:
            return
        self.q = (1 + lam) ** 2 * q + lam * (1 + lam) * gp + lam * lam * App
        self.g[: self.m] = (1 + lam) * self.g[: self.m] + 2 * lam * self._row(p)
        self.c *= 1 + lam
        a[i] = 0.0 if lam == top else a[i] - lam / self.c  # at the bound the weight leaves exactly
        self._rescale()

    def decide_step(self) -> None:
        """Alg. 6: TOWARD when ``g_max + 2q >= -2q - g_min`` (``g_min`` over the support), else AWAY."""
        g = self.g[: self.m]
        gmin = float(g[self.a[: self.m] > 0].min())
        if float(g.max()) + gmin + 4.0 * self.q >= 0:
            self.toward_step()
        else:
            self.away_step()

    @property
    def gap(self) -> float:
        """The Frank-Wolfe gap of the working-set problem: ``max_S g_p + 2q`` (``>= 0``)."""
        return float(self.g[: self.m].max()) + 2.0 * self.q


def _stochastic_fw(problem: Any, name: str, away: bool, *, seed: Any, **stop: Unpack[Stop]) -> Any:
    tol, max_iter = stop["tol"], stop["max_iter"]
    check_count(max_iter, field="max_iter", minimum=1)
    kern: CVMDual = problem.cvm_kernel
    rng = np.random.default_rng(seed)
    run = Run(name, **stop)
    n = kern.n_terms
    order = rng.permutation(n)
    ws = WorkingSet(kern, int(order[0]), cached=kern.cache_columns > 0)
    step = ws.decide_step if away else ws.toward_step
    steps, epoch = 0, 0
    converged, message = False, f"max_iter ({max_iter}) epochs run"
    while epoch < max_iter:
        for k in order[1:] if epoch == 0 else order:
            ws.offer(int(k))
            step()
            steps += 1
        epoch += 1
        run.passes = float(epoch)
        gap = ws.gap
        run.record(ws.q, measure=gap, working_set=ws.m)
        report(run.progress, epoch / max_iter)
        if gap <= tol:
            converged, message = True, f"converged: working-set FW gap {gap:.3g} <= tol {tol:.3g}"
            break
        if run.callback is not None and run.callback_stops(ws.alpha()):
            message = "stopped by callback"
            break
        order = rng.permutation(n)
    alpha = ws.alpha()
    return run.result(
        alpha,
        float(ws.q),
        steps,
        converged,
        message,
        b=float(kern.y @ alpha),
        working_set=int(ws.m),
        n_support=int(np.count_nonzero(alpha)),
        toward_steps=ws.toward,
        away_steps=ws.away,
        kernel_evals=int(kern.kernel_evals),
        epochs=epoch,
    )


def _fw_solver(name: str, away: bool, doc: str):
    """Register ``name`` as :func:`_stochastic_fw` with or without away steps (one driver, two names)."""

    def solver(problem, x0=None, *, seed=0, **stop: Unpack[Stop]):
        if x0 is not None:
            raise InputError("x0", f"{name} starts from a random vertex e(p0) (Alg. 4); it takes no x0")
        return _stochastic_fw(problem, name, away, seed=seed, **stop)

    solver.__name__ = solver.__qualname__ = name
    solver.__doc__ = doc
    return register(name, needs=("cvm_kernel",), constraints=("simplex",), tol=0.0, max_iter=1)(solver)


sfw = _fw_solver("sfw", False, "SFW (Ouyang Alg. 4-5) on the CVM SVM dual; ``max_iter`` epochs over the samples.")
msfw = _fw_solver("msfw", True, "MSFW (Ouyang Alg. 4, 6, 7): SFW with DECIDESTEP and AWAY steps; ``max_iter`` epochs.")


class FrankWolfeSVC(BinaryKernelClassifier):
    """A kernel SVM trained by SFW or MSFW, with scikit-learn's shape: ``fit(X, y)``, ``predict(X)``.

    ``C`` and ``sigma`` are those of :class:`~solvers.problems.cvm_svm.CVMDual` (the L2-SVM's C, the RBF
    width: scikit-learn's ``gamma = 1/(2 sigma^2)``); ``epochs`` the passes; ``cache_columns`` the
    kernel-column cache. Learnt: ``alpha_``, ``b_``, ``classes_``, ``result_``.
    """

    def __init__(
        self,
        C: float = 1.0,
        sigma: float = 1.0,
        *,
        method: str = "sfw",
        epochs: int = 1,
        cache_columns: int = 0,
        seed: int = 0,
    ):
        self.C, self.sigma, self.method, self.epochs = C, sigma, method, epochs
        self.cache_columns, self.seed = cache_columns, seed

    def fit(self, X: Any, y: Any) -> FrankWolfeSVC:
        if self.method not in ("sfw", "msfw"):
            raise InputError("method", f"must be 'sfw' or 'msfw'; got {self.method!r}")
        self.problem_ = CVMDual(X, self._labels(y), C=self.C, sigma=self.sigma, cache_columns=self.cache_columns)
        fn = sfw if self.method == "sfw" else msfw
        self.result_ = fn(self.problem_, max_iter=self.epochs, seed=self.seed)
        self.alpha_ = self.result_.x
        self.b_ = self.result_.extra["b"]
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        return self.problem_.decision_function(self.alpha_, X)
