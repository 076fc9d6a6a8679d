"""The two-label sweep's colour term (issue 22 item 2): two Gaussian colour models scored by
brute force, and the sweep that weighs them against FAST-GE's ratio."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import segapp
from segapp.graphs import graph_from_adjacency
from segapp.partition.colour_model import (COLOUR_SAMPLES, ImageColours, lab_colours,
                                           partition_colour_cost, prefix_colour_costs,
                                           strokes_differ_in_colour)
from segapp.partition.sweep import sweep_cut, sweep_ratios
from segapp.solve.pencil import Pencil
from segapp.strokes.constraints import build_constraints

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def gaussian_cost(colours: np.ndarray, mask: np.ndarray, floor: float) -> float:
    """Mean negative log-likelihood of the colours under one ML Gaussian per side, minus its
    constant (c/2)(1 + log 2π): written out from the densities, not from the module's
    formula."""
    n, c = colours.shape
    total = 0.0
    for side in (mask, ~mask):
        f = colours[side]
        mu = f.mean(0)
        cov = np.cov(f.T, bias=True).reshape(c, c) + floor * np.eye(c)
        inv = np.linalg.inv(cov)
        d = f - mu
        nll = 0.5 * (np.einsum("ij,jk,ik->i", d, inv, d) + np.log(np.linalg.det(cov))
                     + c * np.log(2 * np.pi))
        total += nll.sum()
    # with the ML covariance the Mahalanobis terms sum to |S|·tr(Σ⁻¹ Σ_ML): c per pixel
    # without the floor; take out what is constant over the partitions
    return total / n - 0.5 * c * (1 + np.log(2 * np.pi))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40), c=st.sampled_from([1, 3]))
def test_prefix_costs_are_each_prefix_brute_force(seed, n, c):
    rng = np.random.default_rng(seed)
    colours = rng.normal(0, 20, (n, c)) + 50
    order = rng.permutation(n)
    costs = prefix_colour_costs(colours, order, floor=1.0)
    assert costs.shape == (n - 1,)
    for p in range(1, n):
        mask = np.zeros(n, bool)
        mask[order[:p]] = True
        assert costs[p - 1] == pytest.approx(partition_colour_cost(colours, mask, 1.0),
                                             rel=1e-9, abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 30))
def test_partition_cost_is_the_gaussian_log_likelihood(seed, n):
    """Up to a constant, and with a small floor (the Mahalanobis terms then sum to ≈ c)."""
    rng = np.random.default_rng(seed)
    colours = rng.normal(0, 10, (n, 3))
    mask = np.zeros(n, bool)
    mask[rng.choice(n, n // 2, replace=False)] = True
    if min(mask.sum(), (~mask).sum()) < 4:
        return
    assert partition_colour_cost(colours, mask, 1e-9) == pytest.approx(
        gaussian_cost(colours, mask, 1e-9), rel=1e-6, abs=1e-6)


def test_prefix_costs_of_a_big_graph_from_a_sample_are_close_to_the_exact_ones():
    """Over COLOUR_SAMPLES vertices the Gaussians come from a grid sample: within 0.02 nats
    per pixel of the brute force at every prefix tried (a two-colour picture, ordered by a
    noisy version of its colour edge)."""
    rng = np.random.default_rng(5)
    n = 2 * COLOUR_SAMPLES + 7
    colours = rng.normal(0, 5, (n, 3)) + np.where(np.arange(n)[:, None] < n // 3, 40, 0)
    order = np.argsort(np.arange(n) + rng.normal(0, n / 20, n), kind="stable")
    costs = prefix_colour_costs(colours, order)
    assert costs.shape == (n - 1,)
    for p in (100, 4000, n // 3, n // 3 + 4, n // 2, n - 100):
        mask = np.zeros(n, bool)
        mask[order[:p]] = True
        assert costs[p - 1] == pytest.approx(partition_colour_cost(colours, mask), abs=0.02), p


def test_rescaled_colours_shift_every_prefix_cost_by_one_constant():
    """Colour units do not matter: ×s adds c·log s to every prefix cost (floor ~0) whose
    sides have full-rank covariances (4 pixels or more each)."""
    rng = np.random.default_rng(3)
    colours, order = rng.normal(0, 5, (50, 3)), rng.permutation(50)
    a = prefix_colour_costs(colours, order, floor=1e-12)
    b = prefix_colour_costs(7.0 * colours, order, floor=1e-12)
    np.testing.assert_allclose((b - a)[3:-3], 3 * np.log(7.0), atol=1e-6)


def path(n: int):
    """A path graph with unit weights: FAST-GE's ratio alone cuts it in the middle."""
    W = sp.diags([np.ones(n - 1)], [1], shape=(n, n))
    return graph_from_adjacency(sp.csr_matrix(W + W.T))


def test_the_colour_term_moves_the_cut_to_the_colour_edge_of_a_uniform_path():
    """Hand-made: 100 pixels in a row, equal weights, the first 30 red and the rest blue. The
    ratio's cheapest cut is the middle; with the colour term it is the colour edge."""
    n = 100
    g = path(n)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, None)
    x = np.arange(n, dtype=float)
    colours = np.where(np.arange(n)[:, None] < 30, [[50, 70, 60]], [[30, 20, -60]])
    colours = colours + np.random.default_rng(0).normal(0, 1, (n, 3))
    plain = sweep_cut(x, pencil, None)
    assert abs(plain.sum() - 50) <= 1
    colours = ImageColours.of(colours)
    np.testing.assert_array_equal(sweep_cut(x, pencil, None, colours=colours, colour_weight=0),
                                  plain)
    coloured = sweep_cut(x, pencil, None, colours=colours, colour_weight=3.0)
    np.testing.assert_array_equal(coloured, np.arange(n) < 30)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(6, 40), weight=st.sampled_from([0.5, 3.0]))
def test_colour_sweep_minimises_log_ratio_plus_weighted_cost(seed, n, weight):
    """Brute force over every prefix of the order: ratio from the dense pencil, colour cost
    from the Gaussian densities."""
    rng = np.random.default_rng(seed)
    W = np.triu(rng.uniform(0.05, 1.0, (n, n)) * (rng.random((n, n)) < 0.3), 1)
    W[np.arange(n - 1), np.arange(1, n)] = rng.uniform(0.1, 1.0, n - 1)
    g = graph_from_adjacency(sp.csr_matrix(W + W.T))
    lab = np.zeros(n, int)
    lab[rng.choice(n, 2, replace=False)] = [1, 2]
    cons = build_constraints(lab, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    LG, LH = pencil.dense()
    x, colours = rng.standard_normal(n), rng.normal(0, 10, (n, 3))
    colours[lab == 2] += rng.choice([0.0, 200.0])   # strokes of one colour, or of two
    order = np.argsort(x, kind="stable")
    # the term is used only where the strokes' colours differ beyond noise
    used = weight if strokes_differ_in_colour(ImageColours.of(colours), cons.sets) else 0.0
    scores = []
    for p in range(1, n):
        ind = np.zeros(n)
        ind[order[:p]] = 1
        scores.append(np.log((ind @ LG @ ind) / (ind @ LH @ ind))
                      + used * partition_colour_cost(colours, ind > 0, 0.01))
    mask = sweep_cut(x, pencil, cons, colours=ImageColours.of(colours), colour_weight=weight)
    got = int(mask.sum())
    assert np.all(mask[order[:got]])
    assert scores[got - 1] == pytest.approx(min(scores), abs=1e-9)
    ratios, _ = sweep_ratios(x, pencil, cons)
    assert ratios.shape == (n - 1,)


def test_lab_colours_of_colour_and_grey_images():
    rgb = np.zeros((2, 3, 3))
    rgb[0, 0] = 1.0                              # white
    lab = lab_colours(rgb)
    assert lab.shape == (6, 3) and lab.dtype == np.float32
    assert lab[0, 0] == pytest.approx(100, abs=0.01) and lab[1, 0] == pytest.approx(0, abs=0.01)
    grey = lab_colours(np.full((2, 3), 0.5))
    assert grey.shape == (6, 1) and grey[0, 0] == pytest.approx(50)


def test_fastge_option_colour_weight_reaches_the_sweep(monkeypatch):
    """``colour_weight`` and the image's Lab colours reach the two-label sweep (none with
    weight 0); on a clean object/background picture both give the object."""
    import segapp.partition.rounding as rounding

    seen = []
    sweep = rounding.sweep_cut

    def spy(x, pencil, cons, **kw):
        seen.append((kw.get("colours"), kw.get("colour_weight")))
        return sweep(x, pencil, cons, **kw)

    monkeypatch.setattr(rounding, "sweep_cut", spy)
    rng = np.random.default_rng(1)
    img = np.empty((40, 60, 3))
    img[:] = (0.2, 0.3, 0.6)
    img[10:30, 5:25] = (0.8, 0.5, 0.2)           # the object
    img = np.clip(img + rng.normal(0, 0.03, img.shape), 0, 1)
    s = np.zeros((40, 60), np.int32)
    s[20, 15] = 1
    s[5:35, 55] = 2
    for w in (0.0, 2.5):
        seen.clear()
        labels = segapp.segment(img, s, colour_weight=w).labels
        assert (labels[10:30, 5:25] == 1).mean() > 0.95 and (labels == 1).mean() < 0.2
        colours, weight = seen[-1]
        assert weight == w
        if w == 0:
            assert colours is None
        else:
            np.testing.assert_allclose(colours.lab, lab_colours(img), atol=1e-4)


@pytest.mark.parametrize("case, differ", [
    ("one grey, two discs", False),
    ("one grey, two clicks", False),
    ("a disc catching one edge pixel", False),
    ("two colours, two clicks", True),
    ("two colours, two discs", True),
    ("two greys 0.5 noise σ apart, two discs", True),
])
def test_strokes_differ_in_colour_beyond_noise(case, differ):
    """The colour term is used only where the strokes' mean colours differ by more than 3
    standard errors of the image's noise (and the strokes' own spread)."""
    rng = np.random.default_rng(0)
    H, W = 60, 80
    img = 0.3 + 0.1 * rng.standard_normal((H, W, 3))
    if case.startswith("two colours"):
        img[:, W // 2:] += (0.4, -0.2, 0.1)
    if case.startswith("two greys"):
        img[:, W // 2:] += 0.05
    if case == "a disc catching one edge pixel":
        img = np.full((H, W, 3), 0.2)
        img[30, 62] = 0.9                          # one pixel of a bright edge in the disc
    colours = ImageColours.of_image(np.clip(img, 0, 1))
    r = 0 if "clicks" in case else 2
    sets = []
    for y, x in ((30, 20), (30, 60)):
        box = np.zeros((H, W), bool)
        box[y - r:y + r + 1, x - r:x + r + 1] = True
        sets.append(np.flatnonzero(box))
    assert strokes_differ_in_colour(colours, sets) is differ
