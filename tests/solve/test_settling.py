"""The labels-settled stopping test (segapp.solve.settling) and its use by LOBPCG and FAST-GE."""

from __future__ import annotations

import numpy as np
import pytest

from skimage.transform import resize

from segapp import io, samples
from segapp.strokes.constraints import build_constraints
from segapp.graphs.image import image_graph
from segapp.methods.fastge import FastGE
from segapp.solve.pencil import Pencil
from segapp.solve.settling import LabelSettling


def _regions(H=60, W=72, seed=0):
    """Four flat quadrants with noise and one stroke in each."""
    rng = np.random.default_rng(seed)
    truth = (np.arange(H)[:, None] >= H // 2) * 2 + (np.arange(W)[None, :] >= W // 2)
    colours = rng.uniform(0, 1, (4, 3))
    img = np.clip(colours[truth] + rng.normal(0, 0.05, (H, W, 3)), 0, 1)
    s = np.zeros((H, W), np.int32)
    for a, (y, x) in enumerate([(H // 4, W // 4), (H // 4, 3 * W // 4),
                                (3 * H // 4, W // 4), (3 * H // 4, 3 * W // 4)]):
        s[y, x - 5:x + 5] = a + 1
    return img, truth, s


@pytest.fixture(scope="module")
def problem():
    img, truth, s = _regions()
    g = image_graph(img)
    cons = build_constraints(s, g.degrees)
    return g, cons, Pencil.from_constraints(g.laplacian, g.degrees, cons), s, truth


def test_stops_only_after_two_quiet_iterations(problem):
    g, cons, pencil, _, truth = problem
    rng = np.random.default_rng(1)
    exact = np.eye(cons.k)[truth.ravel()][:, 1:] + 0.01 * rng.standard_normal((g.n, cons.k - 1))
    monitor = LabelSettling(pencil, cons.sets, tol=1e-3)
    assert monitor(exact) is False                    # first call: nothing to compare with
    assert monitor(exact) is False                    # one quiet iteration
    assert monitor(exact) is True                     # two
    assert monitor.changes == [0.0, 0.0]
    # a block that moves many pixels resets the count
    moved = np.roll(exact, g.n // 3, axis=0)
    assert monitor(moved) is False and monitor.changes[-1] > 1e-3
    assert monitor(moved) is False and monitor(moved) is True


def test_provisional_labels_are_the_nearest_stroke_prototypes(problem):
    g, cons, pencil, _, truth = problem
    # indicator vectors of the four regions (minus one) give back the regions exactly
    X = np.eye(cons.k)[truth.ravel()][:, 1:] - 0.25
    labels = LabelSettling(pencil, cons.sets, tol=1e-3).labels(X)
    assert np.array_equal(labels, truth.ravel())


def test_zero_tolerance_never_stops(problem):
    g, cons, pencil, _, truth = problem
    X = np.eye(cons.k)[truth.ravel()][:, 1:]
    monitor = LabelSettling(pencil, cons.sets, tol=0)
    assert not any(monitor(X) for _ in range(5))


def test_fastge_stops_on_settled_labels_with_the_labels_of_a_tight_solve():
    # The bundled coffee photo at 30K px, 4 labels: the labels settle after 3 iterations,
    # the Ritz values (eig_tol 1e-3) after 7; a tight solve takes 23.
    image = io.read_image(samples.sample_path("coffee"))
    s = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    s[s > 4] = 0
    f = np.sqrt(30_000 / s.size)
    shape = (round(s.shape[0] * f), round(s.shape[1] * f))
    img = resize(image, shape + (3,), anti_aliasing=True)
    s = resize(s, shape, order=0, preserve_range=True, anti_aliasing=False).astype(np.int32)
    g = image_graph(img)
    tight = FastGE(g, eigensolver="lobpcg", eig_tol=1e-9, label_tol=0, maxiter=500).update(s)
    quick = FastGE(g, eigensolver="lobpcg", label_tol=1e-3).update(s)
    eig_only = FastGE(g, eigensolver="lobpcg").update(s)  # label test off by default
    assert quick.diagnostics.converged and quick.diagnostics.reason == "labels settled"
    assert eig_only.diagnostics.reason == "eigenvalues settled"
    assert quick.diagnostics.iterations < eig_only.diagnostics.iterations
    assert np.mean(quick.labels == tight.labels) >= 0.995
