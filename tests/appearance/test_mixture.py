"""Weighted Gaussian mixtures (segapp/appearance/mixture.py) against known distributions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from segapp.appearance.mixture import COVARIANCE_FLOOR, fit_mixture


def _two_blobs(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.multivariate_normal([20, 10, -5], np.diag([9, 4, 16]), n)
    b = rng.multivariate_normal([70, -30, 40], [[25, 5, 0], [5, 16, 0], [0, 0, 9]], n // 2)
    return a, b


def test_a_mixture_of_two_blobs_recovers_their_moments():
    a, b = _two_blobs()
    x = np.vstack([a, b])
    mix = fit_mixture(x, np.ones(len(x)), components=2)
    order = np.argsort(mix.means[:, 0])
    np.testing.assert_allclose(mix.means[order], [a.mean(0), b.mean(0)], atol=0.5)
    np.testing.assert_allclose(mix.weights[order], [2 / 3, 1 / 3], atol=0.01)
    # the floor is added to the sample covariance
    for j, blob in zip(order, (a, b)):
        np.testing.assert_allclose(mix.covariances[j],
                                   np.cov(blob.T, bias=True) + COVARIANCE_FLOOR * np.eye(3),
                                   rtol=0.1, atol=1.0)


def test_log_density_is_the_mixture_of_normal_densities():
    a, b = _two_blobs()
    mix = fit_mixture(np.vstack([a, b]), np.ones(len(a) + len(b)), components=2)
    pts = np.random.default_rng(3).uniform(-50, 100, (50, 3))
    ref = sum(w * multivariate_normal(m, c).pdf(pts)
              for w, m, c in zip(mix.weights, mix.means, mix.covariances))
    np.testing.assert_allclose(mix.log_density(pts), np.log(ref), rtol=1e-9)


def test_weights_select_the_points_a_model_learns_from():
    a, b = _two_blobs()
    x = np.vstack([a, b])
    w = np.r_[np.zeros(len(a)), np.ones(len(b))]
    mix = fit_mixture(x, w, components=3)
    assert np.all(np.abs(mix.means[:, 0] - 70) < 10)      # only the second blob
    # integer weights are repetitions
    twice = fit_mixture(b, np.full(len(b), 2.0), components=2)
    once = fit_mixture(np.vstack([b, b]), np.ones(2 * len(b)), components=2)
    np.testing.assert_allclose(twice.means, once.means, atol=1e-8)


def test_the_fit_is_deterministic_and_none_without_weight():
    a, b = _two_blobs()
    x = np.vstack([a, b])
    m1 = fit_mixture(x, np.ones(len(x)))
    m2 = fit_mixture(x.copy(), np.ones(len(x)))
    np.testing.assert_array_equal(m1.means, m2.means)
    assert fit_mixture(x, np.zeros(len(x))) is None
    assert fit_mixture(np.zeros((0, 3)), np.zeros(0)) is None


@pytest.mark.parametrize("points", [1, 5, 9, 17, 64])
def test_few_points_get_few_components_and_a_finite_density(points):
    flat = np.tile([[50.0, 0.0, 0.0]], (points, 1))       # one flat colour (a click)
    mix = fit_mixture(flat, np.ones(points), components=5)
    assert len(mix.weights) == 1
    assert np.isfinite(mix.log_density(np.array([[50.0, 1.0, -1.0], [0, 0, 0]]))).all()
    spread = np.random.default_rng(points).normal(50, 10, (points, 3))
    assert len(fit_mixture(spread, np.ones(points), components=5).weights) <= max(1, points // 8)


def _plain_em(x, w, components, floor, lloyd_steps, em_steps):
    """The module doc's algorithm written plainly, one component at a time, with scipy's
    densities: the reference the vectorised fit must equal."""
    keep = w > 0
    x, w = x[keep], w[keep]
    K = max(1, min(components, len(x) // 8))
    centres = [np.average(x, axis=0, weights=w)]
    d2 = ((x - centres[0]) ** 2).sum(1)
    for _ in range(K - 1):
        i = int(np.argmax(w * d2))
        if w[i] * d2[i] <= 0:
            break
        centres.append(x[i])
        d2 = np.minimum(d2, ((x - x[i]) ** 2).sum(1))
    means = np.array(centres)
    K = len(means)
    for _ in range(lloyd_steps):
        a = np.array([np.argmin([((p - m) ** 2).sum() for m in means]) for p in x])
        for j in range(K):
            if w[a == j].sum() > 0:
                means[j] = np.average(x[a == j], axis=0, weights=w[a == j])
    resp = np.eye(K)[a]
    for step in range(em_steps + 1):
        rw = resp * w[:, None]
        N = rw.sum(0)
        live = N > 1e-12 * w.sum()
        rw, N = rw[:, live], N[live]
        means = np.array([rw[:, j] @ x / N[j] for j in range(len(N))])
        covs = np.array([np.cov(x.T, aweights=rw[:, j], bias=True).reshape(x.shape[1], -1)
                         + np.diag(np.broadcast_to(floor, (x.shape[1],)))
                         for j in range(len(N))])
        pis = N / N.sum()
        if step == em_steps:
            return pis, means, covs
        dens = np.stack([p * multivariate_normal(m, c).pdf(x) for p, m, c in zip(pis, means, covs)], 1)
        resp = dens / dens.sum(1, keepdims=True)


@pytest.mark.parametrize("seed,components,c", [(0, 5, 3), (1, 3, 3), (2, 5, 1), (3, 1, 3)])
def test_the_fit_is_the_plain_em_of_the_module_doc(seed, components, c):
    from segapp.appearance.mixture import _LLOYD_STEPS, EM_STEPS

    a, b = _two_blobs(600, seed)
    x = np.vstack([a, b])[:, :c]
    w = np.random.default_rng(seed).integers(0, 4, len(x)).astype(float)   # some weights 0
    floor = np.array([4.0, 5.0, 6.0])[:c]
    mix = fit_mixture(x, w, components, floor=floor)
    pis, means, covs = _plain_em(x, w, components, floor, _LLOYD_STEPS, EM_STEPS)
    np.testing.assert_allclose(mix.weights, pis, rtol=1e-9)
    np.testing.assert_allclose(mix.means, means, rtol=1e-9)
    np.testing.assert_allclose(mix.covariances, covs, rtol=1e-9)


@pytest.mark.parametrize("c", [1, 3])
def test_many_components_give_scipys_densities(c):
    """A folder's model concatenates up to 60 components (appearance/carry.py): every
    component's log-density at once equals scipy's, one by one."""
    from segapp.appearance.mixture import Mixture

    rng = np.random.default_rng(c)
    K = 60
    A = rng.normal(size=(K, c, c))
    covs = A @ A.transpose(0, 2, 1) * 20 + 4 * np.eye(c)
    means = rng.uniform(0, 100, (K, c))
    weights = rng.dirichlet(np.ones(K))
    mix = Mixture(weights, means, covs)
    pts = rng.uniform(-50, 150, (300, c))
    want = np.stack([np.log(p) + multivariate_normal(m, s).logpdf(pts)
                     for p, m, s in zip(weights, means, covs)], 1)
    np.testing.assert_allclose(mix._component_logs(pts), want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(mix.log_density(pts),
                               np.log(np.exp(want).sum(1)), rtol=1e-10)
