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

A mixture's densities come from its whitening once per fit: ``z = L_j^{-1}(x − μ_j)`` with
``Σ_j = L_j L_jᵀ`` (Cholesky), for every component at once as one (m, c) × (c, K·c) product,
and the M-step's covariances as one batched product: no per-component loop, no solve per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

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

    @cached_property
    def _whitening(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Once per mixture: ``(T, s, b)`` with ``T`` (c, K·c) the stacked transposed inverse
        Cholesky factors ``L_j^{-1}`` (``Σ_j = L_j L_jᵀ``), ``s = (L_j^{-1} μ_j)_j`` (K·c,) and
        ``b_j = log π_j − Σ_d log (L_j)_{dd} − (c/2) log 2π`` (K,)."""
        K, c = self.means.shape
        chol = np.linalg.cholesky(self.covariances)
        inv = np.linalg.inv(chol)                                   # (K, c, c), lower
        T = np.ascontiguousarray(inv.transpose(2, 0, 1).reshape(c, K * c))
        s = np.einsum("kdc,kc->kd", inv, self.means).ravel()
        b = (np.log(self.weights) - np.log(np.diagonal(chol, 0, 1, 2)).sum(1)
             - 0.5 * c * np.log(2 * np.pi))
        return T, s, b

    def _component_logs(self, x: np.ndarray) -> np.ndarray:
        r"""``log π_j 𝒩(x_i | μ_j, Σ_j)`` (m, K): with ``z_ij = L_j^{-1}(x_i − μ_j)``,

        .. math:: \log π_j 𝒩(x_i \mid μ_j, Σ_j) = b_j − \tfrac12 \lVert z_{ij} \rVert^2,

        every component at once as one (m, c) × (c, K·c) product (:attr:`_whitening`)."""
        T, s, b = self._whitening
        c = x.shape[1]
        z = x @ T
        z -= s
        z *= z
        out = z[:, 0::c].copy()         # ‖z_ij‖²: c strided adds (a sum over a short axis
        for d in range(1, c):           # is ten times slower)
            out += z[:, d::c]
        out *= -0.5
        out += b
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
        d = x[None] - means[:, None]                                  # (K, m, c)
        covs = np.matmul((d * rw.T[:, :, None]).transpose(0, 2, 1), d)
        covs /= N[:, None, None]
        covs += eye
        mix = Mixture(N / N.sum(), means, covs)
        if step == steps:
            return mix
        logs = mix._component_logs(x)
        resp = np.exp(logs - row_max(logs)[:, None])
        resp /= row_sum(resp)[:, None]
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
        mass = np.bincount(a, w, K)
        sums = np.stack([np.bincount(a, w * x[:, j], K) for j in range(x.shape[1])], 1)
        held = mass > 0                    # a centre no weighted point chose stays put
        means[held] = sums[held] / mass[held, None]
    resp = np.zeros((x.shape[0], K))
    resp[np.arange(x.shape[0]), a] = 1.0
    return resp


def _logsumexp(a: np.ndarray) -> np.ndarray:
    """``log Σ_j exp a_ij`` per row of ``a`` (m, K)."""
    top = row_max(a)
    return top + np.log(row_sum(np.exp(a - top[:, None])))


def row_max(a: np.ndarray) -> np.ndarray:
    """``a.max(1)`` of a few columns (m, K), column by column (a reduction over a short
    axis costs ten times as much)."""
    out = a[:, 0].copy()
    for j in range(1, a.shape[1]):
        np.maximum(out, a[:, j], out=out)
    return out


def row_sum(a: np.ndarray) -> np.ndarray:
    """``a.sum(1)`` of a few columns (m, K), column by column (:func:`row_max`)."""
    out = a[:, 0].copy()
    for j in range(1, a.shape[1]):
        out += a[:, j]
    return out
