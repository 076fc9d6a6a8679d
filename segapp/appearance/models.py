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
evaluated per bin and gathered per pixel: at 0.25 MP a photo has 10–60 thousand bins.

Per edit (:class:`LabelModels`) only the labels whose pixels changed are fitted and evaluated
again — an added stroke changes one label — and the others' mixtures and log-densities per bin
are kept under the exact weights they were fitted to, so the answer does not depend on the
edit history. On the coffee sample at 0.25 MP with 5 labels an added stroke's colour models
took a median 0.013 s in the app's edits where fitting and evaluating every label took 0.117 s
(load 1.3–1.7, CHANGELOG.md); most of what remains is gathering the (n, k) posteriors.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .mixture import COVARIANCE_FLOOR, Mixture, fit_mixture, row_max, row_sum

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
    def of(cls, lab: np.ndarray, widths: tuple[float, ...] = BIN) -> "ColourPalette":
        """From colours (n, c) in CIE Lab (c = 3) or L* (c = 1), or any features (n, c)
        with a bin width per column (``widths``; :data:`BIN` for Lab)."""
        f = np.asarray(lab, np.float64)
        c = f.shape[1]
        # column by column: a reduction or a broadcast over (n, c) costs several times more
        lo = [f[:, j].min() for j in range(c)]
        span = [int((f[:, j].max() - lo[j]) / widths[j]) + 1 for j in range(c)]
        key = np.zeros(f.shape[0], np.int64)
        for j in range(c):            # each channel's bin ⌊(x − min) / width⌋, row-major key
            key *= span[j]
            key += ((f[:, j] - lo[j]) / widths[j]).astype(np.int64)   # ≥ 0: truncation = floor
        index, counts = _dense_ranks(key, math.prod(span))
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


#: Keys of at most this many possible bins are ranked by counting, more by sorting.
_DENSE_KEYS = 1 << 22


def _dense_ranks(key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True, return_counts=True)[1:]`` for keys in
    ``[0, size)``: each key's rank among the distinct keys (int32) and the count of each.
    By counting (O(n + size)) where ``size`` is at most :data:`_DENSE_KEYS` — a photo's Lab
    bins are about 10⁵ — instead of sorting (a quarter of the time at 0.25 MP)."""
    if size > _DENSE_KEYS:
        _, index, counts = np.unique(key, return_inverse=True, return_counts=True)
        return index.ravel().astype(np.int32), counts
    counts = np.bincount(key, minlength=size)
    present = counts > 0
    rank = np.cumsum(present, dtype=np.int32)
    rank -= 1
    return rank[key], counts[present]


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
    return _posteriors(palette, [None if m is None else m.log_density(palette.colours)
                                 for m in models])


class LabelModels:
    """The labels' colour models of one image, refitted only where a label's pixels changed.

    :meth:`posteriors` is ``label_posteriors(palette, fit_label_models(palette, weights,
    components, noise))``, bit for bit, but keeps each label's mixture and its log-density
    on the palette's bins under the exact key of what the fit reads: the label's bins of
    positive weight and their weights. A new stroke changes one label's weights, so an edit
    fits and evaluates one mixture instead of k; an undo finds the models it had. The fit
    is a function of that key alone (:func:`~segapp.appearance.mixture.fit_mixture` is
    deterministic), so the answer does not depend on the edit history.

    At most :data:`KEPT` fits are kept (least recently used first out), each a mixture, one
    float per bin and a key of 12 bytes per bin learnt from: bounded by the image, not by the
    edits (0.25 MP: at most 32 × 0.1 MB after painted-only fits).
    """

    #: Fits kept between edits.
    KEPT = 32

    def __init__(self, palette: ColourPalette, components: int = COMPONENTS,
                 noise: np.ndarray | float = 0.0) -> None:
        self.palette = palette
        self.components = components
        self.noise = noise
        self._fits: OrderedDict[tuple[bytes, bytes], tuple[Mixture | None, np.ndarray | None]]
        self._fits = OrderedDict()

    def fit(self, weights: np.ndarray) -> list[tuple[Mixture | None, np.ndarray | None]]:
        """Per label (columns of ``weights`` (b, k), as :func:`fit_label_models`): its
        mixture and log-density on the palette's bins (None, None without weight)."""
        out = []
        for w in np.asarray(weights, np.float64).T:
            bins = np.flatnonzero(w > 0)
            key = (bins.astype(np.int32).tobytes(), w[bins].tobytes())
            hit = self._fits.get(key)
            if hit is None:
                [m] = fit_label_models(self.palette, w[:, None], self.components, self.noise)
                hit = (m, None if m is None else m.log_density(self.palette.colours))
                self._fits[key] = hit
                while len(self._fits) > self.KEPT:
                    self._fits.popitem(last=False)
            else:
                self._fits.move_to_end(key)
            out.append(hit)
        return out

    def posteriors(self, weights: np.ndarray, log_priors: np.ndarray | None = None
                   ) -> np.ndarray:
        """(n, k): every pixel's label posteriors under the labels' models fitted to
        ``weights`` (b, k) (:func:`label_posteriors`), with the labels' prior
        probabilities ``exp(log_priors)`` (k,) if given, else equal ones."""
        logs = [logs for _, logs in self.fit(weights)]
        if log_priors is not None:
            logs = [None if lg is None else lg + lp for lg, lp in zip(logs, log_priors)]
        return _posteriors(self.palette, logs)


def _posteriors(palette: ColourPalette, logs: list[np.ndarray | None]) -> np.ndarray:
    """(n, k) posteriors from each label's log-density on the palette's bins (None: no
    model), normalised per bin and gathered per pixel."""
    k = len(logs)
    post = np.stack([np.full(palette.colours.shape[0], -np.inf) if lg is None else lg
                     for lg in logs], 1)
    top = row_max(post)
    if not np.isfinite(top).all():       # a colour no label explains: no label has a model
        return np.full((palette.n, k), 1.0 / k)
    post -= top[:, None]
    np.exp(post, out=post)
    post /= row_sum(post)[:, None]
    return np.take(post, palette.index, axis=0)
