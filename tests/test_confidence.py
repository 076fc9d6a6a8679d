"""Per-pixel confidence ("where to paint next", issue 22 item 4), the potentials read from the
embedding, and the degenerate-component test, against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

import segapp
from segapp.methods.fastge import FastGE
from segapp.partition import degenerate_labels, embedding_potentials, rounding_confidence

from scenes import noisy_image

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_two_labels_threshold_confidence_by_hand():
    x = np.array([-3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 4.0, 6.0])
    codes = (x > 0).astype(np.int64)
    sets = [np.array([0, 1]), np.array([6])]
    conf = rounding_confidence(codes, x[:, None], sets)
    t = (-0.5 + 0.5) / 2                        # midway between the two sides
    h = np.abs(x - t)
    ref0, ref1 = np.median(h[[0, 1]]), h[6]
    expected = np.where(codes == 0, h / ref0, h / ref1).clip(0, 1)
    expected[[0, 1, 6]] = 1.0
    assert conf.dtype == np.float32
    np.testing.assert_allclose(conf, expected, rtol=1e-6)
    assert conf[3] == np.float32(0.5 / 2.5)      # |−0.5 − 0| / median(3, 2) on label 0's side
    assert conf[4] == np.float32(0.5 / 4.0)      # |0.5 − 0| / |4 − 0| on label 1's side


def test_k_means_confidence_is_the_bisector_distance_by_hand():
    rng = np.random.default_rng(3)
    centres = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    V = np.repeat(centres, 6, axis=0) + 0.2 * rng.standard_normal((18, 3))
    U = V / np.linalg.norm(V, axis=1)[:, None]
    codes = np.repeat(np.arange(3), 6)
    sets = [np.array([0, 1]), np.array([6]), np.array([12, 13, 14])]
    conf = rounding_confidence(codes, V, sets)
    C = np.array([U[codes == a].mean(0) for a in range(3)])
    h = np.empty(18)
    for i in range(18):
        a = codes[i]
        h[i] = min((np.sum((U[i] - C[b]) ** 2) - np.sum((U[i] - C[a]) ** 2))
                   / (2 * np.linalg.norm(C[a] - C[b])) for b in range(3) if b != a)
    expected = np.empty(18)
    for a, S in enumerate(sets):
        expected[codes == a] = h[codes == a] / np.median(h[S])
    expected = expected.clip(0, 1)
    for S in sets:
        expected[S] = 1.0
    np.testing.assert_allclose(conf, expected, rtol=1e-5, atol=1e-7)


def test_segment_returns_a_confidence_low_at_the_boundary():
    img, truth, s = noisy_image(seed=1)
    res = segapp.segment(img, s)
    c = res.confidence
    assert c.shape == s.shape and c.dtype == np.float32
    assert 0.0 <= c.min() and c.max() <= 1.0
    assert np.all(c[s > 0] == 1.0)
    lab = res.labels
    edge = np.zeros(lab.shape, bool)
    edge[:, 1:] |= lab[:, 1:] != lab[:, :-1]
    edge[:, :-1] |= lab[:, 1:] != lab[:, :-1]
    edge[1:] |= lab[1:] != lab[:-1]
    edge[:-1] |= lab[1:] != lab[:-1]
    assert c[edge].mean() < c[~edge].mean()
    # the least confident pixel lies on (or next to) a boundary of the answer
    y, x = np.unravel_index(np.argmin(np.where(s > 0, 2.0, c)), c.shape)
    assert edge[max(y - 1, 0):y + 2, max(x - 1, 0):x + 2].any()


def test_confidence_comes_back_at_full_resolution_from_the_working_copy():
    img, truth, s = noisy_image(seed=2, shape=(96, 128))
    res = segapp.segment(img, s, max_pixels=96 * 128 // 4)
    assert res.confidence.shape == s.shape and res.confidence.dtype == np.float32
    assert 0.0 <= res.confidence.min() and res.confidence.max() <= 1.0
    assert np.all(res.confidence[s > 0] == 1.0)
    small = segapp.segment(img[::2, ::2], s[::2, ::2])
    # same solve at the working resolution: the enlarged map is its bilinear interpolation
    assert abs(float(res.confidence.mean()) - float(small.confidence.mean())) < 0.1


def test_a_session_result_carries_a_confidence():
    img, truth, s = noisy_image(seed=4)
    res = segapp.Session(img).update(s)
    assert res.confidence is not None and res.confidence.shape == s.shape


def test_embedding_potentials_are_the_random_walker_potentials():
    """For the harmonic solve, the affine reading of the embedding by the stroke means gives
    back the strokes' harmonic potentials (the method's solve door,
    segapp.solve.GraphSolver.potentials)."""
    img, truth, s = noisy_image(seed=5)
    method = FastGE.from_image(img)
    # without the colour models' prior, which moves the potentials off the plain walker's
    res = method.update(s, cg_tol=1e-10, maxiter=1000, appearance=0)
    g = method.graph
    sets = [np.flatnonzero(s.ravel() == i) for i in res.label_ids]
    Y = method.solver.potentials(sets, tol=1e-10, maxiter=1000)
    Phi = embedding_potentials(res.eigenvectors.reshape(s.size, -1).astype(np.float64), sets)
    np.testing.assert_allclose(Phi.sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(Phi, Y, atol=2e-3)


def test_degenerate_labels_by_hand():
    n = 100                                      # √n = 10
    sets = [np.array([2]), np.array([50, 51])]
    codes = np.zeros(n, np.int64)
    codes[45:57] = 1                              # label 1: 12 px, 10 unpainted: fine
    assert degenerate_labels(codes, sets) == []
    codes[56] = 0                                 # 9 unpainted < 10: degenerate
    assert degenerate_labels(codes, sets) == [1]
    codes[:] = 1
    codes[:12] = 0                                # label 0: 12 px, 11 unpainted: fine
    codes[50] = 0                                 # a painted pixel given away: not counted
    assert degenerate_labels(codes, sets) == []
    codes[:] = 1
    codes[2] = 0                                  # label 0 only its painted pixel
    assert degenerate_labels(codes, sets) == [0]
