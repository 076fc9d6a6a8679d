"""Refinement stability (issue 10, item 4): FAST-GE's objective, as benchmarks/drops.py uses it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from segapp.constraints import build_constraints
from segapp.partition import ratio_cut
from segapp.pencil import Pencil


def small_problem(seed: int = 0, n_side: int = 6, k: int = 3):
    """A random weighted grid graph with a few labelled vertices of k labels."""
    rng = np.random.default_rng(seed)
    n = n_side * n_side
    W = sp.random(n, n, density=0.2, random_state=seed, data_rvs=lambda m: rng.uniform(0.1, 1, m))
    W = sp.triu(W, 1)
    W = (W + W.T).tocsr()
    idx = np.arange(n - 1)
    W = W + sp.csr_matrix((np.full(n - 1, 0.5), (idx, idx + 1)), shape=(n, n))  # connected
    W = W + sp.csr_matrix((np.full(n - 1, 0.5), (idx + 1, idx)), shape=(n, n))
    d = np.asarray(W.sum(axis=1)).ravel()
    L = (sp.diags(d) - W).tocsr()
    scribbles = np.zeros(n, np.int32)
    picks = rng.choice(n, 3 * k, replace=False)
    scribbles[picks] = np.repeat(np.arange(1, k + 1), 3)
    cons = build_constraints(scribbles.reshape(n_side, n_side), d, constraint_weight=0.7)
    return Pencil.from_constraints(L, d, cons), cons, rng


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ratio_cut_is_the_sum_of_generalized_rayleigh_quotients(seed):
    """Σ_a x_aᵀL_G x_a / x_aᵀL_H x_a with x_a the indicator of label a's region (dense pencil)."""
    pencil, cons, rng = small_problem(seed)
    LG, LH = pencil.dense()
    codes = rng.integers(0, cons.k, pencil.n)
    for a, S in enumerate(cons.sets):
        codes[S] = a
    expected = 0.0
    for a in range(cons.k):
        x = (codes == a).astype(float)
        expected += (x @ LG @ x) / (x @ LH @ x)
    assert ratio_cut(codes, pencil, cons) == pytest.approx(expected, rel=1e-9)
