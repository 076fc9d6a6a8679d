"""segapp.partition.model_cost: the labels' colour models' data term of the two-label sweep,
against its definition summed pixel by pixel, and the sweep that weighs it against the
dense pencil's ratio of every prefix (brute force)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.graphs import graph_from_adjacency
from segapp.partition.model_cost import (POSTERIOR_FLOOR, model_costs, partition_model_cost,
                                         prefix_model_costs)
from segapp.partition.sweep import sweep_cut
from segapp.solve.pencil import Pencil
from segapp.strokes.constraints import build_constraints

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def random_posteriors(rng, n):
    p = rng.uniform(0, 1, n)
    p[rng.random(n) < 0.2] = 0.0           # some pixels no model of the low label explains
    return np.stack([p, 1 - p], 1)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 40), low=st.sampled_from([0, 1]))
def test_prefix_costs_are_the_definition_summed_pixel_by_pixel(seed, n, low):
    """m(S) = (Σ_{i∈S} −log P_lo(i) + Σ_{i∉S} −log P_hi(i)) / n for every prefix of a random
    order, posteriors floored at POSTERIOR_FLOOR."""
    rng = np.random.default_rng(seed)
    post = random_posteriors(rng, n)
    order = rng.permutation(n)
    costs = model_costs(post, low)
    got = prefix_model_costs(costs, order)
    assert got.shape == (n - 1,)
    for m in range(1, n):
        S = set(order[:m].tolist())
        want = sum(-np.log(max(post[i, low], POSTERIOR_FLOOR)) if i in S
                   else -np.log(max(post[i, 1 - low], POSTERIOR_FLOOR)) for i in range(n)) / n
        assert got[m - 1] == pytest.approx(want, rel=1e-12, abs=1e-12)
        mask = np.zeros(n, bool)
        mask[order[:m]] = True
        assert partition_model_cost(costs, mask) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_model_costs_refuse_anything_but_two_labels():
    with pytest.raises(ValueError, match="two labels"):
        model_costs(np.full((5, 3), 1 / 3), 0)
    with pytest.raises(ValueError, match="two labels"):
        model_costs(np.full((5, 2), 0.5), 2)


def path_graph(rng, n):
    W = np.zeros((n, n))
    for i in range(n - 1):
        W[i, i + 1] = W[i + 1, i] = rng.uniform(0.5, 1.0)
    return graph_from_adjacency(sp.csr_matrix(W))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 40),
       weight=st.sampled_from([0.0, 0.3, 1.0, 5.0]))
def test_sweep_minimises_log_ratio_plus_the_weighted_data_term(seed, n, weight):
    """Brute force over every prefix of the order: the sweep's cut minimises
    log(cut_G/cut_H) (dense pencil) + weight · m(S); weight 0 is the plain sweep."""
    rng = np.random.default_rng(seed)
    g = path_graph(rng, n)
    lab = np.zeros(n, int)
    lab[0], lab[n - 1] = 1, 2
    cons = build_constraints(lab, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    LG, LH = pencil.dense()
    x = np.sort(rng.standard_normal(n))              # the order is the path's own
    costs = model_costs(random_posteriors(rng, n), 0)
    score = []
    for p in range(1, n):
        ind = np.zeros(n)
        ind[:p] = 1
        mask = ind.astype(bool)
        score.append(np.log((ind @ LG @ ind) / (ind @ LH @ ind))
                     + weight * partition_model_cost(costs, mask))
    got = sweep_cut(x, pencil, cons, model=costs, model_weight=weight)
    p = int(np.count_nonzero(got))
    assert got[:p].all() and not got[p:].any()       # a prefix
    assert score[p - 1] == pytest.approx(min(score), rel=1e-9, abs=1e-9)


def test_the_data_term_moves_the_cut_to_where_the_models_say():
    """A path of equal weights (every cut costs the same in G, so the ratio favours the
    balanced cut): models that say the first quarter is the low label's move the cut there."""
    n = 40
    W = sp.diags([np.ones(n - 1), np.ones(n - 1)], [1, -1], format="csr")
    g = graph_from_adjacency(W)
    lab = np.zeros(n, int)
    lab[0], lab[n - 1] = 1, 2
    cons = build_constraints(lab, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    x = np.arange(n, dtype=float)
    plain = sweep_cut(x, pencil, cons)
    post = np.zeros((n, 2))
    post[: n // 4, 0] = 0.99
    post[n // 4:, 0] = 0.01
    post[:, 1] = 1 - post[:, 0]
    moved = sweep_cut(x, pencil, cons, model=model_costs(post, 0), model_weight=1.0)
    assert abs(np.count_nonzero(plain) - n // 2) <= 2
    assert np.count_nonzero(moved) == n // 4
