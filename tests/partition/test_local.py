"""segapp.partition.local: the local move of an edit against hand-made graphs."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components

from segapp.partition.local import local_move


def path_laplacian(n: int) -> sp.csr_matrix:
    W = sp.diags([np.ones(n - 1), np.ones(n - 1)], [1, -1], shape=(n, n))
    return (sp.diags(np.asarray(W.sum(1)).ravel()) - W).tocsr()


def test_only_the_changed_run_that_touches_a_contradicting_stroke_moves():
    """A path of 10: the new answer changes two runs; only the one holding the contradicting
    stroke pixel (vertex 1) is taken, the far run (7–8) keeps the previous labels."""
    L = path_laplacian(10)
    previous = np.zeros(10, np.int64)
    new = np.array([1, 1, 1, 0, 0, 0, 0, 1, 1, 0])
    stroke = np.zeros(10, bool)
    stroke[1] = True
    np.testing.assert_array_equal(local_move(previous, new, stroke, L),
                                  [1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
    stroke[:] = False
    stroke[4] = True     # no changed neighbour (3 and 5 unchanged): nothing moves
    np.testing.assert_array_equal(local_move(previous, new, stroke, L), previous)
    stroke[:] = False
    stroke[3] = True     # adjacent to the run 0–2: that run moves
    np.testing.assert_array_equal(local_move(previous, new, stroke, L),
                                  [1, 1, 1, 0, 0, 0, 0, 0, 0, 0])


def test_without_a_contradicting_stroke_the_previous_answer_stands():
    L = path_laplacian(6)
    previous = np.array([0, 0, 1, 1, 2, 2])
    new = np.array([0, 1, 1, 2, 2, 2])
    out = local_move(previous, new, np.zeros(6, bool), L)
    np.testing.assert_array_equal(out, previous)
    assert out is not previous


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), k=st.integers(2, 4))
def test_local_move_is_the_brute_force_component_rule(seed, n, k):
    """On random graphs: a vertex takes the new label iff it changed and its component in the
    subgraph induced by (changed ∪ contradicting) holds a contradicting vertex."""
    rng = np.random.default_rng(seed)
    W = sp.random(n, n, density=0.15, random_state=seed)
    W = sp.triu(W, 1)
    W = (W + W.T).tocsr()
    L = (sp.diags(np.asarray(W.sum(1)).ravel()) - W).tocsr()
    previous = rng.integers(0, k, n)
    new = np.where(rng.random(n) < 0.4, rng.integers(0, k, n), previous)
    stroke = rng.random(n) < 0.1
    out = local_move(previous, new, stroke, L)
    nodes = np.flatnonzero((new != previous) | stroke)
    expected = previous.copy()
    if nodes.size:
        _, comp = connected_components(W[nodes][:, nodes], directed=False)
        for i, v in enumerate(nodes):
            if new[v] != previous[v] and stroke[nodes[comp == comp[i]]].any():
                expected[v] = new[v]
    np.testing.assert_array_equal(out, expected)
