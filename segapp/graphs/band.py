r"""The image graph's Dirichlet problem on a set of pixels (a band), built without the rest.

The maths
---------
Let ``L = D − W`` be the image graph of :func:`segapp.graphs.image.image_graph` on the full
grid, ``U`` a set of pixels whose values are unknown and ``K`` all the others, whose values
``y_K`` are given. The harmonic extension of ``y_K`` into ``U`` solves

.. math:: L_{UU}\, x_U = -L_{UK}\, y_K = W_{UK}\, y_K ,

with ``L_UU = D_U − W_UU``: every pixel of U keeps its full degree (edges to K included), so
``L_UU`` is positive definite as soon as one pixel of each connected part of U has a
neighbour in K (the weights are floored at :data:`~segapp.graphs.image.MIN_WEIGHT`). Only
the rows of U are needed, and of K only the pixels next to U: for a band around the region
boundaries of a 12-megapixel photo that is 3–6% of the pixels, so the problem is built and
solved without ever forming the 12M-row Laplacian (1.3 GB).

Weights are exactly those of ``image_graph`` (the same :func:`~segapp.graphs.image.affinity`
of the same features, offsets and σ): ``tests/inputs/test_refine.py`` checks ``L_UU`` and the
right-hand side against the full Laplacian's rows.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from .image import affinity


class BandGraph:
    """The pattern of ``L_UU`` and the pixels next to U, for one band: everything of
    :func:`band_system` that does not depend on the features (so a factorization can be
    analysed while the features are computed: :mod:`segapp.inputs.refine`).

    Parameters
    ----------
    shape : (H, W)
    offsets : list of (dy, dx)
        The half-neighbourhood (``Graph.offsets``); both directions are used.
    unknown : ndarray of int, sorted, unique
        Flat (row-major) indices of U.

    Attributes
    ----------
    indptr, indices : ndarray of int32
        The upper triangle of ``L_UU`` (diagonal included) as CSR with sorted columns — in
        CSC the lower triangle, what a Cholesky factorization reads.
    """

    def __init__(self, shape: tuple[int, int], offsets: list[tuple[int, int]],
                 unknown: np.ndarray) -> None:
        H, W = shape
        self.shape = (H, W)
        self.unknown = U = np.asarray(unknown, dtype=np.int64)
        nu = U.size
        where = np.full(H * W, -1, dtype=np.int32)   # flat index -> row of U (or -1)
        where[U] = np.arange(nu, dtype=np.int32)
        uy, ux = np.divmod(U, W)
        # Upper neighbours in increasing flat offset: each row's columns come out sorted (U
        # is sorted, and `where` increases on it).
        self.up = up = sorted({(dy, dx) if (dy, dx) > (0, 0) else (-dy, -dx)
                               for dy, dx in offsets}, key=lambda o: o[0] * W + o[1])
        cols = np.full((len(up) + 1, nu), -1, dtype=np.int32)   # slot-major: contiguous
        cols[0] = np.arange(nu, dtype=np.int32)
        #: per direction: neighbour indices (a neighbour outside the image points back at
        #: the pixel itself), which are outside, which rows see a known pixel there, and
        #: the row of U there (-1: not in U)
        self.steps: list[tuple[tuple[int, int], np.ndarray, np.ndarray, np.ndarray,
                               np.ndarray]] = []
        for dy, dx in up + [(-dy, -dx) for dy, dx in up]:
            outside = (uy + dy < 0) | (uy + dy >= H) | (ux + dx < 0) | (ux + dx >= W)
            q = U + (dy * W + dx)
            q[outside] = U[outside]
            loc = np.take(where, q)
            inside = (loc >= 0) & ~outside
            loc[~inside] = -1
            if (dy, dx) in up:
                cols[up.index((dy, dx)) + 1][inside] = loc[inside]
            self.steps.append(((dy, dx), q, outside, np.flatnonzero(~(inside | outside)), loc))
        self._keep = cols >= 0
        self.indptr = np.zeros(nu + 1, dtype=np.int32)
        np.cumsum(self._keep.sum(axis=0), out=self.indptr[1:])
        self.indices = cols.T[self._keep.T]
        # The edges to known pixels, with each known pixel once (sorted), found here, beside
        # the features in the refinement (np.unique in system() was a tenth of it): marked
        # on the grid, then numbered in `where`, whose U entries are not read again.
        self._to_known = np.concatenate([rows for *_, rows, _loc in self.steps])
        ends = np.concatenate([q[rows] for _o, q, _out, rows, _loc in self.steps])
        mark = np.zeros(H * W, dtype=bool)
        mark[ends] = True
        self.known = np.flatnonzero(mark)
        where[self.known] = np.arange(self.known.size, dtype=np.int32)
        self._known_at = np.take(where, ends)

    def system(self, features: np.ndarray, sigma: float,
               known: Callable[[np.ndarray], np.ndarray]) -> tuple[sp.csr_matrix, np.ndarray]:
        """``(L_UU, W_UK y_K)`` on this pattern (see :func:`band_system`)."""
        H, W = self.shape
        F = features.reshape(H * W, -1)
        U, up = self.unknown, self.up
        nu = U.size
        FU = np.take(F, U, axis=0)
        vals = np.empty((len(up) + 1, nu), dtype=np.float64)
        degrees = vals[0]
        degrees[:] = 0.0
        k_w = []
        weights = {}
        for (dy, dx), q, outside, rows, loc in self.steps:
            if (-dy, -dx) in weights:
                # an edge inside U was weighed from its other end (its upper direction):
                # the same number (the squared difference's sign does not matter); only the
                # edges to known pixels are new
                w = np.take(weights[(-dy, -dx)], loc)     # loc = -1 rows: set below
                d = np.take(FU, rows, axis=0) - np.take(F, q[rows], axis=0)
                w[rows] = affinity(np.einsum("ij,ij->i", d, d), sigma)
                w[outside] = 0.0
            else:
                # every row at once (whole-array operations, no row selection: 2-3x faster)
                d = FU - np.take(F, q, axis=0)
                w = affinity(np.einsum("ij,ij->i", d, d), sigma).astype(np.float64)
                w[outside] = 0.0
                weights[(dy, dx)] = w
            degrees += w
            if (dy, dx) in up:
                vals[up.index((dy, dx)) + 1] = -w
            k_w.append(w[rows])
        A = sp.csr_matrix((vals.T[self._keep.T], self.indices, self.indptr), shape=(nu, nu))
        A.has_sorted_indices = True
        y = np.asarray(known(self.known), dtype=np.float64).reshape(self.known.size, -1)
        # W_UK y_K: each edge's weighted value, summed per row of U (column by column)
        wy = np.take(np.ascontiguousarray(y.T), self._known_at, axis=1)
        wy *= np.concatenate(k_w)
        b = np.empty((nu, y.shape[1]))
        for c in range(y.shape[1]):
            b[:, c] = np.bincount(self._to_known, weights=wy[c], minlength=nu)
        return A, b


def band_system(features: np.ndarray, sigma: float, offsets: list[tuple[int, int]],
                unknown: np.ndarray, known: Callable[[np.ndarray], np.ndarray]
                ) -> tuple[sp.csr_matrix, np.ndarray]:
    """``(L_UU, W_UK y_K)`` of the image graph for the unknown pixels ``unknown``.

    Parameters
    ----------
    features : ndarray (H, W, c) float32
        The pixels' features (as ``image_graph`` uses them: colours or grey, denoised).
    sigma : float
        The RBF width (``Graph.sigma`` of the graph this stands for).
    offsets : list of (dy, dx)
        The half-neighbourhood (``Graph.offsets``); both directions are used.
    unknown : ndarray of int, sorted, unique
        Flat (row-major) indices of U.
    known : callable
        ``known(idx)`` gives the values ``y`` (len(idx) × m) of the known pixels ``idx``
        (flat indices, each next to U), each asked for once.

    Returns
    -------
    A : csr_matrix (|U| × |U|), sorted indices
        The upper triangle of ``L_UU`` (diagonal included) — in CSC the lower triangle, what a
        Cholesky factorization reads; :func:`symmetric` gives the whole matrix.
    b : ndarray (|U| × m)
        ``W_UK y_K``.
    """
    return BandGraph(features.shape[:2], offsets, unknown).system(features, sigma, known)


def symmetric(upper: sp.csr_matrix) -> sp.csr_matrix:
    """The whole symmetric matrix of :func:`band_system`'s upper triangle."""
    return (upper + sp.triu(upper, k=1, format="csr").T).tocsr()
