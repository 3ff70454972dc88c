"""Bipartite worker graphs for consensus ADMM (seed 002, ch. V §5.3, Fig. 35; the topologies of §5.6.1).

A :class:`WorkerGraph` is the communication graph ``B = (V_L, V_R, C)`` of Alg. 9: ``n_nodes``
workers numbered ``0..n_nodes-1``, a left side and a right side, and edges ``(p, n)`` with ``p`` on
the left and ``n`` on the right. Each edge carries the constraint ``x_p = y_n`` and one multiplier
``lambda_pn``; in matrix form ``A x + B y = 0`` has one ``I`` (in ``A``) and one ``-I`` (in ``B``)
per D-row block (Fig. 35).

:func:`WorkerGraph.from_edges` two-colours the graph itself, so any connected bipartite edge list is
accepted; an odd cycle (the seed's "ring + longest chord" on 24 nodes, note 002 §7.8) or a
disconnected graph is an :class:`~solvers.errors.InputError` naming the argument.

Generators (24 workers in the seed's experiments, L2423-2430): :func:`complete_bipartite`,
:func:`master_slave`, :func:`biregular` ((3,3)-biregular), :func:`bucky_tree` (a spanning tree
taken from the buckyball, Fig. 37), :func:`ring`, :func:`ring_with_chord`, :func:`chain`;
:func:`topology` builds any of them by name.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import product

import numpy as np

from solvers.errors import InputError

__all__ = [
    "WorkerGraph",
    "TOPOLOGIES",
    "topology",
    "complete_bipartite",
    "master_slave",
    "biregular",
    "bucky_tree",
    "ring",
    "ring_with_chord",
    "chain",
]


@dataclass(frozen=True)
class WorkerGraph:
    """A connected bipartite worker graph: ``left``, ``right`` (sorted node ids) and ``edges``
    (``(p, n)`` pairs, ``p`` on the left, ``n`` on the right, in a fixed order that indexes the
    multipliers). Build it with :meth:`from_edges`, which checks it."""

    n_nodes: int
    left: tuple[int, ...]
    right: tuple[int, ...]
    edges: tuple[tuple[int, int], ...]
    name: str = "graph"

    @classmethod
    def from_edges(
        cls, n_nodes: int, edges: object, *, left: object = None, name: str = "graph", field: str = "edges"
    ) -> WorkerGraph:
        """Check and orient an undirected edge list.

        ``left``: optional node ids of the left side (then every edge must cross the sides);
        without it the sides are the two colours of a breadth-first two-colouring from node 0.
        Raises :class:`InputError` naming ``field`` when an edge is malformed or a self-loop, the
        graph is disconnected, or it has an odd cycle (not bipartite).
        """
        if not (isinstance(n_nodes, (int, np.integer)) and n_nodes >= 2):
            raise InputError("n_nodes", f"must be an integer >= 2; got {n_nodes!r}")
        n = int(n_nodes)
        try:
            E = [(int(a), int(b)) for a, b in edges]  # type: ignore[attr-defined]
        except (TypeError, ValueError) as exc:
            raise InputError(field, "must be a list of (node, node) pairs") from exc
        adj: list[set[int]] = [set() for _ in range(n)]
        for i, (a, b) in enumerate(E):
            if not (0 <= a < n and 0 <= b < n):
                raise InputError(field, f"edge {i} = ({a}, {b}) names a node outside 0..{n - 1}", index=i)
            if a == b:
                raise InputError(field, f"edge {i} is a self-loop at node {a}", index=i)
            adj[a].add(b)
            adj[b].add(a)
        colour = [-1] * n
        colour[0] = 0
        queue = deque([0])
        while queue:
            u = queue.popleft()
            for v in sorted(adj[u]):
                if colour[v] < 0:
                    colour[v] = 1 - colour[u]
                    queue.append(v)
                elif colour[v] == colour[u]:
                    raise InputError(
                        field,
                        f"the graph is not bipartite: edge ({u}, {v}) closes an odd cycle (Alg. 9 needs two "
                        "sides with every edge between them; a ring of even length stays bipartite only "
                        "with chords of odd length)",
                        code="not_bipartite",
                    )
        lost = [v for v in range(n) if colour[v] < 0]
        if lost:
            raise InputError(
                field,
                f"the graph is disconnected: {len(lost)} node(s) unreachable from node 0 (first: {lost[0]}); "
                "consensus needs a connected graph",
                code="disconnected",
            )
        if left is not None:
            L = {int(v) for v in left}  # type: ignore[attr-defined]
            for a, b in E:
                if (a in L) == (b in L):
                    raise InputError("left", f"edge ({a}, {b}) does not cross the given sides", code="not_bipartite")
        else:
            L = {v for v in range(n) if colour[v] == 0}
        oriented = sorted({(a, b) if a in L else (b, a) for a, b in E})
        return cls(
            n_nodes=n,
            left=tuple(sorted(L)),
            right=tuple(v for v in range(n) if v not in L),
            edges=tuple(oriented),
            name=name,
        )

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    def neighbours(self, node: int) -> tuple[int, ...]:
        """The nodes joined to ``node`` (the other side), in edge order."""
        return tuple(n if p == node else p for p, n in self.edges if node in (p, n))

    def edge_ids(self, node: int) -> tuple[int, ...]:
        """Indices into :attr:`edges` of the edges at ``node``."""
        return tuple(i for i, e in enumerate(self.edges) if node in e)

    def degree(self, node: int) -> int:
        return len(self.edge_ids(node))

    def max_right_degree(self) -> int:
        """Prop. 4: ``Lambda_max(B^T B) = Lambda_max(B B^T)`` = the largest degree of a right node."""
        return max(self.degree(v) for v in self.right)


# -- the topologies of E6 ------------------------------------------------------------------------


def complete_bipartite(n_left: int = 12, n_right: int = 12) -> WorkerGraph:
    """Every left node joined to every right node ((12,12)-biregular on 24 workers, 144 edges)."""
    L = range(n_left)
    R = range(n_left, n_left + n_right)
    return WorkerGraph.from_edges(n_left + n_right, product(L, R), left=L, name="complete bipartite")


def master_slave(n_nodes: int = 24) -> WorkerGraph:
    """Node 0 (the master, left) joined to the ``n_nodes - 1`` slaves (right): 1 + 23, 23 edges."""
    return WorkerGraph.from_edges(n_nodes, [(0, v) for v in range(1, n_nodes)], left=[0], name="master-slave")


def biregular(n_side: int = 12, degree: int = 3) -> WorkerGraph:
    """A (d,d)-biregular graph on ``n_side + n_side`` nodes: left ``i`` joined to right ``i + j^2 mod
    n_side`` for ``j = 0..d-1`` (offsets 0, 1, 4 for d = 3; consecutive offsets when those coincide; the seed does not say which graph it used)."""
    if not 1 <= degree <= n_side:
        raise InputError("degree", f"must be in 1..{n_side}; got {degree}")
    offsets = sorted({j * j % n_side for j in range(degree)})
    if len(offsets) != degree:  # small sides: consecutive offsets
        offsets = list(range(degree))
    edges = [(i, n_side + (i + o) % n_side) for i in range(n_side) for o in offsets]
    return WorkerGraph.from_edges(2 * n_side, edges, left=range(n_side), name=f"({degree},{degree})-biregular")


def _buckyball() -> list[set[int]]:
    """The truncated icosahedron (60 vertices, 90 edges, 3-regular): even permutations of
    ``(0, ±1, ±3φ)``, ``(±1, ±(2+φ), ±2φ)``, ``(±φ, ±2, ±(2φ+1))``; edges join vertices at distance 2."""
    phi = (1 + 5**0.5) / 2
    pts: set[tuple[float, ...]] = set()
    for base in ((0.0, 1.0, 3 * phi), (1.0, 2 + phi, 2 * phi), (phi, 2.0, 2 * phi + 1)):
        for signs in product((1.0, -1.0), repeat=3):
            v = tuple(s * b for s, b in zip(signs, base))
            for shift in range(3):  # the cyclic (even) permutations
                pts.add(tuple(round(v[(i + shift) % 3], 9) + 0.0 for i in range(3)))
    P = np.array(sorted(pts))
    dist = np.linalg.norm(P[:, None, :] - P[None, :, :], axis=2)
    adj = [set(np.flatnonzero(np.abs(row - 2.0) < 1e-6).tolist()) for row in dist]
    assert len(P) == 60 and all(len(a) == 3 for a in adj), "buckyball construction"
    return adj


def bucky_tree(n_nodes: int = 24) -> WorkerGraph:
    """A spanning tree on ``n_nodes`` vertices taken from the buckyball (Fig. 37): the breadth-first
    tree from vertex 0 of the truncated icosahedron, cut at its first ``n_nodes`` vertices (maximum
    degree 3, as the seed's; Fig. 37 itself is lost in the text, so the exact tree may differ)."""
    adj = _buckyball()
    order, parent = [0], {0: -1}
    queue = deque([0])
    while queue and len(order) < n_nodes:
        u = queue.popleft()
        for v in sorted(adj[u]):
            if v not in parent and len(order) < n_nodes:
                parent[v] = u
                order.append(v)
                queue.append(v)
    ids = {v: i for i, v in enumerate(order)}
    return WorkerGraph.from_edges(n_nodes, [(ids[parent[v]], ids[v]) for v in order[1:]], name="bucky tree")


def ring(n_nodes: int = 24) -> WorkerGraph:
    """The ring ``0-1-...-(n-1)-0`` ((2,2)-biregular; ``n_nodes`` must be even to be bipartite)."""
    return WorkerGraph.from_edges(
        n_nodes, [(i, (i + 1) % n_nodes) for i in range(n_nodes)], name="ring", field="n_nodes"
    )


def ring_with_chord(n_nodes: int = 24, chord: tuple[int, int] | None = None) -> WorkerGraph:
    """The ring plus one chord ("Ring+1edge", not biregular).

    The seed adds "the longest chord", ``(0, n/2)``; on a ring split alternately into the two sides
    that chord joins two nodes of the same side when ``n/2`` is even (24 workers: distance 12), which
    breaks the bipartition (note 002 §7.8): passing ``chord=(0, 12)`` raises :class:`InputError`.
    The default is the longest chord that keeps the graph bipartite: ``(0, d)`` with ``d`` the largest
    odd number ``<= n/2`` (``(0, 11)`` on 24 nodes).
    """
    if chord is None:
        d = n_nodes // 2 if (n_nodes // 2) % 2 == 1 else n_nodes // 2 - 1
        chord = (0, d)
    edges = [(i, (i + 1) % n_nodes) for i in range(n_nodes)] + [tuple(chord)]
    return WorkerGraph.from_edges(n_nodes, edges, name=f"ring + chord {tuple(chord)}", field="chord")


def chain(n_nodes: int = 24) -> WorkerGraph:
    """The path ``0-1-...-(n-1)``: the spanning tree of largest diameter."""
    return WorkerGraph.from_edges(n_nodes, [(i, i + 1) for i in range(n_nodes - 1)], name="chain")


TOPOLOGIES = ("complete_bipartite", "master_slave", "biregular", "bucky_tree", "ring", "ring_with_chord", "chain")
"""The seven topologies of E6 (seed 002 §5.6.1), in the seed's order."""


def topology(name: str, n_nodes: int = 24) -> WorkerGraph:
    """One of :data:`TOPOLOGIES` on ``n_nodes`` workers (an even number; the bipartite ones split it in halves)."""
    if name not in TOPOLOGIES:
        raise InputError("topology", f"must be one of {list(TOPOLOGIES)}; got {name!r}")
    if name == "complete_bipartite":
        return complete_bipartite(n_nodes // 2, n_nodes - n_nodes // 2)
    if name == "biregular":
        return biregular(n_nodes // 2, 3)
    build = {"master_slave": master_slave, "bucky_tree": bucky_tree, "ring": ring, "ring_with_chord": ring_with_chord}
    return build.get(name, chain)(n_nodes)
