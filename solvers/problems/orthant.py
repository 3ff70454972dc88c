"""A problem on the simplex (times a box) as a problem on a box: ``w = v / Σ v`` with ``0 <= v <= 1``.

When the objective depends on weights ``w`` in the simplex, ``F(w, u)`` (``u`` in a box), the
function ``G(v, u) = F(v / Σv, u)`` on ``v`` in ``[0, 1]^m`` has the same values, and its KKT points
are the simplex problem's: ``G`` is constant along rays, so ``∇_v G = (∇_w F - <w, ∇_w F>) / Σv`` is
orthogonal to ``v``; a box KKT point has ``∇_v G_j = 0`` where ``0 < v_j < 1``, ``>= 0`` at ``v_j = 0``
and ``<= 0`` at ``v_j = 1``, and since ``Σ v_j ∇_v G_j = 0`` the last are zero too. So ``∇_w F_j``
equals ``<w, ∇_w F>`` on the support and is no smaller off it: the simplex's KKT conditions (a zero
Frank-Wolfe gap). The upper bound 1 costs nothing (every ray meets the box) and keeps the iterates
bounded along the flat radial direction.

This lets a box solver with a curvature model (:func:`solvers.methods.lbfgsb.lbfgsb`) solve a
product of a simplex and a badly scaled box, which one projected-gradient step length cannot.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError


class SimplexAsOrthant:
    """``inner`` (variable ``[w (m, on the simplex), u]``, ``u`` in ``rest_bounds``) as a problem on a box.

    ``inner`` needs ``value_and_grad`` (and ``dim``); ``to_inner(z)`` maps this problem's point to
    the inner one's (``w = v / Σv``), ``from_inner(x)`` a point of the inner problem to this one."""

    constraint = "box"

    def __init__(self, inner: Any, m: int, rest_bounds: tuple[np.ndarray, np.ndarray]) -> None:
        self.inner = inner
        self.m = int(m)
        self.dim = int(inner.dim)
        lo, hi = (np.asarray(b, dtype=np.float64).reshape(-1) for b in rest_bounds)
        if lo.size != self.dim - self.m or hi.size != self.dim - self.m:
            raise InputError(
                "rest_bounds", f"need {self.dim - self.m} lower and upper bounds; got {lo.size}, {hi.size}"
            )
        self.bounds = (np.concatenate([np.zeros(self.m), lo]), np.concatenate([np.ones(self.m), hi]))
        self.n_terms = getattr(inner, "n_terms", None)

    def to_inner(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        v = z[: self.m]
        return np.concatenate([v / v.sum(), z[self.m :]])

    def from_inner(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        w = np.maximum(x[: self.m], 0.0)
        return np.concatenate([w / w.max(), x[self.m :]])

    def x0(self) -> np.ndarray:
        return self.from_inner(self.inner.x0())

    def project(self, z: np.ndarray) -> np.ndarray:
        return np.clip(z, *self.bounds)

    @property
    def hessian(self) -> Any:
        """``hessian(z, free=None)`` when the inner problem offers ``hessian(x, free=...)``; else ``None``.

        With ``T = ∂x/∂z`` (``∂w/∂v = (I - w 1ᵀ)/Σv``, the identity on ``u``) it is ``Tᵀ B T`` (``B`` the
        inner model at ``x``; the term of the map's second derivative is dropped: it is ``<∇_w F, w>``
        times a rank-two matrix, zero along the simplex at a KKT point) plus ``ρ v vᵀ/|v|²`` along the ray,
        where ``G`` is flat (``ρ`` the mean of the free ``v`` diagonal): a model positive definite where
        ``B`` is on the simplex's tangent space. ``free`` is passed on (the weights' coordinates as they
        are); the inner model is read on those rows and on the weights of the support."""
        inner = getattr(self.inner, "hessian", None)
        if inner is None:
            return None

        def hess(z: np.ndarray, *, free: np.ndarray | None = None) -> np.ndarray:
            z = np.asarray(z, dtype=np.float64)
            m = self.m
            B = np.array(inner(self.to_inner(z), free=free), dtype=np.float64)
            v = z[:m]
            s = float(v.sum())
            w = v / s
            Bw = B[:m, :m]
            bw = Bw @ w
            wbw = float(w @ bw)
            # Tᵀ B T on the weights block, T = (I - w 1ᵀ)/s
            B[:m, :m] = (Bw - bw[:, None] - bw[None, :] + wbw) / s**2
            cross = (B[:m, m:] - w @ B[:m, m:]) / s
            B[:m, m:] = cross
            B[m:, :m] = cross.T
            mask = np.ones(m, dtype=bool) if free is None else np.asarray(free, dtype=bool)[:m]
            rho = float(np.mean(np.diag(B)[:m][mask])) if mask.any() else 1.0
            B[:m, :m] += max(rho, 0.0) * np.outer(v, v) / float(v @ v)
            return B

        return hess

    def value_and_grad(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        z = np.asarray(z, dtype=np.float64)
        v = z[: self.m]
        s = float(v.sum())
        if not s > 0 or np.any(v < 0):
            return np.inf, np.zeros_like(z)
        f, g = self.inner.value_and_grad(self.to_inner(z))
        g = np.array(g, dtype=np.float64, copy=True)
        gw = g[: self.m]
        g[: self.m] = (gw - float((v / s) @ gw)) / s
        return float(f), g

    def value(self, z: np.ndarray) -> float:
        v = np.asarray(z, dtype=np.float64)[: self.m]
        if not v.sum() > 0 or np.any(v < 0):
            return np.inf
        return float(self.inner.value(self.to_inner(z)))

    def grad(self, z: np.ndarray) -> np.ndarray:
        return self.value_and_grad(z)[1]
