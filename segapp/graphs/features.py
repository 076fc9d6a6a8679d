"""Feature vectors of the data points the landmark methods work on (images or (n, f) arrays).

Every data point is a feature vector ``x_i ∈ R^f``. For
:meth:`segapp.methods.base.Method.from_data` they are given. For an image, pixel ``i`` at row
``y``, column ``x`` with colour ``c_i`` (RGB or grey in [0, 1]) gets

.. math:: x_i = \\Bigl(\\frac{c_i}{s_c},\\; \\omega\\,\\frac{(y, x)}{s_p}\\Bigr),

where ``s_c`` is the RMS deviation of the colours from their mean (summed over channels) and
``s_p`` that of the pixel positions (both axes together), and ω = ``spatial_weight``. Each group
then has unit total variance, so ω is the ratio of spatial to colour spread, independent of the
image's size, contrast and channel count: the same photograph at 250K and at 12M pixels gives the
same features up to sampling. ``s_c`` is measured on a regular sub-grid of at most 2^20 pixels
(deterministic). A flat image (``s_c = 0``) uses ``s_c = 1``.

Features are produced in chunks of :data:`CHUNK` rows and never stored for all n points.

Units
-----
Features given as an array are used in units of :attr:`Features.unit`, the power of two at or
above their largest magnitude: ``rows`` returns ``X / unit``, every entry in [−1, 1]. The
coding is invariant to the scale of the features (its width is a mean distance times
``sigma_scale``; a given ``sigma`` is divided by ``unit`` too), and dividing by a power of two
is exact, so well-scaled data give the same bits as before; what changes is that squared
distances of features near 1e155 no longer overflow (issue 30: a broadcasting error in the
coding) and those of features near 1e-160 no longer underflow to 0.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..errors import InvalidInputError
from ..inputs.checks import as_numeric_array

#: Rows produced at a time by every pass over the n points.
CHUNK = 1 << 19


class Features(ABC):
    """n feature vectors, produced on demand by row index or in chunks."""

    n: int
    dim: int
    #: Feature units per unit of :meth:`rows` (module notes); 1 for images.
    unit: float = 1.0

    @abstractmethod
    def rows(self, index: np.ndarray) -> np.ndarray:
        """The feature vectors of the given points, (len(index), dim) float64."""

    def chunk(self, lo: int, hi: int) -> np.ndarray:
        return self.rows(np.arange(lo, hi))


class ArrayFeatures(Features):
    """Features given as an (n, f) array, in units of their largest magnitude (module notes;
    otherwise as they are: weigh their columns yourself)."""

    def __init__(self, X: np.ndarray) -> None:
        if isinstance(X, (str, bytes)):
            raise InvalidInputError(f"features must be an (n, f) array with n ≥ 2; got "
                                    f"{type(X).__name__}")
        X = as_numeric_array(X, "features")     # ragged rows, complex, dates: refused
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise InvalidInputError(f"features must be an (n, f) array with n ≥ 2; got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise InvalidInputError("features contain NaN or infinite values")
        self.X = X
        self.n, self.dim = X.shape
        top = float(np.max(np.abs(X))) if X.size else 0.0
        self.unit = float(np.ldexp(1.0, int(np.frexp(top)[1]))) if top > 0 else 1.0

    def rows(self, index: np.ndarray) -> np.ndarray:
        return np.asarray(self.X[index], dtype=np.float64) / self.unit

    def chunk(self, lo: int, hi: int) -> np.ndarray:
        return np.asarray(self.X[lo:hi], dtype=np.float64) / self.unit


class ImageFeatures(Features):
    """Colour + scaled position of every pixel of an (H, W) or (H, W, 3) image (module notes)."""

    def __init__(self, image: np.ndarray, spatial_weight: float = 0.25) -> None:
        img = np.asarray(image, dtype=np.float32)
        if img.ndim == 2:
            img = img[:, :, None]
        self.image = img
        self.H, self.W, self.channels = img.shape
        self.n = self.H * self.W
        self.dim = self.channels + 2
        step = max(1, int(np.ceil(np.sqrt(self.n / float(1 << 20)))))
        sub = img[::step, ::step].reshape(-1, self.channels).astype(np.float64)
        s_c = float(np.sqrt(sub.var(axis=0).sum()))
        self.color_scale = 1.0 / s_c if s_c > 1e-12 else 1.0
        # RMS deviation of a uniform position on 0..N-1 is sqrt((N² − 1)/12), per axis.
        s_p = float(np.sqrt((self.H ** 2 - 1) / 12.0 + (self.W ** 2 - 1) / 12.0))
        self.position_scale = float(spatial_weight) / s_p

    @property
    def shape(self) -> tuple[int, int]:
        return self.H, self.W

    def rows(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        out = np.empty((index.size, self.dim))
        y, x = np.divmod(index, self.W)
        out[:, : self.channels] = self.image.reshape(-1, self.channels)[index]
        out[:, : self.channels] *= self.color_scale
        out[:, self.channels] = y * self.position_scale
        out[:, self.channels + 1] = x * self.position_scale
        return out
