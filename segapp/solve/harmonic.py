"""FAST-GE's eigenvectors from the strokes' harmonic potentials: k − 1 linear solves + Rayleigh–Ritz.

The maths (FAST-GE §4.3, §4.7)
------------------------------
With ``A = L_D + L_ML`` and ``B = D/n + L_CL`` on ``dᵀx = 0`` (:mod:`segapp.solve.pencil`), the
must-link cliques of §4.7 weigh every pair inside a label's strokes by ``c d_i d_j`` with
``c = 1/(d_min d_max)``: a stroke of t pixels is held together by a clique of total weight
``≈ t²``, while the image graph gives each pixel a degree of at most 8. Any vector that is
not nearly constant on each label's strokes pays that clique's energy, so the k − 1 wanted
eigenvectors are — to O(1/c) — constant on each label's strokes. Restricted to such vectors,
``L_ML`` vanishes and ``xᵀL_D x`` is minimised, for given stroke values ``y ∈ ℝᵏ``, by the
*harmonic extension*

.. math:: x = E y + Φ y, \\qquad L_{FF}\\, φ_a = -L_{F S_a} 1 \\quad (a = 1 … k),

(F: unpainted pixels, ``E``: the strokes' label indicators, ``φ_a``: the probability that a
random walk from a pixel reaches label a's strokes first — Grady's random-walker potentials
on FAST-GE's graph, ``Σ_a φ_a = 1``). So the wanted eigenvectors lie, to that accuracy, in
the k-dimensional space ``span{E_a + φ_a}``, which contains the constant vector. The
Rayleigh–Ritz procedure of the paper's own pencil ``(A, B)`` on that space (projected to
``dᵀx = 0``) returns its k − 1 Ritz pairs: upper bounds on the eigenvalues, equal to them in
the limit of stiff must-links. Measured on the coffee photo (44K px): Ritz values within
1e-5 (constraint weight 1) and 2e-3 (weight 1e-2) of LOBPCG's at ``eig_tol`` 1e-9, labels
100% equal; 250K px: 99.97% of the labels of that reference, 1.1M px / 5 labels: 99.98%
(the default LOBPCG: 99.2%).

This turns the eigenproblem into k − 1 linear solves with the *image's* Laplacian — no stiff
clique in the matrix. Two ways to do them:

* **direct** (:mod:`segapp.solve.direct`, when CHOLMOD is installed and the factor fits
  :data:`segapp.solve.direct.MAX_FACTORED_PIXELS`): the Dirichlet matrix factored once per
  image for a base stroke set, every edit solved exactly from that factor by a low-rank (Woodbury) update, and
  the factor brought to the new strokes in the background (:meth:`HarmonicSolver.prepare`)
  while the person looks at the answer;
* **iterative**: block CG preconditioned by one smoothed-aggregation V-cycle (12–13 CG steps
  from 44K to 1.1M px at ``cg_tol`` 1e-4, where block LOBPCG needed 10–32 iterations, each
  about twice as costly). It answers the first edit of an image (no factor yet), and every
  edit where the direct solver is missing or too big.

The system is solved on all n pixels, ``Ã x = b`` with ``Ã = Π L_D Π + (I − Π) D`` (Π: the
unpainted pixels; painted rows keep only their diagonal), so the matrix and its multigrid
hierarchy keep their shape from one stroke set to the next: a hierarchy built for earlier
strokes still preconditions the new system (:class:`HarmonicSolver` keeps it).

Appearance (issue 31)
---------------------
The labels' colour models (:mod:`segapp.appearance`) give every pixel a posterior
``P_a(i)``. They enter the pencil as k *anchor nodes*, one per label, each must-linked to
its label's strokes (so it takes their value) and joined to every unpainted pixel i with
weight ``γ d_i P_a(i)`` — a soft must-link to "the pixels that look like label a", in
FAST-GE's own ``L_ML`` term. Eliminating the anchors, the harmonic extension becomes Grady's
random walker with priors (Grady, CVPR 2005, "Multilabel random walker image segmentation
using prior models"):

.. math:: (L_{FF} + γ D_F)\\, φ_a = -L_{F S_a} 1 + γ D_F P_a,

still one symmetric positive definite matrix for every label and every prior, so the
factor, its per-stroke Woodbury updates and the multigrid hierarchy all apply unchanged
with ``L + γD`` in place of ``L`` (:class:`HarmonicSolver` ``shift`` = γ, fixed per image):
a new prior changes right-hand sides only, and the expectation–maximisation rounds of one
edit reuse one snapshot of the factor — which is why that snapshot (a cold factorization, or
the update of the base) can be made in a thread of its own while the colour models are
fitted (:meth:`HarmonicSolver.factor_ahead`). The Rayleigh–Ritz step adds the anchors' energy on
the trial space (:func:`anchor_gram`), so the eigenvalues shown are those of the pencil the
solve used. ``γ = appearance / n`` (:mod:`segapp.methods.fastge`): the prior's screening
length ``1/√(8γ)`` pixels grows with the image, so the colour models reach as far across a
large photo as a small one and never replace the strokes' own reach. A far larger γ (from
:data:`JACOBI_SHIFT`: the folder suggestion's smoothing, :mod:`segapp.appearance.carry`) makes
``L + γD`` so diagonally dominant that CG preconditioned by its diagonal converges in a few
dozen steps, with no factor or hierarchy to build: that is how it is solved.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np
import scipy.sparse as sp

from . import direct
from ..blas import one_blas_thread
from ..cancel import NEVER, CancelToken
from ..errors import Cancelled, SolverError
from .amg import DEFAULT_THETA, AMGPreconditioner, amg_preconditioner
from .diagnostics import SolverDiagnostics
from .lobpcg import column_norms, svqb
from .pencil import Pencil

#: SVQB's drop threshold in :func:`ritz_pairs`: the potentials always contain the constant
#: vector (Σ_a Y_a = 1), which the projection to dᵀx = 0 makes exactly dependent.
RITZ_DROP = 1e-10
#: From this shift γ on, the Dirichlet matrix of ``L + γD`` is diagonally dominant by a margin:
#: Jacobi-preconditioned, its condition number is at most ``(2 + γ)/γ`` (the normalized
#: Laplacian's spectrum lies in [0, 2]), so CG needs O(1/√γ) steps and no set-up, where a
#: factor or a hierarchy costs more than that whole solve (the folder suggestion, γ = 0.1 at
#: 0.5 MP: 0.3–0.5 s of CG from the prior against a 2.4 s factorization or a 1.4 s AMG set-up,
#: load 3–5). FAST-GE's γ = appearance / n stays far below it.
JACOBI_SHIFT = 0.01


def dirichlet_matrix(L: sp.csr_matrix, fixed: np.ndarray) -> sp.csr_matrix:
    """``Ã = Π L Π + (I − Π) diag(L)``: every edge touching a ``fixed`` pixel removed.

    Unpainted rows keep their full degree on the diagonal (the painted neighbours' pull is in
    the right-hand side); painted rows keep only the diagonal, so their unknowns decouple.
    """
    if not sp.isspmatrix_csr(L):
        L = sp.csr_matrix(L)
    cols = L.indices
    rows = np.repeat(np.arange(L.shape[0], dtype=cols.dtype), np.diff(L.indptr))
    keep = (rows == cols) | ~(fixed[rows] | fixed[cols])
    # Row pointer of the kept entries from per-row counts: a cumulative sum over all entries
    # holds the GIL (100 ms at 8.6M entries, the app's window frozen meanwhile); bincount
    # releases it, and the sum over rows is 9× shorter.
    indptr = np.zeros(L.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=L.shape[0]), out=indptr[1:])
    return sp.csr_matrix((L.data[keep], cols[keep], indptr.astype(L.indptr.dtype)),
                         shape=L.shape)


def stroke_rhs(L: sp.csr_matrix, fixed: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    """``b_a = −Π L 1_{S_a}``: the pull of label a's strokes on each unpainted pixel.

    ``L`` symmetric with sorted indices: column sums over the strokes are read from their rows
    (``Σ_{i∈S} L_ji = Σ_{i∈S} L_ij``), so only the stroke rows are touched instead of a product
    with all n (35 ms at 1.1M px); the terms are added in the order the product adds them
    (ascending i), so b is the same to the last bit.
    """
    n, k = L.shape[0], len(sets)
    if not L.has_sorted_indices:
        L = L.sorted_indices()
    keys, vals = [], []
    for a, S in enumerate(sets):
        S = np.sort(np.asarray(S, np.int64))
        start = L.indptr[S]
        counts = L.indptr[S + 1] - start
        idx = np.repeat(start - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        keys.append(L.indices[idx].astype(np.int64) * k + a)
        vals.append(L.data[idx])
    # one pass over the n × k result: entry (j, a) sums label a's terms in ascending i
    b = np.bincount(np.concatenate(keys) if keys else np.zeros(0, np.int64),
                    weights=np.concatenate(vals) if vals else None, minlength=n * k)
    b = -b.astype(np.float64, copy=False).reshape(n, k)   # (no strokes: bincount gives ints)
    b[fixed] = 0.0
    return b


def shifted(L: sp.csr_matrix, diagonal: np.ndarray) -> sp.csr_matrix:
    """``L + diag(diagonal)`` on L's own pattern when it stores its whole diagonal (a graph
    Laplacian does): the diagonal entries changed in a copy of the values, no sparse sum
    (0.1 s at 0.5 MP)."""
    rows = np.repeat(np.arange(L.shape[0], dtype=L.indices.dtype), np.diff(L.indptr))
    on = np.flatnonzero(L.indices == rows)
    if on.size != L.shape[0] or np.any(np.diff(rows[on]) != 1):
        return (L + sp.diags(diagonal)).tocsr()
    data = L.data.copy()
    data[on] += diagonal
    return sp.csr_matrix((data, L.indices, L.indptr), shape=L.shape)


def painted(n: int, sets: list[np.ndarray]) -> np.ndarray:
    """Boolean mask of the pixels that carry a stroke."""
    fixed = np.zeros(n, dtype=bool)
    for S in sets:
        fixed[S] = True
    return fixed


def with_strokes(Y: np.ndarray, fixed: np.ndarray, sets: list[np.ndarray]) -> np.ndarray:
    """``Y`` with each painted pixel set to its label's indicator (in place): ``E + Φ``."""
    Y[fixed] = 0.0
    for a, S in enumerate(sets):
        Y[S, a] = 1.0
    return Y


def block_pcg(A: sp.csr_matrix, M, b: np.ndarray, *, x0: np.ndarray | None = None,
              tol: float = 1e-4, maxiter: int = 300, cancel: CancelToken = NEVER
              ) -> tuple[np.ndarray, int, np.ndarray]:
    """Preconditioned conjugate gradients on every column of ``b`` at once.

    One sparse product and one V-cycle per step serve all columns; each column has its own
    step lengths (these are independent CG runs sharing the operator applications). Stops
    when every ``‖b_j − A x_j‖ ≤ tol ‖b_j‖``. Returns x, the steps taken and the relative
    residuals. ``M`` is applied as ``M(r)``: a preconditioner that checks a cancellation token
    comes with it bound (:func:`functools.partial`).
    """
    check = cancel.check
    bnorm = column_norms(b)
    bnorm = np.where(bnorm > 0, bnorm, 1.0)
    if x0 is None:
        x = np.zeros_like(b)
        r = b.copy()
    else:
        x = np.array(x0, dtype=np.float64)
        r = b - A @ x
    rel = column_norms(r) / bnorm
    if np.all(rel <= tol):
        return x, 0, rel
    z = M(r)
    p = z.copy()
    rz = np.einsum("ij,ij->j", r, z)
    for it in range(1, maxiter + 1):
        check()
        Ap = A @ p
        pAp = np.einsum("ij,ij->j", p, Ap)
        ok = pAp > 0
        alpha = np.where(ok, rz / np.where(ok, pAp, 1.0), 0.0)
        # In place through one scratch block: at 1.1M px the temporaries of `x += p * alpha`
        # cost a seventh of a step.
        np.multiply(p, alpha, out=z)
        x += z
        np.multiply(Ap, alpha, out=Ap)
        r -= Ap
        rel = column_norms(r) / bnorm
        if not np.all(np.isfinite(rel)):
            raise SolverError("the potentials' conjugate gradients produced non-finite values "
                              "(the graph's weights are degenerate)")
        if np.all(rel <= tol):
            return x, it, rel
        z = M(r)
        rz_new = np.einsum("ij,ij->j", r, z)
        beta = np.where(rz > 0, rz_new / np.where(rz > 0, rz, 1.0), 0.0)
        rz = rz_new
        p *= beta
        p += z
    return x, maxiter, rel


def ritz_pairs(pencil: Pencil, Y: np.ndarray, nev: int, cancel: CancelToken = NEVER,
               anchors: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Rayleigh–Ritz of the pencil on ``span(Y)`` projected to ``dᵀx = 0``: θ and B-orthonormal X.

    ``anchors`` ``(w, P)``: the label anchors of an appearance prior (:func:`anchor_gram`),
    whose edges join the data graph; ``Y``'s columns must then be the labels' potentials
    ``E_a + φ_a`` (value 1 on label a's strokes, 0 on the others').

    Dependent directions (the constant vector, which the potentials contain) are dropped by
    an SVQB-style orthonormalisation of the B-Gram matrix. (The pencil's own residuals of
    these pairs sit on the stroke rows, where the true eigenvectors vary by O(1/c) and the
    potentials are constant: ``‖Ax − θBx‖`` is not what measures this solve's accuracy; the
    CG residuals and the Ritz values are.)
    """
    check = cancel.check  # 0.25 s at 1.1M px: looked at between products
    Yp = pencil.project(Y)
    AY = pencil.A(Yp)
    check()
    GA, GB = _ritz_grams(pencil, Y, Yp, AY, anchors)
    check()
    try:
        T = svqb(GB, drop=RITZ_DROP)
    except np.linalg.LinAlgError:
        T = np.zeros((GB.shape[0], 0))
    if T.shape[1] < nev:
        raise SolverError(f"the strokes' potentials span only {T.shape[1]} of {nev} directions")
    GAt = T.T @ GA @ T
    theta, C = np.linalg.eigh((GAt + GAt.T) / 2)
    check()
    return theta[:nev], Yp @ (T @ C[:, :nev])


#: Rows per block of :func:`_ritz_grams`: a block's slices of the n × k arrays stay in
#: cache across the products that read them.
GRAM_ROWS = 16384


def _ritz_grams(pencil: Pencil, Y: np.ndarray, Yp: np.ndarray, AY: np.ndarray,
                anchors: tuple[np.ndarray, np.ndarray] | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """``GA = Ypᵀ A Yp`` (+ the anchors' :func:`anchor_gram`) and ``GB = Ypᵀ B Yp``, given
    ``AY = A Yp``. Every term is a sum over rows, so they are summed block by block
    (:data:`GRAM_ROWS`): each block of ``Y``, ``Yp`` is read from memory once for all the
    products instead of once per product, which bound them (250K × 5 on one core: 19 →
    10 ms). B's cannot-link part lives on the stroke rows and is added once."""
    n, k = Y.shape
    bd = pencil.b_diag
    GA, GB = np.zeros((k, k)), np.zeros((k, k))
    for r0 in range(0, n, GRAM_ROWS):
        rows = slice(r0, min(n, r0 + GRAM_ROWS))
        Yb = Yp[rows]
        GA += Yb.T @ AY[rows]
        GB += Yb.T @ (Yb * bd[rows, None])
        if anchors is not None:
            GA += anchor_gram(Y[rows], anchors[0][rows], anchors[1][rows])
    if pencil.cl is not None:
        GB += pencil.cl.gram(Yp)
    return GA, GB


def anchor_gram(Y: np.ndarray, w: np.ndarray, P: np.ndarray) -> np.ndarray:
    r"""The label anchors' energy on ``span(Y)``: ``G_jl = Σ_i w_i Σ_a P_a(i) (Y_ij − δ_aj)(Y_il − δ_al)``.

    An appearance prior joins every pixel i to the anchor node of each label a with weight
    ``w_i P_a(i)`` (``w = γ d`` on the unpainted pixels); an anchor is must-linked to its
    label's strokes, so its value in the k-th basis vector is that vector's value there,
    δ_aj (a constant shift of every vector, as the projection to dᵀx = 0 makes, cancels in
    the differences). With ``Σ_a P_a = 1`` this is
    ``YᵀWY − YᵀWP − PᵀWY + diag(1ᵀWP)``: four products of n × k blocks.
    """
    WY = Y * w[:, None]
    C = WY.T @ P                      # YᵀWP; PᵀWY is its transpose
    G = Y.T @ WY - C - C.T + np.diag(w @ P)
    return (G + G.T) / 2


class _Ahead:
    """A snapshot being made in a thread of its own (:meth:`HarmonicSolver.factor_ahead`)."""

    def __init__(self, fixed: np.ndarray) -> None:
        self.fixed = fixed
        self.d: direct.DirichletFactor | None = None
        self.snap: direct.StrokeSolve | None = None
        self.error: BaseException | None = None
        self.thread: threading.Thread
        #: The base factor the snapshot updates (None: no update), set as soon as known.
        self.base: "direct._Base | None" = None
        self.based = threading.Event()

    def took(self, base: "direct._Base | None") -> None:
        self.base = base
        self.based.set()


@dataclass
class HarmonicState:
    """What an edit leaves for the next: the hierarchy, the Dirichlet matrix it preconditions,
    the painted mask, the potentials by label id, and how many CG steps the hierarchy needed
    when it was built."""

    M: AMGPreconditioner
    A: sp.csr_matrix
    fixed: np.ndarray
    potentials: dict[int, np.ndarray]
    fresh_steps: int


class HarmonicSolver:
    """FAST-GE's eigenpairs from the harmonic potentials, built once per graph (see module doc).

    Parameters
    ----------
    laplacian, degrees
        The image graph's ``L_D`` and degrees (built once per image).
    theta : float
        Strength threshold of the smoothed-aggregation hierarchy (:mod:`segapp.solve.amg`).
    grid : (shape, reach), optional
        The pixel grid of an image graph (:func:`segapp.solve.ordering.grid_nested_dissection`):
        only image graphs get the direct solver.
    shift : float
        γ of an appearance prior (:mod:`segapp.appearance`): every unpainted pixel is joined
        to the label anchors with total weight ``γ d_i``, so the Dirichlet problems are those
        of ``L_D + γ D`` (module doc, "Appearance"); 0 = FAST-GE's own problem.
    analysis : callable, optional
        Gives the image's :class:`~segapp.solve.direct.GridAnalysis` (made ahead and shared
        by the graph's harmonic solvers, :meth:`segapp.solve.GraphSolver.analyse_ahead`), or
        raises why there is none; without it the direct solver makes its own.
    """

    def __init__(self, laplacian: sp.csr_matrix, degrees: np.ndarray, *,
                 theta: float = DEFAULT_THETA,
                 grid: tuple[tuple[int, int], int] | None = None,
                 shift: float = 0.0,
                 analysis: Callable[[], direct.GridAnalysis] | None = None) -> None:
        self.L = sp.csr_matrix(laplacian)
        self.degrees = np.asarray(degrees, dtype=np.float64)
        self.shift = float(shift)
        #: The Dirichlet problems' matrix before the strokes: ``L_D + γ D``.
        self.M = shifted(self.L, self.shift * self.degrees) if self.shift else self.L
        #: The last solve's factor snapshot and the factor it came from.
        self._snap: tuple[direct.DirichletFactor, direct.StrokeSolve] | None = None
        #: The snapshot it replaced, released by :meth:`prepare` in the background: freeing
        #: a factor (the munmap of its panels, 148 MB at 250K px) took 8–11 ms of the edit.
        self._stale: tuple[direct.DirichletFactor, direct.StrokeSolve] | None = None
        self.theta = theta
        self.state: HarmonicState | None = None
        self.grid = grid
        #: The direct solver (built by :meth:`prepare`, or by a solve with ``linear_solver``
        #: "direct"); why it is not used, once that is known.
        self.direct: direct.DirichletFactor | None = None
        self.direct_unavailable: str | None = (
            "not an image graph" if grid is None else
            f"more than {direct.MAX_FACTORED_PIXELS} pixels"
            if self.L.shape[0] > direct.MAX_FACTORED_PIXELS else None)
        self._analysis = analysis
        self._next: np.ndarray | None = None     # the painted mask prepare() factors for
        self._ahead: _Ahead | None = None        # a snapshot made beside the caller (factor_ahead)
        self._ahead_last: _Ahead | None = None   # ... and the last one started (join_ahead)
        self._mode = "auto"                      # the last solve's linear_solver
        self._building = threading.Lock()        # prepare() and a solve may both build it
        self._factoring = False                  # prepare() is making a factor right now
        #: The last solve's linear solver and why not the direct one (its diagnostics).
        self.last_linear_solver, self.last_fallback = "", ""

    def _direct_usable(self) -> bool:
        if self.direct_unavailable is None and not direct.available():
            self.direct_unavailable = direct.unavailable_reason()  # the binding's own words
            direct.warn_unavailable(self.direct_unavailable)
        return self.direct_unavailable is None

    def _why_not_direct(self, linear_solver: str) -> str:
        """Why the last potentials were solved iteratively (issue 28: never silently slow)."""
        if linear_solver == "iterative":
            return "linear_solver='iterative' was asked"
        if self.direct_unavailable is not None:
            return self.direct_unavailable
        if self._factoring:
            return "the image's factor is still being made in the background"
        return (f"an image above {direct.cold_pixels():,} px gets its first answer "
                "iteratively; its factor is made in the background")

    def _build_direct(self) -> direct.DirichletFactor | None:
        """The per-image analysis (ordering + symbolic factor), once; None if it cannot be."""
        with self._building:
            if self.direct is None and self._direct_usable():
                assert self.grid is not None
                try:
                    shared = self._analysis() if self._analysis is not None else None
                    self.direct = direct.DirichletFactor(self.M, *self.grid, analysis=shared)
                except (SolverError, MemoryError) as exc:
                    self.direct_unavailable = str(exc)
            return self.direct

    def prepares_alongside(self) -> bool:
        """Whether :meth:`prepare` can run while the next solve does: always. A solve takes
        one snapshot of the factor (:meth:`DirichletFactor.for_strokes`), which a new factor
        swapped in by :meth:`prepare` never changes; before the first factor exists it
        answers iteratively (or, up to :data:`~segapp.solve.direct.COLD_PIXELS`, factors its
        own) instead of waiting."""
        return True

    def prepare(self, cancel: CancelToken = NEVER) -> None:
        """Work for the *next* edit, done after this one's answer is shown (issue 21).

        Builds the direct solver's analysis if needed and factors the Dirichlet matrix of the
        last solve's strokes, so the next edit is a small update of it. Nothing to do when the
        direct solver is off or unusable. The factorization (0.5 s at 250K px, 3–4 s at 1.1M)
        releases the GIL; cancellation is checked between its steps. Once a factor exists
        the next solve need not wait for this (:meth:`prepares_alongside`).
        """
        self._stale = None   # the last edit's replaced snapshot: its factor is freed here
        fixed = self._next
        if fixed is None or self._mode == "iterative" or not self._direct_usable():
            return
        with one_blas_thread():
            d = self._build_direct()
            cancel.check()
            if d is None or (d.base is not None and np.array_equal(d.base, fixed)):
                return
            self._factoring = True
            try:
                with direct.busy_core():   # a foreground factorization gets the other core
                    d.factor(fixed, cancel)
            except (SolverError, MemoryError) as exc:
                self.direct = None
                self.direct_unavailable = f"the background factorization failed: {exc}"
                return
            finally:
                self._factoring = False
        self.state = None   # the direct solver serves from now on: free the hierarchy

    def factor_ahead(self, sets: list[np.ndarray], *, linear_solver: str = "auto",
                     reuse: bool = True, cancel: CancelToken = NEVER) -> bool:
        """Start making, in a thread of its own, the factor snapshot the next solve of these
        strokes takes (:meth:`DirichletFactor.for_strokes`: a numeric factorization on a cold
        solve, else the update of the base), so that the caller's other work for this edit
        — the colour models of the prior, which only change right-hand sides — runs beside
        it (the factorization releases the GIL; 2 cores). The solve then takes that
        snapshot (the same one it would have made: the answer does not change). Returns
        whether it started; nothing where the solve will not be direct."""
        fixed = painted(self.L.shape[0], sets)
        if linear_solver == "iterative" or not self._direct_usable():
            return False
        cold_direct = linear_solver == "direct" or (linear_solver == "auto"
                                                    and direct.factors_cold(fixed.size))
        d = self.direct
        if not (cold_direct or (d is not None and d.base is not None)):
            return False
        ahead = _Ahead(fixed)

        def run() -> None:
            try:
                d = self._build_direct()   # the image's analysis, the first time (lock held)
                if d is None:
                    return
                if not reuse:
                    d.reset()
                ahead.d = d
                ahead.snap = d.for_strokes(fixed, cancel, took=ahead.took)
            except BaseException as exc:   # noqa: BLE001 — raised where the solve takes it
                ahead.error = exc
            finally:
                ahead.based.set()

        ahead.thread = threading.Thread(target=run, name="segapp-factor-ahead", daemon=True)
        self._ahead = self._ahead_last = ahead
        ahead.thread.start()
        return True

    def join_ahead(self) -> None:
        """Wait for the thread of the last :meth:`factor_ahead` (if it still runs)."""
        ahead = self._ahead_last
        if ahead is not None:
            ahead.thread.join()

    def _ahead_for(self, fixed: np.ndarray) -> bool:
        ahead = self._ahead
        return ahead is not None and np.array_equal(ahead.fixed, fixed)

    def _forward_ahead(self, d: direct.DirichletFactor, fixed: np.ndarray, b: np.ndarray,
                       token: CancelToken) -> "direct.Forward | None":
        """While :meth:`factor_ahead`'s thread makes the update of ``fixed``, its forward
        solve with ``b`` here (:class:`~segapp.solve.direct.Forward`); None where that
        thread makes no update (a refactor) or none for ``fixed``."""
        ahead = self._ahead
        if ahead is None or not np.array_equal(ahead.fixed, fixed):
            return None
        while not ahead.based.wait(0.01):   # known after the update's first steps
            token.check()
        if ahead.base is None or ahead.d is not d:
            return None
        return direct.Forward(d, ahead.base, ahead.fixed, b)

    def _take_ahead(self, d: direct.DirichletFactor, fixed: np.ndarray,
                    token: CancelToken) -> "direct.StrokeSolve | None":
        """The snapshot :meth:`factor_ahead` makes for ``fixed`` on ``d`` (waited for), or
        None if it made none for them."""
        if not self._ahead_for(fixed):
            self._ahead = None
            return None
        ahead, self._ahead = self._ahead, None
        assert ahead is not None
        while ahead.thread.is_alive():
            token.check()
            ahead.thread.join(0.01)
        if ahead.error is not None:
            raise ahead.error
        return ahead.snap if ahead.d is d else None

    def potential_ritz_pairs(self, pencil: Pencil, sets: list[np.ndarray],
                             label_ids: list[int], *, nev: int, tol: float = 1e-4,
                             maxiter: int = 300, reuse: bool = False,
                             linear_solver: str = "auto", cancel: CancelToken = NEVER,
                             timings: dict[str, float] | None = None,
                             prior: np.ndarray | None = None
                             ) -> tuple[np.ndarray, np.ndarray, SolverDiagnostics]:
        """The ``nev ≤ k − 1`` smallest Ritz pairs of ``pencil`` on the strokes' potentials.

        ``prior`` (n × k, rows summing to 1, columns in the order of ``sets``): the labels'
        appearance posteriors; with :attr:`shift` γ > 0 they pull every unpainted pixel
        towards the labels it looks like (module doc, "Appearance"), and the anchors' edges
        enter the Rayleigh–Ritz step. Several solves of one stroke set (an EM round each)
        share one snapshot of the factor.

        ``reuse``: solve from the direct solver's factor of earlier strokes (updated), or
        precondition with the previous edit's hierarchy, brought to these strokes
        by :meth:`~segapp.solve.amg.AMGPreconditioner.galerkin_update`, and start from its
        potentials, instead of building a hierarchy; it is built anew after a solve whose CG
        steps exceed 1.5 × those of the hierarchy's first solve + 2 (the aggregates, made for
        other strokes, have aged; and after pixels were unpainted: the old potentials and
        aggregates then mislead CG — 45–108 steps instead of 11–14). ``linear_solver``:
        "auto" solves directly, factoring now up to :data:`segapp.solve.direct.COLD_PIXELS` and
        after :meth:`prepare` above (iteratively before), "direct" factors now if needed,
        "iterative" never uses the factor. ``timings`` gets
        ``dirichlet``, ``amg_setup`` (the build or the update), ``potentials`` and ``ritz``.
        """
        k = len(sets)
        if not 1 <= nev <= k - 1:
            raise ValueError(f"nev must lie in 1..k−1 = {k - 1}, got {nev}")
        timings = {} if timings is None else timings
        n = self.L.shape[0]
        t = time.perf_counter()
        fixed = painted(n, sets)
        b = stroke_rhs(self.L, fixed, sets[:k - 1])
        anchors = self._pull(b, fixed, prior)
        timings["dirichlet"] = time.perf_counter() - t
        cancel.check()
        Phi, steps, rel, warm, how = self._potentials(
            fixed, b, label_ids[:k - 1], tol, maxiter, reuse, linear_solver, cancel, timings,
            None if prior is None else prior[:, :k - 1])
        t = time.perf_counter()
        Y = np.empty((n, k))
        Y[:, :k - 1] = Phi
        Y[:, k - 1] = 1.0 - Phi.sum(axis=1)
        with_strokes(Y, fixed, sets)
        cancel.check()
        lam, X = ritz_pairs(pencil, Y, nev, cancel=cancel, anchors=anchors)
        timings["ritz"] = time.perf_counter() - t
        converged = bool(np.all(rel <= tol))
        reason = (how if how is not None else
                  f"potentials' CG residuals ≤ {tol:g}" if converged
                  else f"iteration cap (potentials' CG residual {rel.max():.1e})")
        diag = SolverDiagnostics(
            iterations=steps, converged=converged, eigenvalues=lam.copy(), residuals=rel,
            reason=reason, preconditioner_applications=steps + (how is None),
            warm_start=warm, eigenvalue_change=np.nan,
            linear_solver=self.last_linear_solver, direct_unavailable=self.last_fallback)
        return lam, X, diag

    def _potentials(self, fixed: np.ndarray, b: np.ndarray, ids: list[int], tol: float,
                    maxiter: int, reuse: bool, linear_solver: str, token: CancelToken,
                    timings: dict[str, float], start: np.ndarray | None = None
                    ) -> tuple[np.ndarray, int, np.ndarray, bool, str | None]:
        """``Ã(fixed)⁻¹ b`` by the direct or the iterative path (see
        :meth:`potential_ritz_pairs`); ``start``: where Jacobi-preconditioned CG starts
        (:data:`JACOBI_SHIFT`; the prior, which the potentials approach far from the
        strokes)."""
        n = self.L.shape[0]
        self._next, self._mode = fixed, linear_solver
        d = self.direct if linear_solver != "iterative" and self._direct_usable() else None
        cold_direct = linear_solver == "direct" or (linear_solver == "auto"
                                                    and direct.factors_cold(n)
                                                    and self.shift < JACOBI_SHIFT)
        if cold_direct and d is None and self._direct_usable():
            d = self._build_direct()
        how = None
        if d is not None and (d.base is not None or cold_direct):
            try:
                if not reuse and not self._ahead_for(fixed):
                    d.reset()        # no reuse asked: factor these strokes afresh
                Phi, steps, rel, how = self._direct_potentials(d, fixed, b, token, timings)
                # warm: from a base factor made before this solve (its own snapshot says)
                warm = reuse and self._snap is not None and self._snap[1].had_base
            except (SolverError, MemoryError) as exc:   # e.g. a part no stroke reaches
                self.direct = None
                self.direct_unavailable = f"the direct solve failed: {exc}"
        if how is None and self.shift >= JACOBI_SHIFT:  # no set-up beats any
            Phi, steps, rel = self._jacobi_potentials(fixed, b, tol, maxiter, token, timings,
                                                      start)
            warm = False
            self.last_linear_solver = "iterative, Jacobi-preconditioned CG"
            self.last_fallback = (
                f"L + γD with γ = {self.shift:g} is diagonally dominant: CG needs no factor"
                if linear_solver == "auto" and self._direct_usable()
                else self._why_not_direct(linear_solver))
        elif how is None and self._factoring and linear_solver == "auto":
            how, out = self._cg_until_factored(fixed, b, ids, tol, maxiter, reuse, token,
                                               timings)
            if how is None:
                Phi, steps, rel, warm = out
            else:
                Phi, steps, rel, how = out
                warm = True
        elif how is None:
            Phi, steps, rel, warm = self._iterative_potentials(fixed, b, ids, tol,
                                                               maxiter, reuse, token, timings)
            self.last_linear_solver = "iterative, AMG-preconditioned CG"
            self.last_fallback = self._why_not_direct(linear_solver)
        return Phi, steps, rel, warm, how

    def _cg_until_factored(self, fixed: np.ndarray, b: np.ndarray, ids: list[int], tol: float,
                           maxiter: int, reuse: bool, token: CancelToken,
                           timings: dict[str, float]) -> tuple[str | None, tuple]:
        """CG while the image's first factor is being made in the background; if it is ready
        before CG converges, CG stops and the factor answers (an update of it): the edit
        takes the shorter of the two instead of waiting (issue 28). ``(how, result)``:
        how None with CG's own result, or the direct path's."""
        def ready() -> bool:
            d = self.direct
            return d is not None and d.base is not None

        watch = CancelToken(lambda: token.requested() or ready())
        try:
            out = self._iterative_potentials(fixed, b, ids, tol, maxiter, reuse, watch,
                                             timings)
        except Cancelled:
            if token.requested() or not ready():
                raise
            assert self.direct is not None
            result = self._direct_potentials(self.direct, fixed, b, token, timings)
            return result[3], result
        self.last_linear_solver = "iterative, AMG-preconditioned CG"
        self.last_fallback = self._why_not_direct("auto")
        return None, out

    def _pull(self, b: np.ndarray, fixed: np.ndarray, prior: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray] | None:
        """Add the label anchors' pull ``γ d_i P_a(i)`` to the right-hand sides ``b`` (its
        columns: the first labels of ``prior``'s); the anchors ``(w, P)`` for
        :func:`ritz_pairs`, or None without a prior (module doc, "Appearance")."""
        if prior is None or self.shift <= 0:
            return None
        w = self.shift * self.degrees * ~fixed
        b += w[:, None] * prior[:, :b.shape[1]]
        return w, prior

    def potentials(self, sets: list[np.ndarray], label_ids: list[int] | None = None, *,
                   tol: float = 1e-4, maxiter: int = 300, linear_solver: str = "auto",
                   cancel: CancelToken = NEVER, prior: np.ndarray | None = None) -> np.ndarray:
        """``Y`` (n × k): ``Y_a = E_a + φ_a`` for every label (CCSKL's basis), solved as
        :meth:`potential_ritz_pairs` solves its k − 1: from the direct solver's factor where it can,
        else iteratively (reusing the last hierarchy when ``label_ids`` name the labels);
        ``prior`` as there."""
        fixed = painted(self.L.shape[0], sets)
        b = stroke_rhs(self.L, fixed, sets)
        self._pull(b, fixed, prior)
        timings = {"dirichlet": 0.0}
        reuse = label_ids is not None or linear_solver != "iterative"
        ids = list(label_ids) if label_ids is not None else list(range(len(sets)))
        if label_ids is None and self.state is not None:
            self.state = None      # unnamed labels: no hierarchy to carry over
        Y, *_ = self._potentials(fixed, b, ids, tol, maxiter, reuse, linear_solver, cancel,
                                 timings, prior)
        return with_strokes(Y, fixed, sets)

    def _direct_potentials(self, d: direct.DirichletFactor, fixed: np.ndarray, b: np.ndarray,
                           token: CancelToken, timings: dict[str, float]
                           ) -> tuple[np.ndarray, int, np.ndarray, str]:
        """The potentials from one snapshot of the factor (updated or refactored): exact to
        rounding, whatever a background :meth:`prepare` swaps in meanwhile."""
        t = time.perf_counter()
        owner, snap = self._snap if self._snap is not None else (None, None)
        # One snapshot per stroke set, while the factor it reads is the current one: the EM
        # rounds of one edit re-solve with new right-hand sides only.
        fresh = (owner is not d or snap.base is not d.base
                 or not np.array_equal(snap.fixed, fixed))
        waited, ahead, forward = 0.0, None, None
        if fresh:
            forward = self._forward_ahead(d, fixed, b, token)
            ahead = self._take_ahead(d, fixed, token)
            waited = time.perf_counter() - t
            snap = ahead if ahead is not None else d.for_strokes(fixed, token)
            self._snap, self._stale = (d, snap), self._snap
        Phi = snap.solve(b, token, forward)
        self.last_linear_solver = f"direct, {snap.library.describe()}"
        self.last_fallback = ""
        timings["potentials"] = time.perf_counter() - t
        if fresh and snap.how == "refactor":
            # the set-up this edit paid (of a factor made ahead: the part it waited for)
            timings["amg_setup"] = (waited if ahead is not None
                                    else snap.timings.get("factor", 0.0))
            timings["potentials"] -= timings["amg_setup"]
        self.state = None
        # Ã x on the unpainted rows is L x there (x = 0 on painted pixels): one product.
        r = b - self.M @ Phi
        r[fixed] = 0.0
        bn = column_norms(b)
        rel = column_norms(r) / np.where(bn > 0, bn, 1.0)
        how = ("potentials by a direct solve: numeric factor" if snap.how == "refactor" else
               "potentials by a direct solve: the base factor" if snap.how == "base" else
               f"potentials by a direct solve: the base factor updated for {snap.changed} "
               "changed pixels")
        return Phi, 0, rel, f"{how} (relative residual {rel.max():.0e})"

    def _jacobi_potentials(self, fixed: np.ndarray, b: np.ndarray, tol: float, maxiter: int,
                           token: CancelToken, timings: dict[str, float],
                           start: np.ndarray | None) -> tuple[np.ndarray, int, np.ndarray]:
        """Block CG preconditioned by the Dirichlet matrix's diagonal (:data:`JACOBI_SHIFT`),
        from ``start`` (0 on the painted pixels); nothing is kept for the next edit."""
        t = time.perf_counter()
        A = dirichlet_matrix(self.M, fixed)
        diag = A.diagonal()
        dinv = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 1.0)[:, None]
        x0 = None if start is None else np.where(fixed[:, None], 0.0, start)
        timings["dirichlet"] += time.perf_counter() - t
        self.state = None
        t = time.perf_counter()
        Phi, steps, rel = block_pcg(A, lambda r: r * dinv, b, x0=x0, tol=tol, maxiter=maxiter,
                                    cancel=token)
        timings["potentials"] = time.perf_counter() - t
        return Phi, steps, rel

    def _iterative_potentials(self, fixed: np.ndarray, b: np.ndarray, ids: list[int],
                              tol: float, maxiter: int, reuse: bool, token: CancelToken,
                              timings: dict[str, float]
                              ) -> tuple[np.ndarray, int, np.ndarray, bool]:
        """Block CG with the AMG hierarchy (kept and Galerkin-updated from edit to edit)."""
        n = self.L.shape[0]
        t = time.perf_counter()
        A = dirichlet_matrix(self.M, fixed)
        timings["dirichlet"] += time.perf_counter() - t
        st = self.state
        # After an unpainting the old potentials and aggregates mislead CG (45–108 steps
        # instead of 11–14 when a label was cleared): start afresh.
        warm = (reuse and st is not None and st.fixed.shape == fixed.shape
                and not np.any(st.fixed & ~fixed))
        # Forget the state before touching its hierarchy: a solve cancelled half-way must not
        # leave a hierarchy that no longer matches the recorded matrix.
        self.state = None
        x0 = None
        t = time.perf_counter()
        if warm:
            M = st.M
            M.galerkin_update(A - st.A, decoupled=np.flatnonzero(fixed & ~st.fixed),
                              cancel=token)
            x0 = np.column_stack([st.potentials.get(i, np.zeros(n)) for i in ids])
            x0[fixed] = 0.0
        else:
            M = amg_preconditioner(A, self.degrees, theta=self.theta, cancel=token)
        timings["amg_setup"] = time.perf_counter() - t
        t = time.perf_counter()
        Phi, steps, rel = block_pcg(A, partial(M, cancel=token), b, x0=x0, tol=tol,
                                    maxiter=maxiter, cancel=token)
        timings["potentials"] = time.perf_counter() - t
        fresh = st.fresh_steps if warm else steps
        if not (warm and steps > 1.5 * fresh + 2):  # else stale: build anew next time
            self.state = HarmonicState(M, A, fixed, dict(zip(ids, Phi.T.copy())), fresh)
        return Phi, steps, rel, warm
