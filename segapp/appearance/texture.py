r"""Texture features for the labels' appearance models: local contrast of L* at a few scales.

A pixel's colour says nothing of how its neighbourhood varies: grass and a smooth green
wall, a zebra's stripes and a black-and-white sign. The cheapest descriptor of that is the
local standard deviation of the lightness L* in a Gaussian window of scale σ,

.. math:: s_σ(i) = \sqrt{\max\bigl(0,\ (G_σ * L^2)(i) − (G_σ * L)(i)^2\bigr)},

the root of the windowed variance (``G_σ`` the normalised Gaussian, ``*`` convolution,
borders reflected). :func:`texture_features` stacks ``w · s_σ`` for the scales of
:data:`SCALES` as extra columns after a pixel's CIE Lab colour, so that the per-label
Gaussian mixtures of :mod:`segapp.appearance.models` model colour and texture jointly;
``w`` (FAST-GE's ``texture``) sets their units against the colours' (one unit of L* std per
unit of L* at ``w = 1``): where two labels' texture spreads overlap, the texture columns
barely change the posterior ratio; where they separate, they do. The mixtures' covariance
floor (:data:`~segapp.appearance.mixture.COVARIANCE_FLOOR`) applies to them too, so a
smaller ``w`` makes a texture difference count less.

Computed once per image at the working resolution (two separable Gaussian filters of two
images per scale: a few ms at 0.25 MP), never per edit.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

#: Gaussian window scales σ (pixels of the working resolution) of the local contrast.
SCALES = (1.5, 3.0)
#: Palette bin width of a texture column (scaled units; as a*, b*'s).
BIN = 2.0


def local_std(lightness: np.ndarray, sigma: float) -> np.ndarray:
    """``s_σ`` of the module doc for an image of lightness (h, w): float64 (h, w)."""
    L = np.asarray(lightness, np.float64)
    mean = ndimage.gaussian_filter(L, sigma, mode="reflect")
    var = ndimage.gaussian_filter(L * L, sigma, mode="reflect")
    var -= mean * mean
    np.maximum(var, 0.0, out=var)       # rounding may leave −1e-12 on a flat patch
    return np.sqrt(var, out=var)


def texture_features(lab: np.ndarray, shape: tuple[int, int], weight: float,
                     scales: tuple[float, ...] = SCALES) -> np.ndarray:
    """(n, len(scales)) float32: ``weight · s_σ`` of each pixel's L* (``lab[:, 0]``, raster
    order of ``shape``) for each scale σ."""
    L = np.asarray(lab)[:, 0].reshape(shape)
    return np.stack([(weight * local_std(L, s)).ravel() for s in scales], 1).astype(np.float32)
