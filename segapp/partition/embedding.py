"""The embedding of generalized eigenvectors (FAST-GE Fig. 2) and the potentials read from it.

Each eigenvector ``x`` loses its d-weighted mean (``x ← x − (dᵀx / dᵀ1)·1``, the representative
of ``x + c1`` the generalized Cheeger inequality of §5 is stated for), is scaled to
``xᵀ L_H x = 1``, and each row of the n × m result is scaled to unit length (after Lee, Oveis
Gharan & Trevisan 2012), so that the points concentrate in k directions on the sphere; k-means
then separates them (§4.6). :func:`embedding_potentials` reads the strokes' random-walker
potentials back from the embedding (issue 22).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only (see segapp.partition)
    from ..solve.pencil import Pencil


def embed(X: np.ndarray, pencil: Pencil) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FAST-GE embedding (Fig. 2).

    Returns the row-normalised ``U`` (n × m), the row norms ``l`` and the column-normalised
    vectors before row normalisation (steps 1–7; what the heatmaps show).
    """
    X = np.asarray(X, dtype=np.float64)
    n, m = X.shape
    d = pencil.degrees
    # The m columns laid out contiguously (V is returned as this array's transpose): every
    # step below is then m long passes, not n passes of m values (~1.5× faster at m = 4).
    VT = np.empty((m, n))
    np.subtract(X.T, ((d @ X) / d.sum())[:, None], out=VT)           # pencil.project
    # xᵀ L_H x = xᵀ B x on dᵀx = 0 (segapp.solve.pencil): the diagonal part as one product
    # with the squares, the cannot-link part on the stroke rows alone.
    quad = ((VT * VT) @ d) / pencil.n
    if pencil.cl is not None:
        quad += pencil.cl.quadratic(VT.T)
    VT /= np.sqrt(np.maximum(quad, np.finfo(float).tiny))[:, None]
    lengths = np.sqrt(np.einsum("ji,ji->i", VT, VT))
    U = np.empty((n, m))                                 # row-major: k-means reads rows
    np.divide(VT, np.where(lengths > 0, lengths, 1.0), out=U.T)
    return U, lengths, VT.T


def embedding_potentials(V: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    """The strokes' potentials read from the embedding: barycentric coordinates (n × k).

    Each row ``v_i`` of the embedding (n × m) is written as the affine combination
    ``v_i ≈ Σ_a φ_a(i) v̄_a``, ``Σ_a φ_a(i) = 1``, of the stroke means ``v̄_a`` (the mean of
    ``V`` over label a's painted rows): ``[φ(i) 1]`` solves ``[V̄ 1]ᵀ``-systems, i.e.
    ``Φ = [V 1] A`` with ``[V̄ 1] A = I_k`` (a least-squares, minimum-norm ``A`` when
    m ≠ k − 1 or the means are affinely dependent).

    For FAST-GE's harmonic solve this is exact: its k − 1 Ritz vectors and the constant span
    ``span{E_a + φ_a}`` (:mod:`segapp.solve.harmonic`), each ``E_a + φ_a`` is 1 on label a's
    strokes and 0 on the others', so the affine map fixed by the stroke means gives back the
    random-walker potentials ``φ_a`` themselves (Grady 2006, on FAST-GE's graph): the
    probability that a random walk from pixel i reaches label a's strokes first. For other
    solves (LOBPCG) it is their affine reading in the same sense.
    """
    V = np.asarray(V, dtype=np.float64)
    k = len(sets)
    means = np.array([V[S].mean(axis=0) for S in sets])                 # k × m
    M = np.hstack([means, np.ones((k, 1))])                              # k × (m + 1)
    A = np.linalg.lstsq(M, np.eye(k), rcond=None)[0]                     # (m + 1) × k
    return V @ A[:-1] + A[-1]
