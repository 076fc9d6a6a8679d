"""SCACS: scalable constrained normalized cuts on a landmark graph (Li et al. 2015, Algorithm 1).

Li, Xia, Shan, Liu, "Scalable Constrained Spectral Clustering", IEEE TKDE 27(2), 2015.

Model (§2.1, §3)
----------------
Constrained normalized cuts (Wang & Davidson's FCSC, eq. (1)/(4)): minimise ``vᵀ L v`` subject
to ``vᵀ Q̄ v ≥ α``, ``vᵀv = 1``, ``v ⊥ 1``, with the landmark graph of :mod:`segapp.landmarks`
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
In the orthonormal coordinates ``u = T z`` of :class:`segapp.landmarks.LandmarkBasis`
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
- step 10: the ``m = min(k − 1, #positive)`` vectors of smallest cost ``uᵀAu``;
- step 11: ``V^{(r)} = Ẑ V (I − VᵀAV)`` — as printed, the full m × m matrix;
- step 12: rows normalised, then k-means — the random-sampling k-means of
  :func:`segapp.landmarks.partition` (k-means on a sample, every pixel to its nearest centre),
  with stroke-seeded and k-means++ starts, clusters matched to the user's labels.

Strokes (issue 10): the painted pixels join the landmarks (:mod:`segapp.graphs.landmark`), so
the basis can separate strokes of different labels; SCACS still does not keep ≥ 99.9% of every
label's painted pixels on every scene (108 of 120 scenes of ``benchmarks/fidelity.py``): its
constraint ``vᵀQv = Σ_a s_a² − Σ_{a≠b} s_a s_b`` (``s_a`` = label a's stroke sum of v) does not
ask a label's strokes to agree with each other, only their sums to differ (docs/methods.md).

``eigenvectors`` holds ``V^{(r)}`` (before the row normalisation), ``eigenvalues`` the λ = 1/μ
of the chosen vectors; the diagnostics report β, β₀ and γ_{k−1}.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.linalg as sla

from ..errors import InvalidInputError
from ..landmarks import LANDMARK_OPTIONS, Cancel, LandmarkMethod, StrokeSets, check_cancel
from ..options import Option

OPTIONS: tuple[Option, ...] = LANDMARK_OPTIONS + (
    Option("beta0", float, 0.1, "constraint strength β = β₀ γ_{k−1} (§5.3's constant)", "solve",
           low=1e-3, high=0.999, none_ok=True, none_means="§5.2's rule 0.5 + 0.4 t/n"),
)

#: Regularisation of A = Ŝ − Ŝ² (its eigenvalues lie in [0, 1]).
A_EPS = 1e-10


class SCACS(LandmarkMethod):
    """Constrained normalized cuts on the landmark graph (Algorithm 1 of Li et al. 2015)."""

    name = "scacs"
    description = ("SCACS (Li et al. 2015): constrained normalized cuts on a sparse-coding "
                   "landmark graph, p×p generalized eigenproblem, β = β₀ γ_{k−1}")
    constrained = True
    options = OPTIONS

    def _solve(self, strokes: StrokeSets, timings: dict[str, float],
               cancel: Cancel) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        o = self.options
        basis = self.basis
        n, k = basis.code.n, strokes.k
        t = time.perf_counter()
        G = np.stack([basis.set_sum(S, u) for S, u in zip(strokes.sets, strokes.weights)],
                     axis=1)
        qk = 2.0 * np.eye(k) - np.ones((k, k))
        # γ: non-zero eigenvalues of Φᵀ Q Φ = G qk Gᵀ (Ŝ = I in these coordinates)
        s, E = sla.eigh(G.T @ G)
        R = (E * np.sqrt(np.maximum(s, 0))) @ E.T
        gamma = np.sort(np.linalg.eigvalsh(R @ qk @ R))[::-1]
        gamma = np.concatenate([gamma, np.zeros(max(0, basis.size - k))])
        gamma = np.sort(gamma)[::-1]
        # §5.2's formula or §5.3's constant
        beta0 = (0.5 + 0.4 * strokes.count / n) if o["beta0"] is None else float(o["beta0"])
        g_k1 = gamma[k - 2]
        if not g_k1 > 0:
            raise InvalidInputError(
                "the strokes cannot be told apart on the landmark graph (γ_{k−1} ≤ 0): their "
                "pixels share the same landmark codes; draw them elsewhere or use more landmarks")
        beta = beta0 * g_k1
        if beta >= gamma[0]:
            raise InvalidInputError(f"β = {beta:.3g} ≥ γ_max = {gamma[0]:.3g}: no solution "
                                    "(Algorithm 1, step 6); use a smaller beta0")
        Qz = G @ qk @ G.T
        timings["constraints"] = time.perf_counter() - t
        check_cancel(cancel)

        t_eig = time.perf_counter()
        timings["partition"] = 0.0
        H = basis.complement()
        a_diag = 1.0 - basis.lam
        Ah = (H.T * a_diag) @ H
        Bh = H.T @ Qz @ H - beta * np.eye(H.shape[1])
        alpha, RA = sla.eigh((Ah + Ah.T) / 2)
        N = RA / np.sqrt(np.maximum(alpha, 0) + A_EPS)
        C = N.T @ Bh @ N
        mu, W = sla.eigh((C + C.T) / 2)
        pos = np.flatnonzero(mu > 0)                                   # step 7
        if pos.size == 0:
            raise InvalidInputError("no eigenvector satisfies the constraints (no λ > 0); "
                                    "use a smaller beta0")
        Z = H @ (N @ W[:, pos])
        Z /= np.linalg.norm(Z, axis=0)                                 # step 8
        cost = np.einsum("ij,i,ij->j", Z, a_diag, Z)
        m = min(k - 1, pos.size)
        while True:
            sel = np.argsort(cost, kind="stable")[:m]                  # step 10
            V = Z[:, sel]
            VAV = (V.T * a_diag) @ V
            Y = basis.T @ (V @ (np.eye(m) - VAV))                      # step 11 (coefficients)
            lam = 1.0 / mu[pos][sel]
            check_cancel(cancel)
            labels, X, separated = self._partition(Y, strokes, timings, cancel)
            # One more of the feasible vectors when the strokes are not separated (issue 10).
            if separated or m >= min(k, pos.size):
                break
            m += 1
        timings["eigensolver"] = time.perf_counter() - t_eig - timings["partition"]
        return labels, X, lam, {"beta": float(beta), "beta0": float(beta0),
                                "gamma_k-1": float(g_k1)}
