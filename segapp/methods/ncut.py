"""Unconstrained spectral clustering (normalized cut), the baseline of every paper here.

Shi & Malik's relaxation ``L_D x = λ D x`` on the same image graph as FAST-GE (FAST-GE's
problem with no constraint edges: ``H = K``, footnote 1 of §4.3), k − 1 … k smallest
non-trivial eigenvectors by the same AMG-preconditioned LOBPCG, embedding of Fig. 2, k-means
with random k-means++ restarts only (no stroke seeding: the strokes must not steer the
clustering), and only then Hungarian matching of the clusters to the user's labels by stroke
overlap — the strokes name the clusters, they do not shape them. As in every method, the
share of each label's painted pixels the clustering gave that label is reported
(``stroke_agreement``, ``unplaced_labels``) and the painted pixels then keep their label.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..solve import EigenProblem, GraphSolver, Pencil, SolveSettings
from ..cancel import CancelToken
from ..strokes.reading import Strokes
from ..graphs import Graph
from ..options import KMEANS_RESTARTS, Option, Settings, override, pick
from ..partition import embed, kmeans, match_labels
from ..result import Segmentation
from .fastge import OPTIONS as FASTGE_OPTIONS
from .base import n_vectors
from .graph_method import GRAPH_OPTIONS, GraphMethod

#: Only what the baseline uses (no constraint or warm-start options). Its multigrid hierarchy
#: is built once per graph (no strokes in it), so the AMG threshold is a set-up option here.
#: ``eig_tol`` is tighter than FAST-GE's: the normalized-cut pencil has no eight-decade gap
#: under its wanted eigenvalues, and at 1e-3 the Ritz values "settled" on vectors still far
#: from converged (relative residual 1e-2; the long fuzz's seeds 168 and 241 gave partitions
#: agreeing 61% and 66% with a fresh solve of the same image; none below 89% at 1e-5).
OPTIONS: tuple[Option, ...] = GRAPH_OPTIONS + override(
    pick(FASTGE_OPTIONS, "n_vectors", "amg_theta", "maxiter", "eig_tol", "res_tol",
         "on_nonconvergence", "seed"),
    amg_theta={"stage": "setup"}, eig_tol={"default": 1e-5},
    maxiter={"help": "LOBPCG iteration cap"}) + (KMEANS_RESTARTS,)


class NCut(GraphMethod):
    """Normalized-cut spectral clustering on the image graph; strokes only name the clusters."""

    name = "ncut"
    description = ("unconstrained normalized-cut spectral clustering (Shi & Malik 2000); "
                   "strokes only name the clusters — the papers' baseline")
    constrained = False
    options = OPTIONS

    def __init__(self, graph: Graph, settings: Settings | None = None, **options: Any) -> None:
        super().__init__(graph, settings, **options)
        #: The solve stage (:class:`~segapp.solve.GraphSolver`): no strokes in the pencil, so
        #: its hierarchy, built on the first edit, serves every edit, and each solve starts
        #: from the last eigenvectors.
        self.solver = GraphSolver.of(graph)

    def _read_strokes(self, scribbles: np.ndarray, confidence: np.ndarray | None) -> Strokes:
        """The strokes only name the clusters: a confidence changes nothing (not read)."""
        return super()._read_strokes(scribbles, None)

    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Segmentation:
        g, o = self.graph, self.settings
        label_ids, sets = strokes.label_ids, strokes.sets
        k = strokes.k
        # k − 1 non-trivial vectors carry k clusters (the constant is projected out); a k-th
        # from the bulk of the spectrum scrambles the embedding (84.7% vs ≥ 98% on a test image).
        m = n_vectors(o["n_vectors"], k)
        pencil = Pencil(g.laplacian, g.degrees)
        rng = np.random.default_rng(o["seed"])   # the random start's, then k-means'
        settings = SolveSettings(theta=o["amg_theta"], maxiter=o["maxiter"], eig_tol=o["eig_tol"],
                                 res_tol=o["res_tol"], warm_start=True,
                                 on_nonconvergence=o["on_nonconvergence"])
        lam, X, diag = self.solver.eigenpairs(
            EigenProblem(pencil, m, settings=settings, random=rng), cancel, timings)
        t = time.perf_counter()
        U, _, V = embed(X, pencil)
        codes = kmeans(U, k, restarts=max(o["kmeans_restarts"], 1), rng=rng, cancel=cancel)
        labels = match_labels(codes, sets, label_ids, k)
        timings["partition"] = time.perf_counter() - t
        # Unconstrained by design: the strokes did not shape the clusters. As every method,
        # the result says how many painted pixels the clustering gave their label (measured
        # before they are set to it) and which labels it could not place; then the painted
        # pixels keep their label, as in every other method (issue 23: with 12–50 labels or
        # overlapping strokes, 2–12 per label were silently relabelled).
        return Segmentation(labels, label_ids, V, lam, diagnostics=diag)
