"""Proximal operators and convex conjugates, the building blocks of the primal-dual solvers.

``prox_{t h}(v) = argmin_x h(x) + |x - v|^2 / (2 t)`` (seed 000 l.1112-1197, seed 003 section 6).
Every separable operator here also takes a *vector* step ``t`` (one per coordinate): that is the
**diagonally scaled prox** ``argmin_x h(x) + (1/2) (x - v)^T diag(1/t) (x - v)`` that SP-BCD needs
(seed 000 Eq. 3.46), since for separable ``h`` it splits into one scalar prox per coordinate.

Each regulariser / loss is a small object with ``value(x)`` and ``prox(v, t)``; the losses of the
ERM form (seed 000 Table 3.1) also carry their conjugate ``conj_value(y)`` and the prox of the
conjugate ``conj_prox(v, s)``. Moreau's identity links the two:
``v = prox_{t h}(v) + t prox_{h*/t}(v / t)`` (the weighted form; the unit-weight form
``v = prox_h(v) + prox_{h*}(v)`` is the special case ``t = 1``).

Corrections to the seed (notes 000 section 1.0): the prox of ``-log x`` is
``(v + sqrt(v^2 + 4 t)) / 2`` (the seed prints ``4 v``); the conjugate of the logistic loss has no
closed-form prox, so :func:`prox_logistic_conj` runs a Newton iteration safeguarded by bisection
that keeps the iterate strictly inside ``(-1, 0)``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .errors import InputError

Step = Any  # a float, or an array of per-coordinate steps (the diagonally scaled prox)


def _nonneg(v: Any, field: str) -> None:
    if np.any(np.asarray(v) < 0) or not np.all(np.isfinite(np.asarray(v, dtype=float))):
        raise InputError(field, f"must be finite and >= 0; got {v!r}")


# ---------------------------------------------------------------- elementary operators


def soft_threshold(v: np.ndarray, t: Step) -> np.ndarray:
    """``prox_{t |.|_1}(v) = sign(v) (|v| - t)_+`` (seed 000 l.1130), ``t`` scalar or per coordinate."""
    return np.sign(v) * np.maximum(np.abs(v) - t, 0.0)


def block_soft_threshold(v: np.ndarray, t: float) -> np.ndarray:
    """``prox_{t |.|_2}(v) = (1 - t/|v|)_+ v`` (seed 000 l.1140)."""
    n = float(np.linalg.norm(v))
    return np.zeros_like(v) if n <= t else (1.0 - t / n) * v


def svt(V: np.ndarray, t: float) -> np.ndarray:
    """Singular value thresholding: ``prox_{t |.|_*}(V) = sum_i (s_i - t)_+ u_i v_i^T`` (seed 000 l.1160)."""
    U, s, Wt = np.linalg.svd(V, full_matrices=False)
    s = np.maximum(s - t, 0.0)
    k = int(np.count_nonzero(s))
    return (U[:, :k] * s[:k]) @ Wt[:k]


def prox_neg_log(v: np.ndarray, t: Step) -> np.ndarray:
    """``prox_{t (-log)}(v) = (v + sqrt(v^2 + 4 t)) / 2`` (seed 000 l.1122, corrected: ``4 t``, not ``4 v``)."""
    return 0.5 * (v + np.sqrt(v * v + 4.0 * np.asarray(t)))


# ---------------------------------------------------------------- regularisers and sets


@dataclass(frozen=True)
class _Weighted:
    """A regulariser ``lam r(x)``: ``lam`` and every other field finite and ``>= 0`` (checked once);
    ``strong_convexity`` is its modulus (0 unless the regulariser says otherwise)."""

    lam: float

    def __post_init__(self) -> None:
        for f in fields(self):
            _nonneg(getattr(self, f.name), f.name)

    @property
    def strong_convexity(self) -> float:
        return 0.0


@dataclass(frozen=True)
class L1(_Weighted):
    """``lam |x|_1``; its conjugate is the indicator of ``{|u|_inf <= lam}``."""

    def value(self, x: np.ndarray) -> float:
        return self.lam * float(np.abs(x).sum())

    def prox(self, v: np.ndarray, t: Step) -> np.ndarray:
        return soft_threshold(v, self.lam * np.asarray(t))

    def conj_value(self, u: np.ndarray) -> float:
        return 0.0 if float(np.max(np.abs(u), initial=0.0)) <= self.lam * (1 + 1e-12) else float("inf")

    def dual_scale(self, u: np.ndarray) -> float:
        """The largest ``s <= 1`` with ``s u`` in the conjugate's domain (for a feasible dual point)."""
        m = float(np.max(np.abs(u), initial=0.0))
        return 1.0 if m <= self.lam else self.lam / m


@dataclass(frozen=True)
class ElasticNet(_Weighted):
    """``lam (|x|_1 + (gamma/2) |x|^2)``; prox ``soft(v, lam t) / (1 + lam t gamma)`` (seed 000 l.1146)."""

    gamma: float

    @property
    def strong_convexity(self) -> float:
        return self.lam * self.gamma

    def value(self, x: np.ndarray) -> float:
        return self.lam * (float(np.abs(x).sum()) + 0.5 * self.gamma * float(np.sum(x * x)))

    def prox(self, v: np.ndarray, t: Step) -> np.ndarray:
        lt = self.lam * np.asarray(t)
        return soft_threshold(v, lt) / (1.0 + lt * self.gamma)

    def conj_value(self, u: np.ndarray) -> float:
        """``sum_i (|u_i| - lam)_+^2 / (2 lam gamma)`` (the l1 case when ``gamma = 0``)."""
        if self.gamma == 0:
            return L1(self.lam).conj_value(u)
        return float(np.sum(np.maximum(np.abs(u) - self.lam, 0.0) ** 2)) / (2 * self.lam * self.gamma)

    def dual_scale(self, u: np.ndarray) -> float:
        return L1(self.lam).dual_scale(u) if self.gamma == 0 else 1.0


@dataclass(frozen=True)
class SquaredL2(_Weighted):
    """``(lam/2) |x|^2`` (ridge); prox ``v / (1 + lam t)``; conjugate ``|u|^2 / (2 lam)``."""

    @property
    def strong_convexity(self) -> float:
        return self.lam

    def value(self, x: np.ndarray) -> float:
        return 0.5 * self.lam * float(np.sum(x * x))

    def prox(self, v: np.ndarray, t: Step) -> np.ndarray:
        return v / (1.0 + self.lam * np.asarray(t))

    def conj_value(self, u: np.ndarray) -> float:
        return float(np.sum(u * u)) / (2 * self.lam) if self.lam > 0 else (0.0 if not np.any(u) else float("inf"))

    def dual_scale(self, u: np.ndarray) -> float:
        return 1.0


class GroupL2:
    """``lam sum_g w_g |x_g|_2`` (group lasso, sum of norms): block soft-threshold per group (seed 000 l.1150).

    ``groups``: a list of index arrays partitioning the coordinates; ``weights`` default ``sqrt(|g|)``.
    """

    def __init__(self, lam: float, groups: list[np.ndarray], weights: np.ndarray | None = None) -> None:
        _nonneg(lam, "lam")
        self.lam = float(lam)
        self.groups = [np.asarray(g, dtype=np.int64) for g in groups]
        self.weights = np.sqrt([len(g) for g in self.groups]) if weights is None else np.asarray(weights, dtype=float)
        if len(self.weights) != len(self.groups):
            raise InputError("weights", f"needs one weight per group ({len(self.groups)}); got {len(self.weights)}")

    def value(self, x: np.ndarray) -> float:
        return self.lam * sum(w * float(np.linalg.norm(x[g])) for g, w in zip(self.groups, self.weights, strict=True))

    def prox(self, v: np.ndarray, t: float) -> np.ndarray:
        out = np.array(v, dtype=float, copy=True)
        for g, w in zip(self.groups, self.weights, strict=True):
            out[g] = block_soft_threshold(v[g], self.lam * w * float(t))
        return out


@dataclass(frozen=True)
class Nuclear(_Weighted):
    """``lam |X|_*`` on matrices; prox by singular value thresholding."""

    def value(self, X: np.ndarray) -> float:
        return self.lam * float(np.linalg.svd(X, compute_uv=False).sum())

    def prox(self, V: np.ndarray, t: float) -> np.ndarray:
        return svt(V, self.lam * float(t))


@dataclass(frozen=True)
class Box:
    """The indicator of ``{lo <= x <= hi}``: its prox is the projection (clipping), whatever the step."""

    lo: Any = -np.inf
    hi: Any = np.inf

    def __post_init__(self) -> None:
        if np.any(np.asarray(self.lo) > np.asarray(self.hi)):
            raise InputError("lo", "must be <= hi")

    def value(self, x: np.ndarray) -> float:
        return 0.0 if np.all((x >= self.lo) & (x <= self.hi)) else float("inf")

    def prox(self, v: np.ndarray, t: Step = 1.0) -> np.ndarray:
        return np.clip(v, self.lo, self.hi)


@dataclass(frozen=True)
class L2Ball:
    """The indicator of ``{|x|_2 <= radius}``: projection ``v min(1, r/|v|)`` (the conjugate of ``r |.|_2``)."""

    radius: float

    def __post_init__(self) -> None:
        _nonneg(self.radius, "radius")

    def value(self, x: np.ndarray) -> float:
        return 0.0 if float(np.linalg.norm(x)) <= self.radius * (1 + 1e-12) else float("inf")

    def prox(self, v: np.ndarray, t: Step = 1.0) -> np.ndarray:
        n = float(np.linalg.norm(v))
        return v if n <= self.radius else v * (self.radius / n)


class Quadratic:
    """``(1/2) x^T P x + q^T x + c`` (P symmetric PSD); prox ``(I + t P)^{-1} (v - t q)`` (seed 000 l.1116; seed 003 s.6 fixed).

    The Cholesky factor of ``I + t P`` is cached per step ``t`` (the solvers use one or two steps).
    """

    def __init__(self, P: np.ndarray, q: np.ndarray | None = None, c: float = 0.0) -> None:
        P = np.asarray(P, dtype=float)
        if P.ndim != 2 or P.shape[0] != P.shape[1]:
            raise InputError("P", f"must be a square matrix; got shape {P.shape}")
        self.P = P
        self.q = np.zeros(P.shape[0]) if q is None else np.asarray(q, dtype=float)
        self.c = float(c)
        self._factors: dict[float, Any] = {}

    def value(self, x: np.ndarray) -> float:
        return 0.5 * float(x @ self.P @ x) + float(self.q @ x) + self.c

    def prox(self, v: np.ndarray, t: float) -> np.ndarray:
        t = float(t)
        if t not in self._factors:
            self._factors[t] = cho_factor(np.eye(len(v)) + t * self.P)
        return cho_solve(self._factors[t], v - t * self.q)


class Equality:
    """The indicator of ``{z = b}``; conjugate ``<y, b>`` (the dual of a linear constraint, seed 000 Eq. 3.25)."""

    def __init__(self, b: np.ndarray) -> None:
        self.b = np.asarray(b, dtype=float)

    def value(self, z: np.ndarray) -> float:
        return 0.0 if np.array_equal(z, self.b) else float("inf")

    def residual(self, z: np.ndarray) -> float:
        """``|z - b|``: how far the constraint is from holding."""
        return float(np.linalg.norm(z - self.b))

    def prox(self, v: np.ndarray, t: Step = 1.0) -> np.ndarray:
        return self.b.copy()

    def conj_value(self, y: np.ndarray) -> float:
        return float(y @ self.b)

    def conj_prox(self, v: np.ndarray, s: Step) -> np.ndarray:
        return v - np.asarray(s) * self.b


class Separable:
    """``sum_j h_j(x_j)`` over consecutive blocks of a flat vector, block ``j`` reshaped to ``shapes[j]``.

    The prox acts block by block (RPCA's ``(1/2)|X_1|^2 + g2 |X_2|_1 + g3 |X_3|_*``, seed 000 Eq. 3.60).
    """

    def __init__(self, parts: list[Any], shapes: list[tuple[int, ...]]) -> None:
        if len(parts) != len(shapes):
            raise InputError("shapes", f"needs one shape per part ({len(parts)}); got {len(shapes)}")
        self.parts = list(parts)
        self.shapes = [tuple(sh) for sh in shapes]
        sizes = [int(np.prod(sh)) for sh in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.dim = int(self.offsets[-1])

    def block(self, x: np.ndarray, j: int) -> np.ndarray:
        return x[self.offsets[j] : self.offsets[j + 1]].reshape(self.shapes[j])

    def value(self, x: np.ndarray) -> float:
        return float(sum(h.value(self.block(x, j)) for j, h in enumerate(self.parts)))

    def prox(self, v: np.ndarray, t: float) -> np.ndarray:
        return np.concatenate([h.prox(self.block(v, j), t).ravel() for j, h in enumerate(self.parts)])


@dataclass(frozen=True)
class NegLog:
    """``-sum log x_i`` (domain ``x > 0``); prox by :func:`prox_neg_log`."""

    def value(self, x: np.ndarray) -> float:
        return -float(np.log(x).sum()) if np.all(x > 0) else float("inf")

    def prox(self, v: np.ndarray, t: Step) -> np.ndarray:
        return prox_neg_log(v, t)


# ---------------------------------------------------------------- losses and their conjugates (Table 3.1)


def prox_logistic_conj(v: np.ndarray, s: Step, *, tol: float = 1e-12, max_iter: int = 60) -> np.ndarray:
    """``prox_{s phi*}(v)`` for ``phi*(y) = -y log(-y) + (1 + y) log(1 + y)`` on ``(-1, 0)``.

    Solves ``log(1 + y) - log(-y) + (y - v)/s = 0`` (increasing in ``y``) by Newton's method inside a
    bisection bracket: a Newton step leaving the current bracket is replaced by its midpoint, so the
    iterate stays strictly inside ``(-1, 0)`` (seed 000 l.1498: "several steps of Newton's update").
    """
    v = np.asarray(v, dtype=float)
    s = np.broadcast_to(np.asarray(s, dtype=float), v.shape)
    # the representable open interval: the iterate never reaches -1 or 0 (where phi*' is infinite)
    lo = np.full(v.shape, np.nextafter(-1.0, 0.0))
    hi = np.full(v.shape, -np.finfo(float).tiny)
    y = np.full(v.shape, -0.5)
    for _ in range(max_iter):
        h = np.log1p(y) - np.log(-y) + (y - v) / s
        if np.all(h == 0):
            break
        lo = np.where(h < 0, y, lo)
        hi = np.where(h > 0, y, hi)
        dh = 1.0 / (1.0 + y) - 1.0 / y + 1.0 / s
        y_new = y - h / dh
        out = (y_new <= lo) | (y_new >= hi) | ~np.isfinite(y_new)
        y_new = np.clip(np.where(out, 0.5 * (lo + hi), y_new), lo, hi)
        done = np.abs(y_new - y) <= tol * np.maximum(1e-300, np.abs(y))
        y = y_new
        if np.all(done):
            break
    return y


class Loss:
    """A scalar loss ``phi(z)`` of the ERM form with its conjugate (seed 000 Table 3.1, l.1086-1098).

    ``kind``: ``"squared"`` ``(1/2)(z - b)^2`` (conjugate ``(1/2) y^2 + b y``, strongly convex with
    gamma = 1); ``"smooth_hinge"`` (smoothing ``gamma``) of the margin ``b z`` (conjugate
    ``b y + (gamma/2) y^2`` with ``b y in [-1, 0]``); ``"logistic"`` ``log(1 + exp(-b z))`` (conjugate
    ``-b y log(-b y) + (1 + b y) log(1 + b y)``, ``b y in (-1, 0)``, gamma = 4). ``b``: targets
    (squared) or +-1 labels, one per term; all operators act on the vector of terms.
    """

    KINDS = ("squared", "smooth_hinge", "logistic")

    def __init__(self, kind: str, b: np.ndarray, *, gamma: float = 1.0) -> None:
        if kind not in self.KINDS:
            raise InputError("loss", f"must be one of {self.KINDS}; got {kind!r}")
        self.kind = kind
        self.b = np.asarray(b, dtype=float)
        if kind != "squared" and not np.all(np.abs(self.b) == 1):
            raise InputError("b", f"the {kind} loss needs labels in {{-1, +1}}")
        _nonneg(gamma, "gamma")
        self.gamma = float(gamma)
        #: strong-convexity constant of the conjugate (the gamma of AdaSPDC's step rule)
        self.conj_strong_convexity = {"squared": 1.0, "smooth_hinge": self.gamma, "logistic": 4.0}[kind]
        #: upper bound on phi''
        self.curvature = {"squared": 1.0, "smooth_hinge": 1.0 / max(self.gamma, 1e-300), "logistic": 0.25}[kind]

    def value(self, z: np.ndarray) -> float:
        """``sum_i phi_i(z_i)``."""
        return float(self.values(z).sum())

    def conj_value(self, y: np.ndarray) -> float:
        """``sum_i phi_i*(y_i)`` (``inf`` outside the domain)."""
        return float(self.conj_values(y).sum())

    def values(self, z: np.ndarray) -> np.ndarray:
        if self.kind == "squared":
            return 0.5 * (z - self.b) ** 2
        m = self.b * z
        if self.kind == "logistic":
            return np.logaddexp(0.0, -m)
        g = self.gamma
        return np.where(m >= 1, 0.0, np.where(m <= 1 - g, 1 - m - g / 2, (1 - m) ** 2 / (2 * g)))

    def derivs(self, z: Any, idx: Any = None) -> Any:
        """``phi'(z)`` per term (of the terms ``idx``: an index or index array, when given)."""
        b = self.b if idx is None else self.b[idx]
        if self.kind == "squared":
            return z - b
        m = b * z
        if self.kind == "logistic":
            return -b * np.exp(-np.logaddexp(0.0, m))
        return -b * np.clip((1 - m) / self.gamma, 0.0, 1.0)

    def conj_values(self, y: np.ndarray) -> np.ndarray:
        if self.kind == "squared":
            return 0.5 * y * y + self.b * y
        u = self.b * y
        inside = (u >= -1 - 1e-12) & (u <= 1e-12)
        if self.kind == "smooth_hinge":
            val = u + 0.5 * self.gamma * u * u
        else:
            uc = np.clip(u, -1.0, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                val = np.where(uc < 0, -uc * np.log(-uc), 0.0) + np.where(uc > -1, (1 + uc) * np.log1p(uc), 0.0)
        return np.where(inside, val, np.inf)

    def conj_prox(self, v: np.ndarray, s: Step, idx: np.ndarray | None = None) -> np.ndarray:
        """``prox_{s phi_i*}(v_i)`` for every term, or for the terms ``idx`` (``s`` scalar or per term)."""
        s = np.asarray(s, dtype=float)
        b = self.b if idx is None else self.b[idx]
        if self.kind == "squared":
            return (v - s * b) / (1.0 + s)
        # with b = +-1, phi_i*(y) = psi*(b y) and prox_{s phi_i*}(v) = b prox_{s psi*}(b v)
        w = b * v
        if self.kind == "smooth_hinge":
            u = np.clip((w - s) / (1.0 + s * self.gamma), -1.0, 0.0)
        else:
            u = prox_logistic_conj(w, s)
        return b * u
