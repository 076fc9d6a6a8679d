r"""Total-variation filtering of the feature planes on a set of pixels only (a mask).

The maths
---------
:func:`segapp.graphs.image.denoise_features` replaces each feature plane ``f`` by the
minimiser ``u`` of the Rudin–Osher–Fatemi energy ``TV(u) + ‖u − f‖² / (2 λ)``, computed by
Chambolle's projection algorithm (Chambolle 2004, "An algorithm for total variation
minimization and applications", eq. (11), as scikit-image's ``denoise_tv_chambolle``): with
step ``τ = 1/4``, a dual field ``p = (p_x, p_y)`` and ``u = f − λ div p`` (skimage's scaling:
``u = f + d``, ``d = −div p``),

.. math:: p \leftarrow \frac{p - τ ∇u}{1 + (τ/λ) |∇u|},

forward differences for ``∇`` and their negative adjoint for ``div``; a difference leaving the
domain is 0 (Neumann), so ``p`` stays 0 there. Iterations stop when the energy per pixel
``E = (Σ d² + λ Σ |∇u|) / n`` changes by less than ``eps · E₀`` from one iteration to the next
(skimage's rule, its ``eps`` and iteration cap), each plane on its own.

Here the domain is any set of pixels ``D`` (sorted flat indices), not a rectangle: the same
iteration with the neighbour of a pixel taken inside ``D`` only (right: the next index when
it is in the same row; below/above: found by a search in ``D``). On a rectangle it is
skimage's result (``tests/graphs/test_masked_tv.py``, to float32 rounding); on a set of
disjoint rectangles, each one's own. The energy's sums are float32 like skimage's but in
another order (BLAS's dot), which can move the stop by an iteration.

Why: the full-resolution edges (:mod:`segapp.inputs.refine`) need the filtered features only
around a band of a few percent of a 12-megapixel photo. The band widened by a margin, as one
domain, costs only its own pixels' iterations; rectangles around a thin, winding band would
cover several times its area, each with margins of its own.
"""

from __future__ import annotations

import numpy as np

from ..cancel import NEVER, CancelToken

#: skimage's defaults for ``denoise_tv_chambolle`` (relative energy change; iteration cap).
TV_EPS = 2.0e-4


def masked_tv(features: np.ndarray, pixels: np.ndarray, lam: float, *, eps: float = TV_EPS,
              max_iter: int = 200, cancel: CancelToken = NEVER) -> np.ndarray:
    """Chambolle's total-variation minimiser of weight ``lam`` of each feature plane on the
    pixels ``pixels`` (module docstring).

    Parameters
    ----------
    features : ndarray (H, W, c)
        The feature planes (read at ``pixels`` only).
    pixels : ndarray of int, sorted, unique
        Flat (row-major) indices of the domain.
    lam : float
        The TV weight ``λ`` (> 0).
    eps, max_iter : float, int
        The stopping rule: relative energy change, iteration cap.
    cancel : CancelToken
        Polled between the planes.

    Returns
    -------
    ndarray (len(pixels), c) float32
        The filtered values at ``pixels``.
    """
    H, W, C = features.shape
    D = np.asarray(pixels, dtype=np.int64)
    n = D.size
    out = np.empty((n, C), np.float32)
    if n == 0:
        return out
    # right neighbour: the next index of D, in the same row
    no_right = np.ones(n, bool)
    no_right[:-1] = D[1:] != D[:-1] + 1
    no_right[(D + 1) % W == 0] = True
    no_right = np.flatnonzero(no_right)
    # the pixel below, by a search in D; a missing one points at the pixel itself
    # (difference 0); the pixel above is the inverse relation, and a missing one points at
    # a sentinel entry of p_y that stays 0
    pos = np.minimum(np.searchsorted(D, D + W), n - 1)
    has = np.flatnonzero(D[pos] == D + W)
    below = np.arange(n)
    below[has] = pos[has]
    above = np.full(n, n)
    above[pos[has]] = has
    flat = features.reshape(H * W, C)
    tau = np.float32(0.25)
    for c in range(C):
        cancel.check()
        f = np.asarray(flat[D, c], dtype=np.float32)
        out[:, c] = _chambolle(f, no_right, below, above, float(lam), tau, eps, max_iter)
    return out


def _chambolle(f: np.ndarray, no_right: np.ndarray, below: np.ndarray, above: np.ndarray,
               lam: float, tau: np.float32, eps: float, max_iter: int) -> np.ndarray:
    """One plane's iterations (module docstring), in float32 like skimage's, in place where
    it can (each pass over the domain costs about as much as the arithmetic)."""
    n = f.size
    px = np.zeros(n, np.float32)
    py = np.zeros(n + 1, np.float32)      # py[n]: the sentinel read by pixels with none above
    pyn = py[:n]
    d = np.zeros(n, np.float32)
    u = f.copy()
    gx = np.zeros(n, np.float32)
    norm = np.empty(n, np.float32)
    tmp = np.empty(n, np.float32)
    scale = np.float32(tau / lam)
    e_init = e_prev = 0.0
    for i in range(max_iter):
        if i > 0:
            # d = −div p: p_y of the pixel above − p_y − p_x + p_x of the left neighbour
            # (a pixel with no right neighbour has p_x = 0, so the previous index is safe)
            np.subtract(py[above], pyn, out=d)
            d -= px
            d[1:] += px[:-1]
            np.add(f, d, out=u)
        energy = float(np.dot(d, d))
        np.subtract(u[1:], u[:-1], out=gx[:-1])
        gx[no_right] = 0.0
        gy = u[below]
        gy -= u
        np.multiply(gx, gx, out=norm)
        np.multiply(gy, gy, out=tmp)
        norm += tmp
        np.sqrt(norm, out=norm)
        energy += lam * float(norm.sum())
        norm *= scale
        norm += 1.0
        gx *= tau
        px -= gx
        px /= norm
        gy *= tau
        pyn -= gy
        pyn /= norm
        energy /= n
        if i == 0:
            e_init = e_prev = energy
        elif abs(e_prev - energy) < eps * e_init:
            break
        else:
            e_prev = energy
    return u
