"""CCSKL: constrained clustering by spectral kernel learning (Li & Liu, ICCV 2009, Algorithm 1).

Zhenguo Li, Jianzhuang Liu, "Constrained Clustering by Spectral Kernel Learning", ICCV 2009.

Model (§3, §4)
--------------
With ``L̄ = I − D^{-1/2} W D^{-1/2}`` the normalized Laplacian of the data graph and
``v_1 … v_m`` its ``m`` smoothest unit eigenvectors (smallest eigenvalues; §3 eq. (5),
Algorithm 1 steps 1–3), the method learns a *spectral kernel*

.. math:: K = \\sum_{i=1}^m β_i v_i v_iᵀ = F Λ Fᵀ, \\qquad F = (v_1 … v_m) = (y_1 … y_n)ᵀ,

whose eigenvalues are chosen so that ``K`` is as close as possible to the ideal kernel ``YYᵀ``
on the known entries (§4.1–4.2, eqs. (6)–(8)):

.. math:: \\min_β \\; \\lVert C ∘ (K − T) \\rVert_F^2 \\quad \\text{s.t.} \\quad
   β_1 ≥ β_2 ≥ … ≥ β_m ≥ 0 \\qquad (9)–(11)

where ``T_ij = 1`` for must-links and on the diagonal (``k_ii = 1`` for every object), ``0``
for cannot-links, and ``C`` is 1 on those entries and 0 elsewhere (weights ``c_ij`` for
weighted constraints, §4.4). With ``k_ij = zᵀ(y_i ∘ y_j)``, ``z = (β_1 … β_m)``, this is the
convex QP (15)–(16): ``min ½ zᵀAz + bᵀz`` with

.. math:: A = 2\\sum_{(i,j)} c_{ij}^2 y_{ij} y_{ij}ᵀ, \\quad b = −2 \\sum_{(i,j)} c_{ij}^2 t_{ij} y_{ij},
   \\quad y_{ij} = y_i ∘ y_j \\qquad (14)

(sums over the entries of ``C``, i.e. ordered pairs: the Frobenius norm of (8) counts ``(i, j)``
and ``(j, i)``). Finally k-means on the rows of ``F Λ^{1/2}`` (§4.5, step 5).

Strokes as constraints
----------------------
As everywhere in segapp, two stroke pixels with the same label are must-linked and two with
different labels cannot-linked: all ``s²`` ordered pairs of the ``s`` stroke pixels. The pair
sums are never enumerated: for weights ``w_i`` (the stroke confidence ``q_i``, so
``c_ij² = q_i q_j``; 1 without confidence), ``G = Σ_{i∈S} w_i y_i y_iᵀ`` and the label sums
``s_a = Σ_{i∈S_a} w_i y_i``,

.. math:: \\sum_{i ≠ j ∈ S} w_i w_j\\, y_{ij} y_{ij}ᵀ = G ∘ G − \\sum_{i∈S} w_i^2 q_i q_iᵀ,
   \\qquad \\sum_{i≠j,\\ \\text{same label}} w_i w_j\\, y_{ij} = \\sum_a s_a ∘ s_a − \\sum_{i∈S} w_i^2 q_i,

with ``q_i = y_i ∘ y_i``; the diagonal terms (``c_ii = 1``, ``t_ii = 1``, all n objects) give
``QᵀQ`` and ``Qᵀ1``. Cost O((n + s) m²) per edit. ``tests/methods/test_methods_spectral.py`` checks
``A`` and ``b`` against an explicit double loop over all pairs.

Solving the QP
--------------
The paper uses MATLAB's quadprog. Here the order constraints become bounds: ``β = U δ`` with
``U`` upper triangular of ones (``β_i = Σ_{j≥i} δ_j``), so (16) is ``δ ≥ 0`` and the problem is
``min ½ δᵀ(UᵀAU)δ + (Uᵀb)ᵀδ, δ ≥ 0`` — with ``UᵀAU = RᵀR`` (Cholesky), a non-negative least
squares problem ``min ‖Rδ + R^{-T}Uᵀb‖²`` solved exactly by Lawson–Hanson's active set method
(:func:`scipy.optimize.nnls`). ``A`` is positive definite when ``F ∘ F`` has full column rank
(§4.3); a relative ridge of 1e-12 keeps the Cholesky factor defined otherwise. The test suite
compares the result with a brute-force enumeration of the active sets of (16).

The spectrum (step 3)
---------------------
Computed once per graph and reused by every edit — only the QP and k-means depend on the
strokes, so an edit costs milliseconds once the eigenvectors are known (the method's appeal
for interactive use). Small graphs (n ≤ :data:`DENSE_MAX`) use a dense ``eigh`` of ``L̄``;
larger ones the normalized-cut pencil ``L x = μ D x`` (``v = D^{1/2}x``) by the same
AMG-preconditioned LOBPCG as FAST-GE, on ``dᵀx = 0`` for the ``m − 1`` non-trivial vectors,
with ``v_1 = D^{1/2}1/‖D^{1/2}1‖`` (``μ = 0``) added exactly.

Readings chosen
---------------
- ``m`` defaults to 20, the paper's setting (§5.2); ``n_eigenvectors`` changes it.
- k-means is run on the rows of ``FΛ^{1/2}`` **normalised to unit length** (option
  ``row_normalise``, default True; False = the paper's step 5 as printed). The ideal kernel maps
  every object to the unit sphere (§4.1), but the learned one does not: rows differ in length
  with the degrees (``v_1 ∝ D^{1/2}1``) and with how well the m vectors represent them, and
  plain k-means spends centres on length. Measured on the Four-Moons graph of
  ``benchmarks/synthetic.py`` (8 trials, Rand index, plain → normalised): 25 labelled nodes
  0.837 → 0.858, 50: 0.862 → 0.902, 100: 0.791 → 0.918, 150: 0.698 → 0.874; on the Patras
  photo the share of pixels agreeing with FAST-GE rose from 0.31 to 0.42. k-means has
  restarts and a start from each label's stroke mean; clusters are matched to the user's labels
  (Hungarian on stroke overlap) — the paper evaluates against ground truth instead.
- With strokes every pair of stroke pixels is a constraint (s² pairs against the n diagonal
  terms), where the paper samples a few hundred pairs; the kernel then fits the labelled
  objects closely. With the literal step 5 the Rand index on Four-Moons *fell* as labels were
  added (0.84 at 25 → 0.70 at 150); with row normalisation it stays at 0.86–0.90 (20 trials,
  docs/methods.md) — a property of the model with dense constraints, kept as the paper
  states it.
- The partition is the k-means anchored to the strokes (:func:`segapp.partition.anchored_kmeans`).
- ``eigenvectors`` of the result are the columns of ``FΛ^{1/2}`` with ``β_i > 0`` (the
  embedding that is clustered), ``eigenvalues`` those ``β_i``; the diagnostics report the
  normalized-Laplacian eigenvalues, the QP objective and whether the extension below was used.

segapp's extension: the must-link basis (issue 10)
--------------------------------------------------
The paper's kernel does not always give every label its strokes: on 35 of the 120 scenes of
``benchmarks/fidelity.py`` a label kept < 99.9% of its painted pixels (0% on 9), on the
bundled coffee example label 3 kept 73%. ``F diag(β) Fᵀ`` is an ordered, non-negative
reweighting of the m smoothest vectors, and on image graphs many of those are nearly null
vectors of weakly joined pixel groups: one that splits a label's strokes comes early in the
order and must weigh at least as much as every later vector, among them those that separate
the labels (the m vectors do separate them linearly: least squares on the stroke rows, 7 of 8
failing scenes). More vectors (m = 35, 50) or stroke pairs weighted alone (§4.4, n/s or 10n/s
per pair: 2 and 4 of 21 failing scenes) do not change that.

So when a label keeps < :data:`~segapp.partition.STROKE_AGREEMENT` of its strokes, the kernel is
learned again on another basis. With ``g = D^{-1/2} f``, the paper's smoothness (eq. (1)) is
``Ω(f) = fᵀL̄f = gᵀLg``; the strokes' harmonic potentials (:meth:`segapp.solve.GraphSolver.potentials`,
the machinery of :mod:`segapp.solve.harmonic`)

.. math:: Y_a = E_a + φ_a, \\qquad L_{FF}\\, φ_a = −L_{F S_a} 1 \\quad (F: \\text{unpainted pixels}),

make ``ψ_a = D^{1/2} Y_a`` the smoothest vector whose values ``g`` are 1 on label a's strokes and
0 on the others: the ideal kernel's indicator column (§4.1), known on the strokes, extended as
smoothly as the graph allows. The new basis (:func:`must_link_basis`) is the part of
``span(F, Ψ)`` that respects the must-links,

.. math:: B = \\{ f ∈ \\mathrm{span}(F, Ψ) : D^{-1/2} f \\text{ constant on every } S_a \\},

orthonormalised by Rayleigh–Ritz of ``L̄`` and ordered by ``Ω``: the smoothest vectors that
respect the must-links, in place of the smoothest vectors, so §3's argument for ordering β
(eq. (4): a smoother vector gets a larger eigenvalue) carries over unchanged. ``B`` holds every
``ψ_a`` (and so ``D^{1/2}1``); on any kernel built on it two stroke pixels of one label have
proportional rows of ``FΛ^{1/2}``, identical after row normalisation. The QP (15)–(16) is then
solved on ``B`` as printed, and if a label still keeps too few of its strokes, once more with
the stroke pairs weighted ``c_ij² = n/s`` (§4.4's weighted constraints: each stroke pixel's
``s`` constraint entries then weigh as much as the ``n`` diagonal terms together).

The potentials cost one block CG with a multigrid hierarchy built for the strokes (coffee,
240K px: 4.3 s, one loaded run, against 21–30 s for the 20-vector spectrum); edits that the
paper's kernel already serves cost nothing more, and their result is the paper's.
``extend=False`` is the paper's method alone. Measured with ``benchmarks/fidelity.py
--scenes 120``: 85/120 → 120/120 scenes (the paper's kernel on 85, the must-link basis on 33,
with the weighted stroke pairs on 2). Dropped on the way (same scenes that failed): the Ritz
vectors of all of ``span(F, Ψ)`` ordered by ``Ω`` — 14 of 21 (16 with n/s weights), because
vectors that split a label still come first; that basis with the must-link-respecting part
ordered first — 28 of 35 (33 with n/s), the rest still splits labels. The quality on BSDS:
docs/methods.md.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.optimize import nnls

from ..cancel import NEVER, CancelToken
from ..solve import (DEFAULT_THETA, EigenProblem, GraphSolver, Pencil, SolveSettings,
                     SolverDiagnostics)
from ..errors import InvalidInputError
from ..graphs import Graph
from ..options import SEED, Option, Settings, override, pick
from ..partition import STROKE_AGREEMENT, anchored_kmeans, stroke_agreement
from ..strokes.reading import Strokes
from ..result import Segmentation
from .embedding import normalise_rows
from .fastge import OPTIONS as FASTGE_OPTIONS
from .graph_method import GRAPH_OPTIONS, GraphMethod

#: Graphs up to this many vertices get a dense eigendecomposition of L̄ (exact, < 1 s).
DENSE_MAX = 2500

#: Relative ridge added to the QP's Hessian (A may be singular for degenerate data).
QP_RIDGE = 1e-12

#: Relative CG tolerance of the strokes' potentials (their stroke rows are set exactly).
POTENTIAL_TOL = 1e-6

#: Eigenvalues of the must-link spread below this share of the largest are zero: the vectors
#: on which every label's strokes are constant (the potentials are, to rounding).
CONSISTENT_TOL = 1e-9

#: The spectrum (m eigenvectors: n_eigenvectors and the eigensolver's settings, and the seed of
#: its random start, which also seeds k-means) is computed once per graph: set-up options.
#: At most 50 eigenvectors: LOBPCG keeps ~8 blocks of n × m floats (1.6 GB at 0.5 MP, m = 50).
OPTIONS: tuple[Option, ...] = GRAPH_OPTIONS + (
    Option("n_eigenvectors", int, 20, "smoothest normalized-Laplacian eigenvectors m the kernel "
           "is built on (the paper's 20; at least k)", "setup", low=1, high=50),
    Option("row_normalise", bool, True, "k-means on unit-length rows of FΛ^1/2 (false: the "
           "paper's literal step 5)", "solve"),
    Option("extend", bool, True, "when the kernel does not separate the strokes, learn it "
           "again on the smoothest vectors that respect the must-links (the strokes' harmonic "
           "potentials added; false: the paper's kernel alone)", "solve"),
    *override(pick(FASTGE_OPTIONS, "amg_theta", "maxiter", "eig_tol", "res_tol"),
              amg_theta={"stage": "setup"},
              maxiter={"stage": "setup", "help": "iteration cap of LOBPCG and of the "
                       "potentials' CG"},
              eig_tol={"stage": "setup"}, res_tol={"stage": "setup"}),
    replace(SEED, stage="setup", help="random seed (eigensolver start, k-means starts)"),
)

@dataclass
class Spectrum:
    """The ``m`` smoothest eigenpairs of the normalized Laplacian: ``mu`` (m,), ``F`` (n, m)."""

    mu: np.ndarray
    F: np.ndarray
    diagnostics: SolverDiagnostics | None = None


def smoothest_eigenvectors(graph: Graph, m: int, *, seed: int = 0, amg_theta: float = DEFAULT_THETA,
                           maxiter: int = 300, eig_tol: float = 1e-3, res_tol: float = 1e-6,
                           cancel: CancelToken = NEVER) -> Spectrum:
    """The ``m`` unit eigenvectors of ``L̄ = D^{-1/2} L D^{-1/2}`` with the smallest eigenvalues."""
    n, d = graph.n, graph.degrees
    sqrt_d = np.sqrt(d)
    if n <= DENSE_MAX:
        Lbar = graph.laplacian.toarray() / sqrt_d[:, None] / sqrt_d[None, :]
        mu, F = sla.eigh((Lbar + Lbar.T) / 2, subset_by_index=[0, m - 1])
        return Spectrum(np.maximum(mu, 0.0), F)
    v1 = sqrt_d / np.linalg.norm(sqrt_d)
    if m == 1:
        return Spectrum(np.zeros(1), v1[:, None])
    pencil = Pencil(graph.laplacian, d)  # B = D/n: eigenvalues n·μ, on dᵀx = 0
    settings = SolveSettings(theta=amg_theta, maxiter=maxiter, eig_tol=eig_tol, res_tol=res_tol,
                             advice="try a larger maxiter or fewer n_eigenvectors")
    # A solver of its own, dropped with its hierarchy: the spectrum is solved once per graph.
    lam, X, diag = GraphSolver.of(graph).eigenpairs(
        EigenProblem(pencil, m - 1, settings=settings, random=np.random.default_rng(seed)),
        cancel)
    V = X * sqrt_d[:, None]
    V /= np.linalg.norm(V, axis=0)
    return Spectrum(np.concatenate([[0.0], np.maximum(lam / n, 0.0)]),
                    np.hstack([v1[:, None], V]), diag)


def kernel_qp(F: np.ndarray, sets: list[np.ndarray],
              weights: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Hessian ``A`` and linear term ``b`` of the QP (15) for all-pairs stroke constraints.

    Parameters
    ----------
    F : ndarray (n, m)
        Eigenvectors, rows ``y_i``.
    sets : list of int arrays
        Vertices of each label's strokes (disjoint).
    weights : list of float arrays, optional
        ``w_i`` per stroke vertex (``c_ij² = w_i w_j``); ones by default.
    """
    if weights is None:
        weights = [np.ones(S.size) for S in sets]
    Q = F * F
    A = Q.T @ Q
    b = Q.sum(axis=0)
    S = np.concatenate(sets)
    w = np.concatenate(weights)
    YS = F[S]
    QS = Q[S]
    G = (YS * w[:, None]).T @ YS
    QSw = QS * (w * w)[:, None]
    A += G * G - QSw.T @ QS
    sums = [(F[Sa] * wa[:, None]).sum(axis=0) for Sa, wa in zip(sets, weights)]
    b += sum(s * s for s in sums) - QSw.sum(axis=0)
    return A + A.T, -2.0 * b          # A + Aᵀ = 2A, symmetrised


def solve_ordered_qp(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``argmin ½ zᵀAz + bᵀz`` subject to ``z_1 ≥ z_2 ≥ … ≥ z_m ≥ 0`` (module notes)."""
    m = b.size
    U = np.triu(np.ones((m, m)))
    P = U.T @ A @ U
    P = (P + P.T) / 2 + QP_RIDGE * max(np.trace(P) / m, np.finfo(float).tiny) * np.eye(m)
    q = U.T @ b
    R = sla.cholesky(P, lower=False)               # P = RᵀR
    target = -sla.solve_triangular(R, q, trans="T")  # R^{-T}(−q)
    delta, _ = nnls(R, target, maxiter=50 * m)
    return U @ delta


def must_link_basis(graph: Graph, F: np.ndarray,
                    Y: np.ndarray, sets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The vectors of ``span(F, D^{1/2}Y)`` that respect the must-links, smoothest first.

    Those ``f`` with ``g = D^{-1/2}f`` constant on each label's strokes: the null space of the
    spread ``Σ_a Σ_{i∈S_a} (g_i − ḡ_a)²`` on the span (which holds every ``D^{1/2}Y_a``);
    Rayleigh–Ritz of ``L̄`` there. Returns the orthonormal basis (n × q) and its Ritz values
    ``fᵀL̄f`` (ascending).
    """
    sqrt_d = np.sqrt(graph.degrees)
    Psi = Y * sqrt_d[:, None]
    for _ in range(2):  # classical Gram–Schmidt twice against the orthonormal F
        Psi -= F @ (F.T @ Psi)
    w, V = np.linalg.eigh(Psi.T @ Psi)
    keep = w > 1e-10 * max(w.max(), np.finfo(float).tiny)   # Σ_a ψ_a = D^{1/2}1 ∈ span(F)
    Q = np.hstack([F, Psi @ (V[:, keep] / np.sqrt(w[keep]))])
    spread = np.zeros((Q.shape[1],) * 2)
    for S in sets:
        G = Q[S] / sqrt_d[S, None]
        G -= G.mean(axis=0)
        spread += G.T @ G
    w, V = np.linalg.eigh((spread + spread.T) / 2)
    Q = Q @ V[:, w <= CONSISTENT_TOL * max(w.max(), np.finfo(float).tiny)]
    H = Q.T @ ((graph.laplacian @ (Q / sqrt_d[:, None])) / sqrt_d[:, None])
    theta, C = np.linalg.eigh((H + H.T) / 2)
    return Q @ C, theta


class CCSKL(GraphMethod):
    """Spectral kernel learning on the image (or given) graph; the spectrum serves every edit."""

    name = "ccskl"
    description = ("CCSKL (Li & Liu 2009): eigenvalues of a spectral kernel on the m smoothest "
                   "normalized-Laplacian eigenvectors learned by a convex QP")
    constrained = True
    options = OPTIONS
    prepares = True

    def __init__(self, graph: Graph, settings: Settings | None = None, **options: Any) -> None:
        super().__init__(graph, settings, **options)   # checks n_eigenvectors ≤ n (its rule)
        self.spectrum: Spectrum | None = None
        #: The strokes' potentials (:meth:`~segapp.solve.GraphSolver.potentials`): a factor
        #: per image updated per edit where CHOLMOD is installed, else block CG.
        self.solver = GraphSolver.of(graph)

    @classmethod
    def direct_ahead(cls, settings: Settings) -> bool:
        """The strokes' potentials take the direct solver's factor where it serves."""
        return True

    def prepare_next(self, cancel: CancelToken) -> None:
        """Work for the next edit after this one's answer: the potentials' factor."""
        self.solver.prepare(cancel)

    def prepares_alongside(self) -> bool:
        """The next solve need not wait: it takes its own snapshot of the factor."""
        return self.solver.prepares_alongside()

    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Segmentation:
        """QP and k-means for the given strokes (the first call also computes the spectrum)."""
        g, o = self.graph, self.settings
        label_ids, sets = strokes.label_ids, strokes.sets
        m = o["n_eigenvectors"]      # ≥ k: its rule, checked with the strokes
        # w_i with c_ij² = w_i w_j: q_i for soft strokes, 1 otherwise
        weights = ([np.ones(S.size) for S in sets] if not strokes.soft
                   else [u * u for u in strokes.weights])
        if self.spectrum is None:
            t = time.perf_counter()
            cancel.progress(f"the {m} smoothest eigenvectors (once per image)")
            self.spectrum = smoothest_eigenvectors(
                g, m, seed=o["seed"], amg_theta=o["amg_theta"], maxiter=o["maxiter"],
                eig_tol=o["eig_tol"], res_tol=o["res_tol"], cancel=cancel)
            timings["eigensolver"] = time.perf_counter() - t
        cancel.check()
        F = self.spectrum.F
        # The paper's kernel; then, while a label keeps < STROKE_AGREEMENT of its strokes,
        # the extended basis with the paper's weights, then with the strokes weighed n/s
        # (module notes, "Strokes").
        stages = [(False, 1.0)]
        if o["extend"]:
            stages += [(True, 1.0), (True, g.n / strokes.count)]
        timings["qp"] = timings["partition"] = 0.0
        best = None
        for extended, stroke_weight in stages:
            if extended and F is self.spectrum.F:
                t = time.perf_counter()
                cancel.progress("the strokes' potentials")
                Y = self.solver.potentials(sets, theta=o["amg_theta"], tol=POTENTIAL_TOL,
                                           maxiter=o["maxiter"], cancel=cancel)
                F, _ = must_link_basis(g, self.spectrum.F, Y, sets)
                timings["potentials"] = time.perf_counter() - t
                cancel.check()
            t = time.perf_counter()
            A, b = kernel_qp(F, sets, [u * np.sqrt(stroke_weight) for u in weights])
            beta = solve_ordered_qp(A, b)
            timings["qp"] += time.perf_counter() - t
            if not np.any(beta > 0):
                raise InvalidInputError("the learned kernel is zero (every β = 0): the "
                                        "constraints contradict the graph's smooth eigenvectors")
            t = time.perf_counter()
            keep = np.flatnonzero(beta > 0)
            E = F[:, keep] * np.sqrt(beta[keep])
            U = normalise_rows(E) if o["row_normalise"] else E
            codes, _, _ = anchored_kmeans(U, sets, rng=np.random.default_rng(o["seed"]),
                                          cancel=cancel)
            agreement = stroke_agreement(codes, sets)
            timings["partition"] += time.perf_counter() - t
            if best is None or agreement.min() > best[0].min():
                best = (agreement, codes, E, beta, keep, A, b, extended, stroke_weight)
            if agreement.min() >= STROKE_AGREEMENT:
                break
        agreement, codes, E, beta, keep, A, b, extended, stroke_weight = best
        diag = CCSKLDiagnostics(self.spectrum.mu, beta, float(0.5 * beta @ A @ beta + b @ beta),
                                self.spectrum.diagnostics, extended, stroke_weight)
        return Segmentation(np.asarray(label_ids, np.int32)[codes], label_ids, E, beta[keep],
                            diagnostics=diag,
                            stroke_agreement=dict(zip(label_ids, agreement.tolist())))


@dataclass
class CCSKLDiagnostics:
    """Normalized-Laplacian eigenvalues, the learned β, the QP objective, the eigensolver's report."""

    laplacian_eigenvalues: np.ndarray
    beta: np.ndarray
    qp_objective: float
    eigensolver: SolverDiagnostics | None = None
    must_link_basis: bool = False  # the kernel was built on the must-link basis (module notes)
    stroke_weight: float = 1.0    # c_ij² factor of the stroke pairs (§4.4)

    @property
    def converged(self) -> bool:
        return self.eigensolver is None or self.eigensolver.converged

    def __repr__(self) -> str:
        return (f"CCSKLDiagnostics(m={self.beta.size}, β>0: {int(np.sum(self.beta > 0))}, "
                f"β_1={self.beta[0]:.3g}, QP objective {self.qp_objective:.4g}, "
                f"must-link basis {self.must_link_basis}, stroke weight {self.stroke_weight:.3g}, "
                f"eigensolver: {self.eigensolver!r})")
