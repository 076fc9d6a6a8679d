"""Weighted graphs and their Laplacians: what the graph methods' solvers see.

The solver only ever sees a symmetric sparse adjacency matrix ``W`` (zero diagonal,
non-negative weights) through its Laplacian and degrees, so any weighted graph works: the
pixel grid of :mod:`segapp.graphs.image` is one source, k-nearest-neighbour point clouds
(``benchmarks/synthetic.py``) or any adjacency given to :func:`segapp.cluster` are others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError


def laplacian(W: sp.spmatrix) -> sp.csr_matrix:
    """Combinatorial Laplacian ``L = D - W`` of a symmetric adjacency matrix.

    Row sums are zero and ``xᵀLx = Σ_{i<j} w_ij (x_i − x_j)²`` (FAST-GE eq. 2 counts each
    edge once per ordered pair; we count each undirected edge once).
    """
    W = sp.csr_matrix(W)
    d = np.asarray(W.sum(axis=1)).ravel()
    return (sp.diags(d) - W).tocsr()


@dataclass
class Graph:
    """The data graph G_D as the solver sees it: Laplacian, degrees, and the shape of the data.

    Attributes
    ----------
    laplacian : scipy.sparse.csr_matrix
        ``L_D = D − W``, n × n; for images n = H·W, pixels in row-major order.
    degrees : ndarray, shape (n,)
        ``d_i = Σ_j w_ij``.
    shape : tuple of int
        ``(H, W)`` for an image, ``(n,)`` for any other graph; labels and eigenvectors of a
        result come back in this shape.
    sigma : float
        The RBF width used (NaN for a graph given as an adjacency matrix).
    offsets : list of (dy, dx)
        The half-neighbourhood of grid offsets that define an image graph's edges.
    """

    laplacian: sp.csr_matrix
    degrees: np.ndarray
    shape: tuple[int, ...]
    sigma: float = float("nan")
    offsets: list[tuple[int, int]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return int(self.degrees.shape[0])


def _real_matrix(W: object) -> sp.csr_matrix:
    """``W`` as a float64 CSR matrix; strings, objects, ragged lists, dates and complex
    weights are refused (a cast would drop an imaginary part silently)."""
    from ..inputs.checks import as_numeric_array
    if sp.issparse(W):
        as_numeric_array(np.zeros(0, W.dtype), "adjacency")      # checks the dtype only
        return sp.csr_matrix(W, dtype=np.float64)
    A = as_numeric_array(W, "adjacency")
    if A.ndim != 2:
        raise InvalidInputError(f"adjacency must be a square 2-D matrix; got shape {A.shape}")
    return sp.csr_matrix(A, dtype=np.float64)


def graph_from_adjacency(W: sp.spmatrix | np.ndarray) -> Graph:
    """Wrap any symmetric, non-negative adjacency matrix (k-NN graphs, point clouds, meshes).

    Raises
    ------
    InvalidInputError
        If ``W`` is not square and symmetric with finite non-negative weights, or a vertex
        has no edge (degree 0: the merge weights of §4.7 divide by ``d_min``).
    """
    W = _real_matrix(W)
    if W.shape[0] != W.shape[1] or W.shape[0] < 2:
        raise InvalidInputError(f"adjacency must be square with n ≥ 2; got shape {W.shape}")
    W.setdiag(0)
    W.eliminate_zeros()
    if W.nnz and (not np.all(np.isfinite(W.data)) or W.data.min() < 0):
        raise InvalidInputError("adjacency weights must be finite and non-negative")
    if abs(W - W.T).max() > 1e-10 * max(abs(W).max(), 1e-300):
        raise InvalidInputError("adjacency matrix must be symmetric")
    L = laplacian(W)
    d = L.diagonal().copy()
    if d.min() <= 0:
        raise InvalidInputError(f"{int(np.sum(d <= 0))} vertices have no edges (degree 0)")
    return Graph(L, d, (W.shape[0],))
