"""SCACS: scalable constrained normalized cuts on a landmark graph (Li et al. 2015, Algorithm 1).

Li, Xia, Shan, Liu, "Scalable Constrained Spectral Clustering", IEEE TKDE 27(2), 2015.

Model (§2.1, §3)
----------------
Constrained normalized cuts (Wang & Davidson's FCSC, eq. (1)/(4)): minimise ``vᵀ L v`` subject
to ``vᵀ Q̄ v ≥ α``, ``vᵀv = 1``, ``v ⊥ 1``, with the landmark graph of :mod:`segapp.graphs.landmark`
(``L = I − ẐẐᵀ``: its degrees are all 1, so ``Q̄ = D^{-1/2} Q D^{-1/2} = Q``) and the constraint
matrix of eq. (20): ``Q_ij = 1`` for two stroke pixels of the same label (including ``i = j``),
``−1`` for different labels, 0 otherwise. For soft strokes (confidence q) the entries are
multiplied by ``√(q_i q_j)``. With ``v = Ẑ u`` (Problem 2; in the paper Ẑ is p × n, here n × p)

.. math:: A = Ŝ − Ŝ², \\quad Q̂ = Ẑᵀ Q Ẑ, \\quad Ŝ = ẐᵀẐ,

and the KKT conditions give eq. (16), ``A u = λ (Q̂ − β Ŝ) u`` with ``λ > 0``.
``Q = Σ_{a,b} (2δ_ab − 1) u_a u_bᵀ`` (``u_a`` = weights on label a's strokes) has rank ≤ k, so
``Q̂ = G (2I − 11ᵀ) Gᵀ`` with ``G = [Ẑᵀu_1 … Ẑᵀu_k]``: p × k, from the stroke rows alone.

β (§5.2)
--------
``β = β₀ γ_{k−1}``, ``γ_{k−1}`` the (k−1)-th largest eigenvalue of ``Q̂ x = γ Ŝ x``. The paper
uses two β₀: ``β₀ = 0.5 + 0.4 c/n`` (c labelled instances, here stroke pixels) against FCSC on
small data sets (§5.2), and a fixed ``β₀ = 0.1`` for the large data sets (§5.3, with p = 500,
r = 3). The default is §5.3's 0.1; ``beta0=None`` selects the §5.2 formula. §5.4 warns that a
large β₀ with few constrained instances "drops seriously" — and strokes are few: with the
§5.2 formula (β₀ ≈ 0.5) the vectors must put so much of their mass on the stroke pixels that
they cease to be piecewise constant. Measured (first round / after 5 strokes, mean IoU, the
quality benchmark's robot, dev sets at half size, p = 500, ``spatial_weight`` 0.5):

=====================  =============  =============
β₀                     BSDS           GrabCut
=====================  =============  =============
0.5 + 0.4 c/n (§5.2)   0.494 / 0.529  0.284 / 0.278
**0.1** (§5.3)         0.546 / 0.587  0.451 / 0.566
=====================  =============  =============

and on four unit-variance blobs 8 apart with 5 labelled points each, 85.7% vs 100% accuracy.
Because ``2I − 11ᵀ`` has k − 1 positive eigenvalues, ``Q̂`` has at most k − 1 positive γ's, and
``β < γ_{k−1}`` is the paper's sufficient condition for k − 1 meaningful solutions (§3.2).

Algorithm 1, and the readings chosen
------------------------------------
In the orthonormal coordinates ``u = T z`` of :class:`segapp.graphs.landmark.LandmarkBasis`
(``Ŝ → I``, ``A → diag(Λ − Λ²)/Λ = I − Λ``, ``Q̂ → Φᵀ Q Φ``):

- steps 2–4: landmarks, Ẑ, Ŝ, Q̂ (shared machinery; landmarks chosen as the ``landmark_selection``
  option says — the paper samples them at random, ``"random"``);
- step 5–6: γ's from the k × k matrix ``R (2I − 11ᵀ) R``, ``R = (GᵀG)^{1/2}`` (same non-zero
  eigenvalues as ``Q̂`` in these coordinates); if ``β ≥ γ_max`` the paper returns nothing — we
  raise :class:`~segapp.errors.InvalidInputError`;
- step 9 (remove eigenvectors not orthogonal to "``1ᵀŜ``"): the garbled condition is read as the
  exact image of ``v ⊥ 1`` under ``v = Ẑu``, i.e. ``(Ẑᵀ1)ᵀu = 0`` (``Ẑᵀ1 = Ŝ D^{1/2}1``; a
  literal ``1ᵀŜu = 0`` is not implied by ``v ⊥ 1``). Rather than discarding eigenvectors that
  violate it, we solve eq. (16) on that hyperplane (``eᵀz = 0``, basis H), so every solution
  satisfies it — this is what step 9 aims at (the paper: "Step 9 aims to satisfy eq. (12)");
- steps 6–7: ``A`` is singular (exactly on the constant vector, nearly on disconnected parts),
  and ``Q̂ − βŜ`` is indefinite, so eq. (16) is solved as ``(Q̂ − βI) z = μ (A + εI) z``,
  ``μ = 1/λ``, with ``A + εI = R_A diag(α) R_Aᵀ`` diagonalised (``ε = 1e-10``: a zero-cost cut
  that satisfies the constraints then gets a huge positive μ, i.e. ranks first, the limit the
  unregularised problem has); step 7 keeps ``μ > 0`` (``λ > 0``);
- step 8: ``uᵀŜu = 1`` is ``‖z‖ = 1``;
- step 10: the ``m = min(k − 1, #positive)`` vectors of smallest cost ``uᵀAu`` (``#positive``
  is at most k − 1, see below);
- step 11: ``V^{(r)} = Ẑ V (I − VᵀAV)`` — as printed, the full m × m matrix;
- step 12: rows normalised, then k-means — the random-sampling k-means of
  :func:`segapp.methods.landmark_base.round_landmark_embedding` (k-means on a sample, every pixel to its nearest centre),
  with stroke-seeded and k-means++ starts, clusters matched to the user's labels.

Strokes (issue 10): the painted pixels join the landmarks (:mod:`segapp.graphs.landmark`), so
the basis can separate strokes of different labels.

segapp's extension: must-links that see each stroke pixel
----------------------------------------------------------
The paper's constraint sees only each label's stroke *sum*: with ``s_a = Σ_{i∈S_a} u_i v_i``,
``vᵀQv = 2 Σ_a s_a² − (Σ_a s_a)²``, so nothing asks a label's strokes to agree with each other —
a vector may be large on one of label a's strokes and near 0 on another, which then mixes with
label b. On 12 of the 120 scenes of ``benchmarks/fidelity.py`` a label kept < 99.9% of its
painted pixels (as little as 25%), and 91% of the spoon's on the bundled coffee example. One
more feasible vector cannot help: ``Q − βI`` has at most k − 1 positive eigenvalues, so (Cauchy
interlacing) eq. (16) has at most k − 1 solutions with λ > 0, all of which step 10 already takes.

Problem (1) is stated over indicator vectors ``v ∈ {±1/√n}ⁿ``, and there
``vᵀQv = (1/n) 1ᵀQ1 − vᵀL_Q v`` with the signed constraint Laplacian ``L_Q = diag(Q1) − Q``:
the same count of satisfied minus violated constraints has a second, per-pixel relaxation,
whose must-link part is the clique Laplacian of each label's strokes,

.. math:: vᵀL_{ML}v = \\sum_a \\tfrac12 \\sum_{i,j∈S_a} u_i u_j (v_i − v_j)^2
   = \\sum_a \\Big(\\sum_{S_a} u\\Big)\\Big(\\sum_{S_a} u v^2\\Big) − s_a^2

(``u`` = √q, the stroke weights; on indicator vectors it is 4/n per violated must-link pair).
When the paper's constraint leaves a label's strokes unseparated (the partition gives a label
< :data:`~segapp.partition.STROKE_AGREEMENT` of its painted pixels), SCACS is solved again with

.. math:: Q_κ = Q − κ L_{ML}, \\qquad A u = λ (Q̂_κ − β_κ Ŝ) u, \\quad β_κ = β₀ γ_{k−1}(Q̂_κ),

for κ = 4, 16, 64 in turn (:data:`MUST_LINK_LADDER`, up to the ``must_link`` option), keeping
the first result that separates the strokes (else the one that keeps most). ``L_ML`` vanishes
on vectors constant on each label's strokes, which is where the k − 1 positive γ's of ``Q``
live, so the constraint still asks the label sums to differ and β's rule is unchanged; what it
adds is a penalty on the spread inside a label (on indicator vectors a violated must-link
costs 1 + κ times a violated cannot-link). In basis coordinates ``Φᵀ L_ML Φ`` is one weighted
Gram matrix of the stroke rows (:func:`must_link_laplacian`); each step of the ladder costs one
p' × p' eigenvalue problem for γ and one for eq. (16) (coffee, 240K px, p' = 1116, κ up to 64:
the eigensolver stage took 3.8 s against 0.9 s for the paper's alone, one loaded run).

With ``must_link=0`` the method is the paper's, and where the paper's constraint keeps the
strokes (108 of 120 scenes) the result is the paper's. Measured with
``benchmarks/fidelity.py --scenes 120``: 108/120 → 120/120 scenes (κ = 4 on 10, 16 on 2); the
bundled coffee example needs κ = 64. The quality on BSDS: docs/methods.md.

``eigenvectors`` holds ``V^{(r)}`` (before the row normalisation), ``eigenvalues`` the λ = 1/μ
of the chosen vectors; the diagnostics report β, β₀, γ_{k−1} and the κ used (``must_link``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.linalg as sla

from ..errors import InvalidInputError
from ..cancel import CancelToken
from ..graphs.landmark import LandmarkBasis
from ..options import Option
from ..partition import STROKE_AGREEMENT, stroke_agreement
from ..strokes.reading import Strokes
from .landmark_base import LANDMARK_OPTIONS, LandmarkMethod

OPTIONS: tuple[Option, ...] = LANDMARK_OPTIONS + (
    Option("beta0", float, 0.1, "constraint strength β = β₀ γ_{k−1} (§5.3's constant)", "solve",
           low=1e-3, high=0.999, none_ok=True, none_means="§5.2's rule 0.5 + 0.4 t/n"),
    Option("must_link", float, 64.0, "largest must-link stiffness κ tried when a label's "
           "strokes are not separated (0: the paper's constraint alone)", "solve",
           low=0.0, high=1e4),
)

#: Regularisation of A = Ŝ − Ŝ² (its eigenvalues lie in [0, 1]).
A_EPS = 1e-10

#: The stiffnesses κ tried in turn (up to the ``must_link`` option) after the paper's κ = 0,
#: while a label's strokes are not separated (module notes).
MUST_LINK_LADDER = (4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0)


def must_link_laplacian(basis: LandmarkBasis, strokes: Strokes) -> np.ndarray:
    """``Φᵀ L_ML Φ``: the must-link cliques of every label's strokes in basis coordinates.

    ``vᵀ L_ML v = Σ_a ½ Σ_{i,j ∈ S_a} u_i u_j (v_i − v_j)² = Σ_a (Σ_{S_a} u)(Σ_{S_a} u v²) −
    (Σ_{S_a} u v)²``, so ``Φᵀ L_ML Φ = Φᵀ diag(U) Φ − Σ_a g_a g_aᵀ`` with ``U_i = u_i Σ_{S_a} u``
    and ``g_a = Φᵀ u_a``: one weighted Gram matrix over all stroke rows.
    """
    rows = np.concatenate(strokes.sets)
    scaled = np.concatenate([u * u.sum() for u in strokes.weights])
    M, _ = basis.set_terms(rows, scaled)
    for S, u in zip(strokes.sets, strokes.weights):
        g = basis.set_sum(S, u)
        M -= np.outer(g, g)
    return (M + M.T) / 2


class SCACS(LandmarkMethod):
    """Constrained normalized cuts on the landmark graph (Algorithm 1 of Li et al. 2015)."""

    name = "scacs"
    description = ("SCACS (Li et al. 2015): constrained normalized cuts on a sparse-coding "
                   "landmark graph, p×p generalized eigenproblem, β = β₀ γ_{k−1}")
    constrained = True
    options = OPTIONS

    def _embed(self, strokes: Strokes, timings: dict[str, float],
               cancel: CancelToken) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        o = self.settings
        basis = self.basis
        n, k = basis.code.n, strokes.k
        t = time.perf_counter()
        G = np.stack([basis.set_sum(S, u) for S, u in zip(strokes.sets, strokes.weights)],
                     axis=1)
        qk = 2.0 * np.eye(k) - np.ones((k, k))
        Qz = G @ qk @ G.T                                              # Φᵀ Q Φ
        # γ: non-zero eigenvalues of Φᵀ Q Φ = G qk Gᵀ (Ŝ = I in these coordinates)
        s, E = sla.eigh(G.T @ G)
        R = (E * np.sqrt(np.maximum(s, 0))) @ E.T
        gamma = np.sort(np.linalg.eigvalsh(R @ qk @ R))[::-1]
        gamma = np.concatenate([gamma, np.zeros(max(0, basis.size - k))])
        gamma = np.sort(gamma)[::-1]
        # §5.2's formula or §5.3's constant
        beta0 = (0.5 + 0.4 * strokes.count / n) if o["beta0"] is None else float(o["beta0"])
        if not gamma[k - 2] > 0:
            raise InvalidInputError(
                "the strokes cannot be told apart on the landmark graph (γ_{k−1} ≤ 0): their "
                "pixels share the same landmark codes; draw them elsewhere or use more landmarks")
        if beta0 * gamma[k - 2] >= gamma[0]:
            raise InvalidInputError(f"β = {beta0 * gamma[k - 2]:.3g} ≥ γ_max = {gamma[0]:.3g}: "
                                    "no solution (Algorithm 1, step 6); use a smaller beta0")
        # Eq. (16) on eᵀz = 0 (basis H) as (Q̂ − βI) z = μ (A + εI) z, with A + εI = R_A α R_Aᵀ:
        # in the coordinates z = H N w, N = R_A α^{-1/2}, it is C w = μ w (module notes).
        H = basis.complement()
        a_diag = 1.0 - basis.lam
        Ah = (H.T * a_diag) @ H
        alpha, RA = sla.eigh((Ah + Ah.T) / 2)
        HN = H @ (RA / np.sqrt(np.maximum(alpha, 0) + A_EPS))
        GN = HN.T @ G
        CQ = GN @ qk @ GN.T                                            # (HN)ᵀ Q̂ (HN)
        NN = HN.T @ HN
        timings["constraints"] = time.perf_counter() - t
        cancel.check()

        t_eig = time.perf_counter()
        timings["partition"] = 0.0
        kappas = (0.0,) + tuple(c for c in MUST_LINK_LADDER if c <= o["must_link"])
        best = None
        for kappa in kappas:
            C = CQ - beta0 * gamma[k - 2] * NN
            if kappa > 0:   # Q − κ L_ML is no longer of rank k: γ from a p' × p' eigenproblem
                if kappa == kappas[1]:
                    Lml = must_link_laplacian(basis, strokes)
                    CL = HN.T @ Lml @ HN
                gamma = np.sort(np.linalg.eigvalsh(Qz - kappa * Lml))[::-1]
                if not gamma[k - 2] > 0:
                    break   # the stiffer constraint leaves fewer than k − 1 feasible directions
                C = CQ - kappa * CL - beta0 * gamma[k - 2] * NN
            mu, W = sla.eigh((C + C.T) / 2)
            pos = np.flatnonzero(mu > 0)                               # step 7
            if pos.size == 0:
                if kappa == 0:
                    raise InvalidInputError("no eigenvector satisfies the constraints (no λ > 0);"
                                            " use a smaller beta0")
                break
            Z = HN @ W[:, pos]
            Z /= np.linalg.norm(Z, axis=0)                             # step 8
            cost = np.einsum("ij,i,ij->j", Z, a_diag, Z)
            # step 10; Q − κL_ML − βI has at most k − 1 positive eigenvalues, so neither has the
            # compressed pencil: there is no further feasible vector to add.
            m = min(k - 1, pos.size)
            sel = np.argsort(cost, kind="stable")[:m]
            V = Z[:, sel]
            VAV = (V.T * a_diag) @ V
            Y = basis.T @ (V @ (np.eye(m) - VAV))                      # step 11 (coefficients)
            cancel.check()
            labels, X, _ = self._partition(Y, strokes, timings, cancel)
            worst = stroke_agreement(strokes.codes(labels), strokes.sets).min()
            if best is None or worst > best[0]:
                best = (worst, labels, X, 1.0 / mu[pos][sel],
                        {"beta": float(beta0 * gamma[k - 2]), "beta0": float(beta0),
                         "gamma_k-1": float(gamma[k - 2]), "must_link": kappa})
            if worst >= STROKE_AGREEMENT:
                break
        timings["eigensolver"] = time.perf_counter() - t_eig - timings["partition"]
        return best[1], best[2], best[3], best[4]
