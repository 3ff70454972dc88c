"""Reverse-mode automatic differentiation small enough to read: a tape over NumPy operations
(seed 003 §6, "Automatic differentiation": the forward pass records each operation, the backward
pass walks the record in reverse and applies the chain rule, Examples 3-4 of the section).

Why here: a gradient is a solver-level tool, not a sampling one. ``solvers`` is the lowest package,
so the samplers (their models' gradients), the solvers' problems and every package above can use
it, and none has to import a package to its left.

How it works. :class:`Tape` is a list of nodes; a :class:`Var` is a value and its node's index on
one tape. Each primitive (``+ - * / ** @``, indexing, ``reshape``, ``swapaxes``, :func:`sum`,
:func:`exp`, :func:`log`, :func:`softplus`, :func:`log_sigmoid`, :func:`logsumexp`) computes its
NumPy value and, when an operand is a :class:`Var`, pushes a node holding, for each such operand,
its index and its vector-Jacobian product (the map from the output's cotangent to the operand's,
NumPy broadcasting undone by summing). :meth:`Tape.backward` seeds the output's cotangent and
accumulates cotangents from the last node to the first: one reverse sweep costs a small multiple of
the forward pass, whatever the number of inputs.

The primitives accept plain arrays too and then return plain arrays, so a log density written once
with them gives its value (called on an array) and its gradient (:func:`value_and_grad`).

Per-example gradients (an ``(n, D)`` matrix, what CCAdL's covariance needs) take one reverse sweep,
not n: :func:`per_example_grads` gives the function one copy of ``theta`` per example, as the rows
of an ``(n, D)`` variable, and differentiates the sum of its ``n`` outputs. This is exact when
output ``i`` reads only row ``i`` (the caller's promise: every NumPy broadcast over a leading
example axis keeps it).

The seed's worked example: ``f = (x + y) z`` at ``(-2, 5, -4)``::

    >>> value_and_grad(lambda v: (v[0] + v[1]) * v[2], np.array([-2.0, 5.0, -4.0]))
    (-12.0, array([-4., -4.,  3.]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import expit

from .errors import InputError

Vjp = Callable[[np.ndarray], np.ndarray]


class Tape:
    """The record of one forward pass: node ``k`` lists ``(parent index, vjp)`` pairs."""

    def __init__(self) -> None:
        self.nodes: list[list[tuple[int, Vjp]]] = []

    def push(self, value: np.ndarray, parents: list[tuple[int, Vjp]]) -> Var:
        self.nodes.append(parents)
        return Var(value, self, len(self.nodes) - 1)

    def variable(self, x: Any) -> Var:
        """A new input of the tape (a node without parents)."""
        return self.push(np.array(x, dtype=float), [])

    def backward(self, out: Var, seed: np.ndarray) -> list[np.ndarray | None]:
        """Cotangents of every node given ``seed``, the cotangent of ``out`` (the chain rule, applied
        from the last node to the first); ``None`` for nodes ``out`` does not depend on."""
        cot: list[np.ndarray | None] = [None] * len(self.nodes)
        cot[out.index] = np.broadcast_to(np.asarray(seed, dtype=float), out.value.shape)
        for k in range(out.index, -1, -1):
            g = cot[k]
            if g is None:
                continue
            for parent, vjp in self.nodes[k]:
                d = vjp(g)
                prev = cot[parent]
                cot[parent] = d if prev is None else prev + d
        return cot


class Var:
    """A value recorded on a tape. Supports the arithmetic operators (with broadcasting), ``@``,
    indexing, ``reshape``, ``swapaxes``, ``sum``, ``shape`` and ``ndim``."""

    __slots__ = ("value", "tape", "index")
    __array_priority__ = 100.0  # ``ndarray op Var`` defers to Var's reflected operator

    def __init__(self, value: np.ndarray, tape: Tape, index: int) -> None:
        self.value, self.tape, self.index = value, tape, index

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def ndim(self) -> int:
        return self.value.ndim

    def __repr__(self) -> str:
        return f"Var({self.value!r})"

    def __add__(self, other: Any) -> Any:
        return add(self, other)

    def __radd__(self, other: Any) -> Any:
        return add(other, self)

    def __sub__(self, other: Any) -> Any:
        return add(self, negative(other))

    def __rsub__(self, other: Any) -> Any:
        return add(other, negative(self))

    def __neg__(self) -> Any:
        return negative(self)

    def __mul__(self, other: Any) -> Any:
        return multiply(self, other)

    def __rmul__(self, other: Any) -> Any:
        return multiply(other, self)

    def __truediv__(self, other: Any) -> Any:
        return multiply(self, power(other, -1.0))

    def __rtruediv__(self, other: Any) -> Any:
        return multiply(other, power(self, -1.0))

    def __pow__(self, k: float) -> Any:
        return power(self, k)

    def __matmul__(self, other: Any) -> Any:
        return matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return matmul(other, self)

    def __getitem__(self, index: Any) -> Any:
        return getitem(self, index)

    def reshape(self, *shape: Any) -> Any:
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def swapaxes(self, a: int, b: int) -> Any:
        return swapaxes(self, a, b)

    def sum(self, axis: Any = None, keepdims: bool = False) -> Any:
        return sum(self, axis, keepdims)


def _value(x: Any) -> np.ndarray:
    return x.value if isinstance(x, Var) else np.asarray(x, dtype=float)


def _node(value: np.ndarray, *operands: tuple[Any, Vjp]) -> Any:
    """``value`` as a new node whose parents are the :class:`Var` operands, or the plain array."""
    parents = [(x, vjp) for x, vjp in operands if isinstance(x, Var)]
    if not parents:
        return value
    tape = parents[0][0].tape
    if any(x.tape is not tape for x, _ in parents):
        raise InputError("operands", "variables of different tapes cannot be combined")
    return tape.push(value, [(x.index, vjp) for x, vjp in parents])


def _unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``g`` down to ``shape``: the adjoint of NumPy's broadcasting."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for ax, s in enumerate(shape):
        if s == 1 and g.shape[ax] != 1:
            g = g.sum(axis=ax, keepdims=True)
    return g


# the primitives
def add(a: Any, b: Any) -> Any:
    av, bv = _value(a), _value(b)
    return _node(av + bv, (a, lambda g: _unbroadcast(g, av.shape)), (b, lambda g: _unbroadcast(g, bv.shape)))


def negative(a: Any) -> Any:
    return _node(-_value(a), (a, lambda g: -g))


def multiply(a: Any, b: Any) -> Any:
    av, bv = _value(a), _value(b)
    return _node(av * bv, (a, lambda g: _unbroadcast(g * bv, av.shape)), (b, lambda g: _unbroadcast(g * av, bv.shape)))


def power(a: Any, k: float) -> Any:
    """``a ** k`` for a constant exponent ``k``."""
    av = _value(a)
    return _node(av**k, (a, lambda g: g * k * av ** (k - 1)))


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` with NumPy's stacking and broadcasting; a 1-D operand is a row (left) or a column
    (right), as in NumPy."""
    if _value(b).ndim == 1:
        return reshape(matmul(a, reshape(b, (-1, 1))), _value(a).shape[:-1])
    if _value(a).ndim == 1:
        out = matmul(reshape(a, (1, -1)), b)
        return reshape(out, _value(out).shape[:-2] + _value(out).shape[-1:])
    av, bv = _value(a), _value(b)
    return _node(
        av @ bv,
        (a, lambda g: _unbroadcast(g @ np.swapaxes(bv, -1, -2), av.shape)),
        (b, lambda g: _unbroadcast(np.swapaxes(av, -1, -2) @ g, bv.shape)),
    )


def getitem(a: Any, index: Any) -> Any:
    """``a[index]`` (slices, integers, integer arrays); repeated indices accumulate."""
    av = _value(a)

    def vjp(g: np.ndarray) -> np.ndarray:
        z = np.zeros_like(av)
        np.add.at(z, index, g)
        return z

    return _node(av[index], (a, vjp))


def reshape(a: Any, shape: Any) -> Any:
    av = _value(a)
    return _node(av.reshape(shape), (a, lambda g: g.reshape(av.shape)))


def swapaxes(a: Any, i: int, j: int) -> Any:
    return _node(np.swapaxes(_value(a), i, j), (a, lambda g: np.swapaxes(g, i, j)))


def _restore(g: np.ndarray, shape: tuple[int, ...], axis: Any, keepdims: bool) -> np.ndarray:
    """Broadcast a reduction's cotangent ``g`` back to the input ``shape``."""
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, shape)


def sum(a: Any, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A001 (NumPy's name)
    av = _value(a)
    return _node(av.sum(axis=axis, keepdims=keepdims), (a, lambda g: _restore(g, av.shape, axis, keepdims)))


def exp(a: Any) -> Any:
    e = np.exp(_value(a))
    return _node(e, (a, lambda g: g * e))


def log(a: Any) -> Any:
    av = _value(a)
    return _node(np.log(av), (a, lambda g: g / av))


def softplus(a: Any) -> Any:
    """``log(1 + e^a)``, stably; its derivative is the sigmoid."""
    av = _value(a)
    return _node(np.logaddexp(0.0, av), (a, lambda g: g * expit(av)))


def log_sigmoid(a: Any) -> Any:
    """``log sigmoid(a) = -softplus(-a)``."""
    return negative(softplus(negative(a)))


def logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``log sum exp(a)`` over ``axis``, stably; its derivative is the softmax."""
    av = _value(a)
    m = np.max(av, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    lse = np.log(np.sum(np.exp(av - m), axis=axis, keepdims=True)) + m
    out = lse if keepdims else np.squeeze(lse, axis=axis)
    soft = np.exp(av - lse)
    return _node(out, (a, lambda g: _restore(g, av.shape, axis, keepdims) * soft))


# the entry points
def backward(f: Callable[[Var], Any], x: Any, seed: Any = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(f(x), seed^T J_f(x))``: the value and the vector-Jacobian product by one reverse sweep.
    ``seed`` has ``f(x)``'s shape (a scalar broadcasts)."""
    tape = Tape()
    v = tape.variable(x)
    out = f(v)
    if not isinstance(out, Var):  # f does not depend on x
        return np.asarray(out, dtype=float), np.zeros_like(v.value)
    g = tape.backward(out, seed)[v.index]
    return out.value, np.zeros_like(v.value) if g is None else np.array(g)


def value_and_grad(f: Callable[[Var], Any], x: Any) -> tuple[float, np.ndarray]:
    """``(f(x), grad f(x))`` for a scalar-valued ``f``."""
    value, g = backward(f, x)
    if value.size != 1:
        raise InputError("f", f"must return a scalar to take its gradient; got shape {value.shape}")
    return float(value), g


def grad(f: Callable[[Var], Any]) -> Callable[[Any], np.ndarray]:
    """The gradient function of a scalar-valued ``f``."""
    return lambda x: value_and_grad(f, x)[1]


def per_example_grads(f: Callable[[Var], Any], theta: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values, G)``: ``f`` maps an ``(n, D)`` array of parameter rows to ``n`` values, the
    ``i``-th reading only row ``i``; with every row equal to ``theta``, ``G[i] = grad_theta f_i``
    (an ``(n, D)`` matrix) by one reverse sweep of ``sum_i f_i``."""
    rows = np.broadcast_to(np.asarray(theta, dtype=float), (n, np.size(theta)))
    values, G = backward(f, rows)
    if values.shape != (n,):
        raise InputError("f", f"must return one value per example, shape ({n},); got {values.shape}")
    return values, G
