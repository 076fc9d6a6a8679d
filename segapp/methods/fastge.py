"""FAST-GE: constrained spectral segmentation by a generalized eigenproblem of two Laplacians.

Cucuringu, Koutis, Chawla, Miller, Peng, "Simple and Scalable Constrained Clustering: A
Generalized Spectral Method", AISTATS 2016.

Pipeline (one :meth:`FastGE.update` per scribble edit):

1. data graph ``G_D`` of the image (``segapp.graphs.image``, §7.3), built once per image;
2. ML / CL cliques of the strokes with the merge weights ``d_i d_j / (d_min d_max)`` (§4.7),
   as exact diagonal + low-rank operators (``segapp.strokes.constraints``);
3. the ``m`` smallest pairs of ``L_G x = λ L_H x`` on ``dᵀx = 0`` (§4.3, ``segapp.solve.pencil``).
   By default (``eigensolver="harmonic"``, ``segapp.solve.harmonic``) as the Ritz pairs of the
   pencil on the strokes' harmonic potentials: the stiff must-link cliques make the wanted
   eigenvectors constant on each label's strokes, so they lie in the span of k − 1 Dirichlet
   solves with ``L_D``, done by block CG preconditioned by smoothed-aggregation AMG (§4.5,
   ``segapp.solve.amg``), whose hierarchy is Galerkin-updated from edit to edit. Otherwise — and for
   soft strokes, a k-th vector or a graph part no stroke reaches — by LOBPCG
   (``segapp.solve.lobpcg``) preconditioned by AMG on ``L_D`` plus the strokes' sparsified
   must-link graph, started from the strokes' sources ``M u_a`` (or, with ``warm_start``,
   the previous eigenvectors plus a source for each label whose strokes changed);
4. embedding (Fig. 2), k-means anchored to the strokes, or the Cheeger sweep for k = 2
   (§4.6).

``m`` defaults to k − 1: cannot-link cliques between k labels create k − 1 very small
eigenvalues followed by a large gap, and asking LOBPCG for a k-th vector makes the slow k-th
Ritz value govern the stopping test (measured 133 vs 10 iterations in early experiments).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..solve.amg import DEFAULT_THETA, AMGPreconditioner
from .answer_memory import AnswerMemory, strokes_key
from ..cancel import CancelToken
from ..strokes.constraints import Constraints, build_constraints, sparsify, stroke_indicators
from ..strokes.reading import Strokes, fingerprint
from ..solve.eigensolve import amg_preconditioner, eigenpairs
from ..solve.eigensolve import nonconvergence as _nonconvergence
from ..solve.harmonic import HarmonicSolver
from ..solve.ordering import offsets_reach
from ..graphs import Graph
from ..options import SEED, Option, Settings
from ..partition import (STROKE_AGREEMENT, embed, ratio_cut, reround_degenerate,
                         rounding_confidence, stable_anchored_kmeans, stroke_agreement,
                         sweep_cut)
from ..solve.pencil import Pencil
from ..solve.settling import LabelSettling
from .base import Answer, n_vectors
from .graph_method import GRAPH_OPTIONS, GraphMethod

#: FAST-GE's options after the graph's. All are per-solve: the multigrid hierarchy follows
#: the strokes (updated or rebuilt per edit; a new ``amg_theta`` starts a new one). Bounds keep
#: a solve bounded in time and memory.
OPTIONS: tuple[Option, ...] = GRAPH_OPTIONS + (
    Option("constraint_weight", float, 1.0, "multiplies the must-link / cannot-link weights "
           "d_i d_j/(d_min d_max) of §4.7", "solve", low=1e-6, high=1e6),
    Option("n_vectors", int, None, "eigenvectors used for k labels (k − 1 or k)", "solve",
           low=1, high=100, none_ok=True, none_means="k − 1"),
    Option("k2_partition", str, "sweep", "two labels: Cheeger sweep cut or k-means", "solve",
           choices=("sweep", "kmeans")),
    # On by default (issue 10 item 4): fewer results made worse by a corrective stroke and
    # fewer strokes to 85/90% IoU on both dev sets and in the click protocol, with the gate
    # partition.PREVIOUS_GATE (docs/quality.md); a session's answer then depends on its edit
    # history, and undo gives back what was shown (answer_memory).
    Option("stable_refinement", bool, True, "after an edit that only adds strokes, keep the "
           "cut closest to the previous answer among near-equal ones while that answer is "
           "still a near-best cut (fewer results made worse by a stroke; the answer then "
           "depends on the edit history; undo gives back the answer shown)", "solve"),
    Option("amg_theta", float, DEFAULT_THETA, "strength threshold of the AMG aggregation",
           "solve", low=0.0, high=1.0),
    Option("eigensolver", str, "harmonic", "harmonic: the strokes' harmonic potentials (k − 1 "
           "CG solves) + Rayleigh–Ritz of the pencil; segapp: our block LOBPCG on the pencil; "
           "scipy: scipy's LOBPCG", "solve", choices=("harmonic", "segapp", "scipy")),
    # Issue 21: the harmonic potentials from a factor of the Dirichlet matrix updated per edit
    # (segapp.solve.direct): a warm edit 0.17 s where CG took 0.72 s at 250K px (docs/architecture.md).
    Option("linear_solver", str, "auto", "harmonic: how the potentials are solved: auto = "
           "from a factor of the Dirichlet matrix updated per edit (CHOLMOD) where installed, "
           "iteratively (CG with an AMG preconditioner) otherwise or until a large image's "
           "factor is ready; direct = always from a factor; iterative = never factor", "solve",
           choices=("auto", "direct", "iterative")),
    Option("cg_tol", float, 1e-4, "harmonic: stop the potentials' CG at this relative "
           "residual", "solve", low=1e-12, high=0.5),
    Option("maxiter", int, 300, "iteration cap of the CG or LOBPCG", "solve", low=1,
           high=1000),
    Option("eig_tol", float, 1e-3, "LOBPCG: stop when the Ritz values change by less than "
           "this (relative), twice", "solve", low=1e-12, high=0.5),
    # Off by default: on slowly converging solves (1.1M px) the labels drift by < 0.1% per
    # iteration for many iterations, and the stop gave 93.8% of a tight solve's labels where
    # the eigenvalue test gave 99.2% (250K px, 4 labels: 98.4% vs 99.9%). See segapp.solve.settling.
    Option("label_tol", float, 0.0, "LOBPCG: also stop when at most this share of pixels "
           "changes its nearest-stroke label, twice (0: off; faster, less safe)", "solve",
           low=0.0, high=0.1),
    Option("res_tol", float, 1e-6, "LOBPCG: stop when every relative residual is below this",
           "solve", low=0.0, high=1.0),
    Option("on_nonconvergence", str, "raise", "at maxiter: fail, or warn and use the vectors "
           "reached", "solve", choices=("raise", "warn")),
    # LOBPCG: off unless asked: after one added stroke the stroke potentials M·u_a (its cold
    # start) gave 5-8 iterations at 44K-250K px where the previous vectors gave 6-16, and
    # labels 100% equal to a cold solve instead of 99.8-99.95% (coffee, k = 4, 5; 2026-11-23).
    # Harmonic: on: the updated hierarchy needs 12-14 CG steps where a new one needs 12-13,
    # and saves its set-up (250K / 4: 0.73-0.77 s vs 0.93-1.0 s per edit; 1.1M / 5: 4.0-4.3 s
    # vs 5.4-8.1 s; labels 99.98-99.99% of a cold solve; 2026-11-24).
    Option("warm_start", bool, None, "reuse the previous edit: harmonic: its multigrid "
           "hierarchy (Galerkin-updated to the new strokes) and potentials; LOBPCG: its "
           "eigenvectors plus sources of the changed labels", "solve", none_ok=True,
           none_means="on for the harmonic solve, off for LOBPCG"),
    SEED,
)


class FastGE(GraphMethod):
    """FAST-GE on one image graph, keeping what can be reused between scribble edits."""

    name = "fastge"
    description = ("FAST-GE (Cucuringu et al. 2016): generalized eigenproblem L_G x = λ L_H x "
                   "from the strokes' harmonic potentials (or LOBPCG); the default")
    constrained = True
    options = OPTIONS
    prepares = True

    def __init__(self, graph: Graph, settings: Settings | None = None, **options: Any) -> None:
        super().__init__(graph, settings, **options)
        self.amg: AMGPreconditioner | None = None
        self.harmonic: HarmonicSolver | None = None
        self._connected: bool | None = None
        self._X: np.ndarray | None = None
        self._stroke_keys: dict[int, bytes] = {}
        #: Earlier answers: stable refinement's tie-breaker and what undo gives back.
        self.answers = AnswerMemory()

    def prepare_next(self, cancel: CancelToken) -> None:
        """Work for the next edit, after this one's answer (:meth:`HarmonicSolver.prepare`)."""
        if self.harmonic is not None:
            self.harmonic.prepare(cancel)

    def prepares_alongside(self) -> bool:
        """Whether the next edit's solve may run while :meth:`prepare` still does."""
        return self.harmonic is not None and self.harmonic.prepares_alongside()

    def prepared(self) -> bool:
        """Whether the next edit is answered from a factor (a fraction of a cold solve)."""
        h = self.harmonic
        return (h is not None and h.direct is not None and h.direct.base is not None
                and self.settings["linear_solver"] != "iterative"
                and self.settings["eigensolver"] == "harmonic")

    def _preconditioner(self, ml_sparse: sp.csr_matrix, timings: dict[str, float],
                        cancel: CancelToken) -> None:
        """Build LOBPCG's AMG hierarchy on ``L_D + L̃_ML + εD`` for the current strokes.

        Rebuilt on every edit: the preconditioner must see the must-link edges. Measured at
        250K pixels (4 labels, one stroke added): a Galerkin update of the previous hierarchy
        (same aggregates, coarse operators corrected by ``Pᵀ ΔA P``, 0.03 s) needed 17 LOBPCG
        iterations where a new hierarchy (0.4 s) needed 9, so rebuilding is faster overall.
        """
        g = self.graph
        t = time.perf_counter()
        self.amg = amg_preconditioner(g.laplacian, g.degrees, must_link=ml_sparse,
                                      theta=self.settings["amg_theta"], cancel=cancel)
        timings["amg_setup"] = timings.get("amg_setup", 0.0) + time.perf_counter() - t

    def _harmonic_applies(self, m: int, cons: Constraints, soft: bool) -> bool:
        """The harmonic potentials give the pencil's k − 1 smallest pairs in the stiff-ML limit.

        Not for a k-th vector (the potentials span k − 1 directions besides the constant),
        soft strokes (their finite weights are the point), or a graph with a component no
        stroke reaches (its potentials are undefined); LOBPCG solves those.
        """
        if self.settings["eigensolver"] != "harmonic" or soft or m >= cons.k:
            return False
        if self._connected is None:
            g = self.graph
            self._connected = bool(g.offsets) or connected_components(
                g.laplacian, directed=False)[0] == 1
        return self._connected

    # -- the eigenproblem ------------------------------------------------------------------
    def _initial_block(self, pencil: Pencil, cons: Constraints, m: int) -> tuple[np.ndarray, bool]:
        """One preconditioned source per label; with ``warm_start``, the previous eigenvectors.

        ``M u_a`` (u_a = degrees on label a's strokes) is one multigrid approximation of the
        potential ``A⁻¹u_a``: smooth, nearly constant inside the region of stroke a, which is
        what the eigenvectors look like. A warm start takes the previous vectors plus the
        sources of the labels whose strokes changed; the initial Rayleigh–Ritz keeps the best
        m directions. Returns the block and whether it is a warm start.
        """
        n = self.graph.n
        sources = stroke_indicators(self.graph.degrees, cons.sets)
        if self._X is not None and self.settings["warm_start"] is True:
            # Old vectors first; labels whose strokes changed bring their own source, so the
            # initial subspace already contains the direction the edit pulls towards.
            changed = [a for a, (i, S) in enumerate(zip(cons.label_ids, cons.sets))
                       if self._stroke_keys.get(i) != fingerprint(S)]
            extra = self.amg(sources[:, changed]) if changed else np.zeros((n, 0))
            X0 = np.hstack([self._X, extra])
            if X0.shape[1] >= m:
                return X0, True
        return self.amg(sources), False

    # -- one edit --------------------------------------------------------------------------
    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Answer:
        """Eigenpairs and partition for the given strokes on the graph built once."""
        o = self.settings
        g = self.graph
        t = time.perf_counter()
        cons = build_constraints(strokes, g.degrees, constraint_weight=o["constraint_weight"])
        timings["constraints"] = time.perf_counter() - t
        pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
        m = n_vectors(o["n_vectors"], cons.k)
        stable = o["stable_refinement"]
        # Undo, redo or the same strokes again: the answer shown then (answer_memory).
        key = strokes_key(cons, o) if stable and not strokes.soft else None
        shown = self.answers.recall(key) if key is not None else None
        if shown is not None:
            m, shown = shown
        self.amg = None
        while True:
            if self._harmonic_applies(m, cons, soft=strokes.soft):
                lam, X, diag = self._harmonic_pairs(pencil, cons, m, cancel, timings)
            else:
                if self.amg is None:
                    self._preconditioner(sparsify(cons, g.n), timings, cancel)
                lam, X, diag = self._eigenpairs(pencil, cons, m, cancel, timings)
            cancel.check()
            t = time.perf_counter()
            if shown is not None:
                V = embed(X, pencil)[2]
                labels = shown
                agreement = stroke_agreement(np.searchsorted(cons.label_ids, labels), cons.sets)
                break
            previous = self.answers.tie_breaker(cons) if stable else None
            labels, V, agreement = partition(X, pencil, cons, k2_partition=o["k2_partition"],
                                             seed=o["seed"], cancel=cancel, previous=previous)
            timings["partition"] = timings.get("partition", 0.0) + time.perf_counter() - t
            # Every label's strokes must come back as that label (issue 10). k − 1 vectors
            # separate k stroke sets in exact arithmetic (each maps to a vertex of a simplex),
            # but row normalisation can fold two labels onto one direction: one more vector
            # (the k-th pair) then tells them apart.
            if agreement.min() >= STROKE_AGREEMENT or m >= cons.k:
                break
            m += 1
        self.answers.remember(cons, labels, key, m)
        codes = strokes.codes(labels)   # before the strokes are clamped
        sets, shape = cons.sets, g.shape
        # Computed when first read (0.02–0.16 s at 0.5 MP): an edit's answer does not wait.
        conf = lambda: rounding_confidence(codes, V, sets).reshape(shape)  # noqa: E731
        return Answer(labels, V, np.asarray(lam), diag, agreement, conf)

    def _harmonic_pairs(self, pencil: Pencil, cons: Constraints, m: int, cancel: CancelToken,
                        timings: dict[str, float]) -> tuple:
        """The m = k − 1 pairs from the strokes' harmonic potentials (:mod:`segapp.solve.harmonic`)."""
        o = self.settings
        if self.harmonic is None or self.harmonic.theta != o["amg_theta"]:
            g = self.graph
            grid = (g.shape, offsets_reach(g.offsets)) if g.offsets else None
            self.harmonic = HarmonicSolver(g.laplacian, g.degrees, theta=o["amg_theta"],
                                           grid=grid)
        t = time.perf_counter()
        steps: dict[str, float] = {}
        lam, X, diag = self.harmonic.eigenpairs(
            pencil, cons.sets, list(cons.label_ids), nev=m, tol=o["cg_tol"],
            maxiter=o["maxiter"], reuse=o["warm_start"] is not False,
            linear_solver=o["linear_solver"], cancel=cancel, timings=steps)
        timings["amg_setup"] = timings.get("amg_setup", 0.0) + steps.get("amg_setup", 0.0)
        timings["eigensolver"] = (timings.get("eigensolver", 0.0) + time.perf_counter() - t
                                  - steps.get("amg_setup", 0.0))
        self._X = None  # a later LOBPCG warm start must not mix the two solvers' vectors
        if not diag.converged:
            _nonconvergence(diag, o["on_nonconvergence"], "try a larger maxiter or cg_tol")
        return lam, X, diag

    def _eigenpairs(self, pencil: Pencil, cons: Constraints, m: int, cancel: CancelToken,
                    timings: dict[str, float]) -> tuple:
        """The m smallest pairs of the pencil by LOBPCG (warm-started if asked), checked."""
        o = self.settings
        t = time.perf_counter()
        X0, warm = self._initial_block(pencil, cons, m)
        solver = "scipy" if o["eigensolver"] == "scipy" else "segapp"
        lam, X, diag = eigenpairs(pencil, X0, self.amg, nev=m, solver=solver,
                                  maxiter=o["maxiter"], eig_tol=o["eig_tol"],
                                  res_tol=o["res_tol"], cancel=cancel,
                                  on_nonconvergence=o["on_nonconvergence"],
                                  monitor=LabelSettling(pencil, cons.sets, o["label_tol"]),
                                  advice="try a larger maxiter or a smaller constraint_weight")
        diag.warm_start = warm
        self._X = X
        self._stroke_keys = dict(zip(cons.label_ids, cons.strokes.keys()))
        timings["eigensolver"] = timings.get("eigensolver", 0.0) + time.perf_counter() - t
        return lam, X, diag


def partition(X: np.ndarray, pencil: Pencil, cons: Constraints, *, k2_partition: str = "sweep",
              seed: int = 0, cancel: CancelToken | None = None,
              previous: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels (user ids, flat), the embedding vectors of X, and each label's stroke agreement.

    Embedding of Fig. 2 (§4.4); for two labels the Cheeger sweep (§4.6), otherwise k-means
    with each cluster anchored to one label's strokes (:func:`segapp.partition.anchored_kmeans`).
    The labels are *not* clamped to the strokes here: ``agreement[a]`` is the share of label
    a's painted pixels that the partition itself gives to label a, which the caller checks.

    ``previous`` (user ids, flat; the previous edit's answer with the same labels) makes the
    rounding stable under refinement (issue 10, option ``stable_refinement``): the sweep keeps,
    among the local minima of its ratio within :data:`segapp.partition.SWEEP_TOLERANCE` of the
    best, the cut closest to it, and k-means also starts from its regions
    (:func:`segapp.partition.stable_anchored_kmeans`) — both only while the previous answer,
    the new strokes painted in, is itself within :data:`segapp.partition.PREVIOUS_GATE` of
    the fresh answer in FAST-GE's objective (:func:`segapp.partition.ratio_cut`). The answer
    then depends on the edit history, not only on the strokes; without ``previous`` (a new
    session, :func:`segapp.segment`) it is the history-free one.
    """
    k = cons.k
    U, _, V = embed(X, pencil)
    before = None
    if previous is not None:
        before = np.searchsorted(np.asarray(cons.label_ids), previous).astype(np.int64)
        for a, S in enumerate(cons.sets):     # the previous answer with the new strokes
            before[S] = a
    codes = None
    if k == 2 and k2_partition == "sweep":
        x = V[:, 0]
        low = int(np.mean(x[cons.sets[0]]) > np.mean(x[cons.sets[1]]))  # label of the low side
        mask = sweep_cut(x, pencil, cons,
                         previous=None if before is None else before == low).astype(np.int64)
        # The prefix is label 0's side if label 0's strokes are mostly in it.
        codes = mask ^ 1 if np.mean(mask[cons.sets[0]]) >= 0.5 else mask
        if stroke_agreement(codes, cons.sets).min() < STROKE_AGREEMENT:
            codes = None  # the best ratio cut does not separate the strokes: use k-means
    if codes is None:
        codes = stable_anchored_kmeans(U, cons.sets, before,
                                       objective=lambda c: ratio_cut(c, pencil, cons),
                                       rng=np.random.default_rng(seed), cancel=cancel)
    # A click cut off alone (shrinking bias): its region from the potentials (issue 22).
    codes = reround_degenerate(codes, V, pencil, cons)
    agreement = stroke_agreement(codes, cons.sets)
    return np.asarray(cons.label_ids, np.int32)[codes], V, agreement
