"""Worker graphs of seed 002 §5.6.1: sizes, bipartition, and the bad graphs (note 002 §7.8)."""

import numpy as np
import pytest

from cluster import graphs as g
from solvers.errors import InputError

# (left, right, edges, largest right degree) on 24 workers; the edge counts of the note's E6 table
EXPECTED = {
    "complete_bipartite": (12, 12, 144, 12),
    "master_slave": (1, 23, 23, 1),
    "biregular": (12, 12, 36, 3),
    "ring": (12, 12, 24, 2),
    "ring_with_chord": (12, 12, 25, 3),
    "chain": (12, 12, 23, 2),
}


@pytest.mark.parametrize("name", g.TOPOLOGIES)
def test_topologies_are_connected_bipartite_with_the_seeds_sizes(name):
    G = g.topology(name, 24)
    assert G.n_nodes == 24 and set(G.left) | set(G.right) == set(range(24)) and not set(G.left) & set(G.right)
    left = set(G.left)
    assert all(p in left and n not in left for p, n in G.edges)
    assert len(set(G.edges)) == G.n_edges
    if name in EXPECTED:
        assert (len(G.left), len(G.right), G.n_edges, G.max_right_degree()) == EXPECTED[name]
    # Prop. 4: Lambda_max(B^T B) = Lambda_max(B B^T) = the largest right degree (B: one -1 per edge row)
    B = np.zeros((G.n_edges, len(G.right)))
    col = {n: j for j, n in enumerate(G.right)}
    for e, (_, n) in enumerate(G.edges):
        B[e, col[n]] = -1.0
    assert np.linalg.eigvalsh(B.T @ B)[-1] == pytest.approx(G.max_right_degree())
    assert np.linalg.eigvalsh(B @ B.T)[-1] == pytest.approx(G.max_right_degree())


def test_biregular_degrees_and_trees():
    G = g.biregular(12, 3)
    assert {G.degree(v) for v in range(24)} == {3}
    for T in (g.bucky_tree(24), g.chain(24)):
        assert T.n_edges == 23  # connected with n - 1 edges: a spanning tree
    assert max(g.bucky_tree(24).degree(v) for v in range(24)) == 3  # the buckyball is 3-regular


def test_the_seeds_longest_chord_breaks_the_bipartition():
    with pytest.raises(InputError) as e:
        g.ring_with_chord(24, chord=(0, 12))
    assert e.value.field == "chord" and e.value.code == "not_bipartite"
    assert (0, 11) in g.ring_with_chord(24).edges  # the default: the longest chord that keeps it bipartite


def test_bad_graphs_name_the_argument():
    with pytest.raises(InputError) as e:
        g.WorkerGraph.from_edges(5, [(0, 1), (1, 2), (2, 0), (3, 4), (0, 3)])
    assert e.value.field == "edges" and e.value.code == "not_bipartite"
    with pytest.raises(InputError) as e:
        g.WorkerGraph.from_edges(4, [(0, 1), (2, 3)])
    assert e.value.code == "disconnected"
    with pytest.raises(InputError) as e:
        g.ring(25)
    assert e.value.field == "n_nodes"
    with pytest.raises(InputError) as e:
        g.WorkerGraph.from_edges(3, [(0, 1), (1, 2)], left=[0, 1])
    assert e.value.field == "left"
    with pytest.raises(InputError):
        g.WorkerGraph.from_edges(3, [(0, 3)])
    with pytest.raises(InputError):
        g.topology("star")
