r"""Weighted Gaussian mixtures in a few dimensions: what one label's colours look like.

The maths
---------
A mixture of K Gaussians in ``c ≤ 3`` dimensions (CIE Lab colours here),

.. math:: p(x) = \sum_{j=1}^{K} π_j\, \mathcal N(x \mid μ_j, Σ_j),

is fitted to points ``x_i`` with non-negative weights ``w_i`` (a pixel's share in the label:
1 for a pixel painted or given to it, 0 otherwise) by expectation–maximisation (Dempster,
Laird & Rubin 1977): the E-step's responsibilities ``r_ij ∝ π_j 𝒩(x_i | μ_j, Σ_j)`` and the
M-step's weighted moments

.. math:: N_j = \sum_i w_i r_{ij},\quad π_j = N_j / \sum_k N_k,\quad
          μ_j = \frac{1}{N_j}\sum_i w_i r_{ij} x_i,\quad
          Σ_j = \frac{1}{N_j}\sum_i w_i r_{ij} (x_i − μ_j)(x_i − μ_j)^T + s^2 I .

The floor ``s²`` (:data:`COVARIANCE_FLOOR`) keeps a component of one flat colour (a stroke on
a uniform sky) from collapsing to a point. GrabCut (Rother, Kolmogorov & Blake 2004) models
each side with K = 5 such components; so does :mod:`segapp.appearance.models`.

The start is deterministic: the weighted mean, then each next centre at the point farthest
(in weighted squared distance) from the centres so far — a seeded-free k-means++ — followed
by a few weighted Lloyd steps. The same points and weights always give the same mixture.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Variance (colour units², per channel) added to every component's covariance: about the
#: spread of JPEG noise in CIE Lab (≈ 2 units), so a component of one flat colour still
#: explains that colour's noisy neighbours.
COVARIANCE_FLOOR = 4.0
#: EM steps after the Lloyd start (the models are re-estimated each round anyway).
EM_STEPS = 5
_LLOYD_STEPS = 3


@dataclass(frozen=True)
class Mixture:
    """A fitted mixture: ``weights`` (K,), ``means`` (K, c), ``covariances`` (K, c, c)."""

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray

    def log_density(self, x: np.ndarray) -> np.ndarray:
        """``log p(x)`` of points ``x`` (m, c), float64 (m,)."""
        return _logsumexp(self._component_logs(np.asarray(x, np.float64)))

    def _component_logs(self, x: np.ndarray) -> np.ndarray:
        """``log π_j 𝒩(x_i | μ_j, Σ_j)`` (m, K), through each covariance's Cholesky factor."""
        m, c = x.shape
        out = np.empty((m, self.weights.shape[0]))
        for j, (pi, mu, cov) in enumerate(zip(self.weights, self.means, self.covariances)):
            chol = np.linalg.cholesky(cov)
            z = np.linalg.solve(chol, (x - mu).T)            # (c, m): a c × c triangle
            out[:, j] = (np.log(pi) - np.log(np.diag(chol)).sum() - 0.5 * c * np.log(2 * np.pi)
                         - 0.5 * np.einsum("ij,ij->j", z, z))
        return out


def fit_mixture(x: np.ndarray, w: np.ndarray, components: int = 5, *,
                floor: float | np.ndarray = COVARIANCE_FLOOR, steps: int = EM_STEPS
                ) -> Mixture | None:
    """The mixture of at most ``components`` Gaussians fitted to points ``x`` (m, c) with
    weights ``w`` (m,) ≥ 0 (module doc); None if the weights sum to zero. ``floor`` is added
    to every component's covariance: one variance, or one per channel (c,).

    Fewer components are used when there are few distinct points (a click of a few pixels):
    at most one per 8 points of positive weight.
    """
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    keep = w > 0
    x, w = x[keep], w[keep]
    if x.shape[0] == 0 or w.sum() <= 0:
        return None
    K = int(max(1, min(components, x.shape[0] // 8)))
    means = _start(x, w, K)
    K = means.shape[0]
    resp = _lloyd(x, w, means)
    c = x.shape[1]
    eye = np.diag(np.broadcast_to(np.asarray(floor, np.float64), (c,)))
    for step in range(steps + 1):
        rw = resp * w[:, None]
        N = rw.sum(0)
        live = N > 1e-12 * w.sum()
        rw, N = rw[:, live], N[live]
        means = (rw.T @ x) / N[:, None]
        covs = np.empty((N.shape[0], c, c))
        for j in range(N.shape[0]):
            d = x - means[j]
            covs[j] = (d * rw[:, j:j + 1]).T @ d / N[j] + eye
        mix = Mixture(N / N.sum(), means, covs)
        if step == steps:
            return mix
        logs = mix._component_logs(x)
        resp = np.exp(logs - logs.max(1, keepdims=True))
        resp /= resp.sum(1, keepdims=True)
    return mix  # pragma: no cover - the loop returns


def _start(x: np.ndarray, w: np.ndarray, K: int) -> np.ndarray:
    """K starting centres: the weighted mean, then repeatedly the farthest weighted point."""
    centres = [np.average(x, axis=0, weights=w)]
    d2 = ((x - centres[0]) ** 2).sum(1)
    for _ in range(K - 1):
        score = w * d2
        i = int(np.argmax(score))
        if score[i] <= 0:
            break                          # every point sits on a centre: fewer components
        centres.append(x[i])
        d2 = np.minimum(d2, ((x - x[i]) ** 2).sum(1))
    return np.array(centres)


def _lloyd(x: np.ndarray, w: np.ndarray, means: np.ndarray) -> np.ndarray:
    """A few weighted Lloyd steps from ``means``; the last assignment as 0/1 responsibilities."""
    K = means.shape[0]
    for _ in range(_LLOYD_STEPS):
        a = np.argmin(((x[:, None, :] - means[None]) ** 2).sum(2), 1)
        for j in range(K):
            sel = a == j
            if w[sel].sum() > 0:
                means[j] = np.average(x[sel], axis=0, weights=w[sel])
    resp = np.zeros((x.shape[0], K))
    resp[np.arange(x.shape[0]), a] = 1.0
    return resp


def _logsumexp(a: np.ndarray) -> np.ndarray:
    top = a.max(1)
    return top + np.log(np.exp(a - top[:, None]).sum(1))
