r"""Per-label colour models and the posterior they give every pixel.

Each label a gets a Gaussian mixture ``p(c | a)`` of the CIE Lab colours of its pixels
(:mod:`segapp.appearance.mixture`), and every pixel i the posterior of equal label priors

.. math:: P_a(i) = \frac{p(c_i \mid a)}{\sum_b p(c_i \mid b)},

which :mod:`segapp.solve.harmonic` adds to the strokes' Dirichlet problem. Which pixels a
model learns from (the painted ones, the current answer) is the caller's choice
(:mod:`segapp.methods.fastge`).

Colours are quantised once per image (:class:`ColourPalette`: bins of 1 unit of L* and 2 of
a*, b*, far below the mixtures' :data:`~segapp.appearance.mixture.COVARIANCE_FLOOR`), so a fit
reads each distinct colour once with the number of its pixels as weight, and a posterior is
evaluated per bin and gathered per pixel: at 0.25 MP a photo has 20–60 thousand bins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mixture import COVARIANCE_FLOOR, Mixture, fit_mixture

#: Bin widths of :class:`ColourPalette` in L*, a*, b* (grey: L* only).
BIN = (1.0, 2.0, 2.0)
#: Gaussian components per label (GrabCut's five).
COMPONENTS = 5


@dataclass(frozen=True)
class ColourPalette:
    """An image's colours, quantised once: distinct bins and the bin of each pixel.

    Attributes
    ----------
    colours : ndarray (b, c)
        Mean colour of the pixels in each bin.
    index : ndarray (n,)
        Each pixel's bin.
    counts : ndarray (b,)
        Pixels per bin.
    """

    colours: np.ndarray
    index: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, lab: np.ndarray) -> "ColourPalette":
        """From colours (n, c) in CIE Lab (c = 3) or L* (c = 1)."""
        f = np.asarray(lab, np.float64)
        c = f.shape[1]
        q = np.floor((f - f.min(0)) / np.asarray(BIN[:c])).astype(np.int64)
        span = q.max(0) + 1
        key = q[:, 0]
        for j in range(1, c):
            key = key * span[j] + q[:, j]
        _, index, counts = np.unique(key, return_inverse=True, return_counts=True)
        index = index.ravel().astype(np.int32)
        colours = np.stack([np.bincount(index, f[:, j], counts.size) for j in range(c)], 1)
        return cls(colours / counts[:, None], index, counts)

    @property
    def n(self) -> int:
        return int(self.index.shape[0])

    def bin_weights(self, codes: np.ndarray, k: int) -> np.ndarray:
        """(b, k): each label's pixels counted per bin; ``codes`` (n,) are labels 0..k−1, or
        −1 for a pixel no label learns from."""
        sel = codes >= 0
        flat = np.bincount(self.index[sel] * k + codes[sel], None, self.counts.size * k)
        return flat.reshape(-1, k)

    def bin_sums(self, pixel_weights: np.ndarray) -> np.ndarray:
        """(b, k): each column of ``pixel_weights`` (n, k) summed per bin (soft
        :meth:`bin_weights`: a pixel may count for several labels)."""
        b = self.counts.size
        return np.stack([np.bincount(self.index, pixel_weights[:, a], b)
                         for a in range(pixel_weights.shape[1])], 1)


def fit_label_models(palette: ColourPalette, weights: np.ndarray,
                     components: int = COMPONENTS, noise: np.ndarray | float = 0.0
                     ) -> list[Mixture | None]:
    """One mixture per label from the per-bin weights (b, k) of :meth:`ColourPalette.bin_weights`
    (None for a label with no weight).

    ``noise`` (per channel, Lab units) is the image's noise: its variance joins every
    component's covariance floor, because a label's colours are known no better than the
    noise lets a few pixels show them — a click's one noisy pixel must not make a model of
    one exact colour, which would give the answer for a click and for a small disc there
    different priors.
    """
    floor = COVARIANCE_FLOOR + np.square(np.asarray(noise, np.float64))
    return [fit_mixture(palette.colours, weights[:, a], components, floor=floor)
            for a in range(weights.shape[1])]


def label_posteriors(palette: ColourPalette, models: list[Mixture | None]) -> np.ndarray:
    """(n, k): ``P_a(i)`` of the module doc for every pixel (rows sum to 1). A label without a
    model explains no colour (posterior 0), unless no label has one (uniform)."""
    k = len(models)
    logs = np.full((palette.colours.shape[0], k), -np.inf)
    for a, m in enumerate(models):
        if m is not None:
            logs[:, a] = m.log_density(palette.colours)
    if not np.isfinite(logs).any(axis=1).all():
        return np.full((palette.n, k), 1.0 / k)
    post = np.exp(logs - logs.max(1, keepdims=True))
    post /= post.sum(1, keepdims=True)
    return post[palette.index]
