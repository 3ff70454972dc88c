"""Market training (seed 000, Algorithm 2.4): agents trade on labelled items and are paid out.

For each training item the market clears at the current wealth; the label ``y`` is revealed and
agent ``i`` receives ``r_{i,y} / c_y`` (its holding of the winning good). Two update modes:

``"online"``
    the wealth is replaced by the payout after every item (in order). For log-utility agents this is
    exactly the Bayesian posterior update of model weights ``W_i <- W_i P_i(y) / sum_j W_j P_j(y)``.
``"batch"``
    the market clears every item of a batch at the same wealth, and the new wealth is the mean payout
    over the batch (``batch_size=None``: the whole training set). For log-utility agents one epoch is
    one EM step for the linear-pool weights, so the wealth converges to the maximum-likelihood linear
    pool; for isoelastic agents the payout is the responsibility of the variational Algorithm 2.1.

Item weights (``sample_weight``, scikit-learn's convention: an integer weight counts the item that
many times, weight 0 leaves it out): in batch mode the new wealth is the weighted mean payout of the
batch (any non-negative weights; with ``batch_size=None`` exactly the fit on repeated items); online
training counts items, so its weights must be whole numbers and each item is traded that many times
in a row.

Epochs repeat until ``max_i |W_i - W_i^{previous epoch}| <= wealth_tol`` or ``max_epochs``.

Payouts use the *realised* clearing price of the winning good, ``sum_l r_{l,y}``, which equals
``c_y`` within the equilibrium tolerance; with it the total wealth is conserved to rounding error
(``sum_i W_i = 1`` within ~1e-15) at every step, and :class:`TrainingResult` reports the largest
deviation seen. Exponential agents may lose more than they had (short positions): their wealth may
turn negative and is reported, never clipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aggregators.validation import DEFAULT_FLOOR, Kind, as_labels, check_sample_weight
from solvers.errors import InputError
from solvers.progress import ProgressFn, report

from . import kernels
from .agents import market_of, prepare_beliefs
from .equilibrium import CODES, auto_newton, check_method_applies, default_max_iter, solve_prices
from .utilities import ISOELASTIC

MODES = ("batch", "online")


@dataclass
class TrainingResult:
    """What market training returns.

    ``wealth_history`` has one row per epoch boundary (row 0 = initial wealth);
    ``step_history`` (if recorded) one row per wealth update of every epoch.
    ``conservation_error`` is ``max |sum_i W_i - 1|`` over every update.
    """

    wealth: np.ndarray
    wealth_history: np.ndarray
    n_epochs: int
    converged: bool
    conservation_error: float
    n_equilibrium_iter: int
    all_equilibria_converged: bool
    seconds: float
    mode: str
    step_history: np.ndarray | None = None
    epoch_seconds: list[float] = field(default_factory=list)
    n_floored: int = 0


def _check_options(mode, batch_size, max_epochs, wealth_tol, tol, method):
    if mode not in MODES:
        raise InputError("mode", f"must be one of {MODES}; got {mode!r}")
    if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or batch_size < 1):
        raise InputError("batch_size", f"must be a positive integer or None; got {batch_size!r}")
    if not isinstance(max_epochs, (int, np.integer)) or max_epochs < 1:
        raise InputError("max_epochs", f"must be a positive integer; got {max_epochs!r}")
    if not (np.isfinite(wealth_tol) and wealth_tol >= 0):
        raise InputError("wealth_tol", f"must be a non-negative number; got {wealth_tol!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise InputError("tol", f"must be a positive number; got {tol!r}")
    if method not in ("auto", *CODES):
        raise InputError("method", f"must be 'auto' or one of {tuple(CODES)}; got {method!r}")


def labelled_market(beliefs, y, utilities, wealth, kind, floor, sample_weight, what: str):
    """What training and the wealth gradient validate: ``(agents, preds, lp, labels, sample_weight)``
    with ``lp`` the floored log-beliefs, C-contiguous; ``what`` names the caller in the error for
    generic utilities."""
    beliefs, agents = market_of(beliefs, utilities, wealth, kind)
    if agents.has_generic:
        raise InputError("utilities", f"{what} supports exponential, log and isoelastic agents")
    preds = prepare_beliefs(beliefs, agents, kind=kind, floor=floor)
    lp = np.ascontiguousarray(preds.log_probs)
    labels = as_labels(y, lp.shape[0], lp.shape[2], field="y")
    return agents, preds, lp, labels, check_sample_weight(sample_weight, lp.shape[0])


def train_market(
    beliefs: Any,
    y: Any,
    utilities: Any = "log",
    wealth: Any = None,
    *,
    mode: str = "batch",
    batch_size: int | None = None,
    max_epochs: int = 100,
    wealth_tol: float = 1e-10,
    tol: float = 1e-10,
    method: str = "auto",
    kind: Kind = "log_probs",
    floor: float | None = DEFAULT_FLOOR,
    record_steps: bool = False,
    progress: ProgressFn | None = None,
    sample_weight: Any = None,
) -> TrainingResult:
    """Train the wealth of a market on labelled items (Algorithm 2.4).

    Parameters
    ----------
    beliefs : (n_items, n_agents, n_classes) log-probabilities (``kind="probs"`` for probabilities).
    y : (n_items,) integer labels.
    utilities, wealth : as in :func:`markets.equilibrium.equilibrium` (an :class:`Agents` works too).
    mode : ``"batch"`` or ``"online"``; ``batch_size`` (batch mode): items per wealth update.
    max_epochs, wealth_tol : stop when the wealth changes by at most ``wealth_tol`` over an epoch.
    tol, method : equilibrium tolerance and solver: ``"auto"`` (closed form for all-log markets,
        else by shape as :func:`markets.equilibrium.auto_newton`), ``"newton"``, ``"newton_cg"``,
        ``"anderson"``, ``"gram"`` (eta = 2 markets) or the seed's ``"fixed_point"``.
    record_steps : keep the wealth after every update (``step_history``).
    progress : callback receiving the fraction of ``max_epochs`` done (:mod:`solvers.progress`).
    sample_weight : ``None`` or one non-negative weight per item (whole numbers in online mode).
    """
    _check_options(mode, batch_size, max_epochs, wealth_tol, tol, method)
    agents, preds, lp, labels, sw = labelled_market(
        beliefs, y, utilities, wealth, kind, floor, sample_weight, "market training"
    )
    if method in CODES:
        check_method_applies(method, agents)
    n, A, K = lp.shape
    if sw is not None and mode == "online":
        if not np.array_equal(sw, np.round(sw)):
            raise InputError("sample_weight", "online training counts items: the weights must be whole numbers")
        idx = np.repeat(np.arange(n), sw.astype(np.int64))  # each item traded c_n times in a row
        lp, labels, n, sw = np.ascontiguousarray(lp[idx]), labels[idx], idx.size, None
    elif sw is not None and not (sw > 0).all():  # weight 0: the item is left out
        keep = sw > 0
        lp, labels, sw = np.ascontiguousarray(lp[keep]), labels[keep], sw[keep]
        n = int(keep.sum())
    solver = auto_newton(K, agents) if method == "auto" else method  # auto: by shape
    code, max_iter = CODES[solver], default_max_iter(solver)
    # all-log markets: the closed form (Bayes' rule / EM step) unless a solver is asked for by name
    all_log = method == "auto" and bool(np.all((agents.kind == ISOELASTIC) & (agents.inv_eta == 1.0)))

    W = agents.wealth.copy()
    hist = [W.copy()]
    steps: list[np.ndarray] = []
    U = np.zeros((n, K))
    warm = False
    cons = abs(W.sum() - 1.0)
    total_iter = 0
    all_conv = True
    converged = False
    epoch_seconds = []
    t0 = time.perf_counter()
    bs = n if (batch_size is None or mode == "online") else int(batch_size)
    p_true = np.exp(lp[np.arange(n), :, labels]) if all_log else None  # (n, A)
    epoch = 0
    for epoch in range(1, max_epochs + 1):
        te = time.perf_counter()
        W_prev = W.copy()
        if mode == "online":
            sh = np.empty((n, A))
            if all_log:
                assert p_true is not None
                for j in range(n):  # Bayes' rule: the closed form of the log-utility market
                    v = W * p_true[j]
                    W = v / v.sum()
                    sh[j] = W
            else:
                it, ok = kernels.online_epoch(
                    lp,
                    labels,
                    agents.kind,
                    agents.inv_eta,
                    W,
                    float(tol),
                    max_iter,
                    code,
                    U,
                    warm,
                    sh,
                )
                total_iter += int(it)
                all_conv &= bool(ok)
            cons = max(cons, float(np.max(np.abs(sh.sum(axis=1) - 1.0))))
            if record_steps:
                steps.append(sh)
        else:
            for s in range(0, n, bs):
                sl = slice(s, min(n, s + bs))
                if all_log:
                    assert p_true is not None
                    v = W[None, :] * p_true[sl]
                    P = v / v.sum(axis=1, keepdims=True)
                else:
                    P = np.empty((sl.stop - sl.start, A))
                    Ub = U[sl].copy()
                    it, ok, _, _ = solve_prices(
                        lp[sl],
                        agents,
                        float(tol),
                        max_iter,
                        code,
                        Ub,
                        warm,
                        labels=labels[sl],
                        payouts=P,
                        wealth=W,
                    )
                    U[sl] = Ub
                    total_iter += int(it.sum())
                    all_conv &= bool(ok.all())
                W = P.mean(axis=0) if sw is None else (sw[sl] @ P) / sw[sl].sum()
                cons = max(cons, abs(W.sum() - 1.0))
                if record_steps:
                    steps.append(W[None, :].copy())
        warm = True
        hist.append(W.copy())
        epoch_seconds.append(time.perf_counter() - te)
        report(progress, epoch / max_epochs)
        if np.max(np.abs(W - W_prev)) <= wealth_tol:
            converged = True
            break
    report(progress, 1.0)
    return TrainingResult(
        wealth=W,
        wealth_history=np.array(hist),
        n_epochs=epoch,
        converged=converged,
        conservation_error=float(cons),
        n_equilibrium_iter=total_iter,
        all_equilibria_converged=all_conv,
        seconds=time.perf_counter() - t0,
        mode=mode,
        step_history=np.concatenate(steps) if (record_steps and steps) else None,
        epoch_seconds=epoch_seconds,
        n_floored=preds.n_floored,
    )
