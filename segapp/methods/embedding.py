"""Rows of a spectral embedding scaled to unit length before they are clustered.

Ng, Jordan & Weiss (NIPS 2002); FAST-GE Fig. 2 steps 8–10; SCACS Algorithm 1 step 12. A row
``x_i`` of the embedding becomes ``x_i / ‖x_i‖``, so k-means compares directions, not lengths
(which vary with the degrees and with how well the vectors represent a point). A zero row stays
zero. Used by the landmark methods' sampled partition
(:func:`segapp.methods.landmark_base.round_landmark_embedding`) and by CCSKL's k-means on ``FΛ^{1/2}``.
"""

from __future__ import annotations

import numpy as np


def normalise_rows(X: np.ndarray) -> np.ndarray:
    """``X`` (n × m) with every non-zero row scaled to unit Euclidean length."""
    lengths = np.sqrt(np.einsum("ij,ij->i", X, X))
    return X / np.where(lengths > 0, lengths, 1.0)[:, None]
