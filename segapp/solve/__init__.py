"""The solve stage: every graph method's eigenpairs and stroke potentials, behind one door.

FAST-GE (``L_G x = λ L_H x``, Cucuringu et al. 2016 §4.3–4.5), the normalized cut
(``L x = μ D x``) and CCSKL's smoothest normalized-Laplacian eigenvectors all ask for the
smallest pairs of a :class:`~segapp.solve.pencil.Pencil` on ``dᵀx = 0``; FAST-GE and CCSKL
also for the strokes' harmonic potentials. A method builds one :class:`GraphSolver` per graph
(PyAMG's ``MultilevelSolver`` is the model: set up once, solve per call), describes each
edit's problem once (:class:`EigenProblem`: the pencil, how many pairs, the strokes, the
settings) and asks :meth:`GraphSolver.eigenpairs` or :meth:`GraphSolver.potentials`. The door
chooses and builds every solver, and says which ran and why in the
:class:`~segapp.solve.diagnostics.SolverDiagnostics` of the answer:

* the **eigensolver** (:func:`choose_eigensolver`; option ``eigensolver``, ``"segapp"`` the
  old name of ``"lobpcg"``): ``"harmonic"`` — the pencil's Ritz pairs on the strokes' harmonic
  potentials (:mod:`segapp.solve.harmonic`) where they give its pairs, else ``"lobpcg"`` — our
  block LOBPCG (:mod:`segapp.solve.lobpcg`) preconditioned by a smoothed-aggregation V-cycle
  (:mod:`segapp.solve.amg`) on ``L_D`` plus the strokes' sparsified must-links;
* the **linear solver** of the potentials (option ``linear_solver``): a CHOLMOD factor of the
  Dirichlet matrix updated per edit (:mod:`segapp.solve.direct`) or block CG with an AMG
  V-cycle, inside the per-graph :class:`~segapp.solve.harmonic.HarmonicSolver`; the door keeps
  at most two of those (the plain one and that of the current appearance weight γ, whose
  factor is one of ``L + γD``).

Cancellation is one :class:`~segapp.cancel.CancelToken` handed down as a parameter to every
loop (LOBPCG, CG, V-cycle, factorization); the methods make it from whatever their caller
passed.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Iterator, Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..ahead import Ahead
from ..cancel import NEVER, CancelToken
from ..graphs import Graph
from ..strokes.constraints import Constraints, sparsify, stroke_indicators
from ..strokes.reading import fingerprint
from . import direct
from .amg import DEFAULT_THETA, AMGPreconditioner, amg_preconditioner
from .diagnostics import SolverDiagnostics, handle_nonconvergence
from .harmonic import HarmonicSolver
from .lobpcg import lobpcg
from .ordering import offsets_reach
from .pencil import Pencil

#: An eigensolver's name (option ``eigensolver``).
Eigensolver = Literal["harmonic", "lobpcg"]
#: The selectable eigensolvers and the old names still accepted.
EIGENSOLVERS: tuple[str, ...] = ("harmonic", "lobpcg")
ALIASES: dict[str, str] = {"segapp": "lobpcg"}
#: What a non-converged harmonic solve suggests (its knobs, whatever the method).
HARMONIC_ADVICE = "try a larger maxiter or cg_tol"


@dataclass(frozen=True)
class SolveSettings:
    """Which solvers to use, how hard to solve, and what a solve that hits its cap means.

    ``eigensolver`` is the one asked for (:func:`choose_eigensolver` may pick LOBPCG instead);
    ``theta`` the AMG strength threshold of every hierarchy. ``maxiter`` caps LOBPCG's
    iterations or the potentials' CG steps; LOBPCG stops when the Ritz values settled to
    ``eig_tol`` (relative) twice or every relative residual is below ``res_tol``; the
    potentials' CG stops at relative residual ``cg_tol``. ``linear_solver`` is the harmonic
    path's (:meth:`HarmonicSolver.potential_ritz_pairs`). ``warm_start``: reuse the previous
    solve — the harmonic path's factor or hierarchy (unless False), LOBPCG's last vectors (only
    if True). ``on_nonconvergence`` raises :class:`~segapp.errors.SolverError` or warns;
    ``advice`` is what LOBPCG's message suggests (the calling method's options).
    """

    eigensolver: str = "lobpcg"
    theta: float = DEFAULT_THETA
    maxiter: int = 300
    eig_tol: float = 1e-3
    res_tol: float = 1e-6
    cg_tol: float = 1e-4
    linear_solver: str = "auto"
    warm_start: bool | None = None
    on_nonconvergence: Literal["raise", "warn"] = "raise"
    advice: str = "try a larger maxiter"


@dataclass(frozen=True, eq=False)
class EigenProblem:
    """The ``nev`` smallest pairs of ``pencil`` on ``dᵀx = 0``.

    Attributes
    ----------
    pencil : Pencil
    nev : int
        Pairs wanted.
    sets, label_ids
        Each label's stroke pixels and its id (the harmonic path's sources and LOBPCG's start;
        empty without strokes).
    settings : SolveSettings
    constraints : Constraints, optional
        The strokes' constraint operators: LOBPCG's preconditioner sees their must-links (one
        hierarchy per constraint set).
    soft : bool
        Soft strokes (finite weights): only LOBPCG solves them.
    prior : ndarray (n, k), optional
        The labels' appearance posteriors (:mod:`segapp.appearance`), columns in the order of
        ``sets``: the harmonic path's anchors (:meth:`HarmonicSolver.potential_ritz_pairs`),
        with weight ``prior_weight`` γ per unit degree.
    start : ndarray (n, b), optional
        LOBPCG's initial block, ``b ≥ nev`` (extra columns are guard vectors); without it the
        strokes' preconditioned sources, the previous vectors (``warm_start``) or ``M G`` for
        a Gaussian block G drawn from ``random``.
    random : numpy Generator, optional
        Where a random start draws from (a method may go on drawing from it after the solve).
    """

    pencil: Pencil
    nev: int
    sets: tuple[np.ndarray, ...] = ()
    label_ids: tuple[int, ...] = ()
    settings: SolveSettings = SolveSettings()
    constraints: Constraints | None = None
    soft: bool = False
    prior: np.ndarray | None = None
    prior_weight: float = 0.0
    start: np.ndarray | None = None
    random: np.random.Generator | None = None


class Eigenpairs(NamedTuple):
    """Ascending eigenvalues (nev,), B-orthonormal eigenvectors (n, nev), the solve's report."""

    values: np.ndarray
    vectors: np.ndarray
    diagnostics: SolverDiagnostics


def canonical_eigensolver(name: str) -> str:
    """The eigensolver a (possibly old) option value names: ``"segapp"`` is ``"lobpcg"``."""
    return ALIASES.get(name, name)


def choose_eigensolver(problem: EigenProblem, connected: bool | None = None
                       ) -> tuple[Eigensolver, str]:
    """``("harmonic", "")`` where the harmonic potentials give the pencil's pairs, else
    ``("lobpcg", why)`` — why not the harmonic path, when it was asked for.

    The potentials give the k − 1 smallest pairs in the stiff must-link limit
    (:mod:`segapp.solve.harmonic`): not a k-th vector (they span k − 1 directions besides the
    constant), not soft strokes (their finite weights are the point), not a graph with a
    component no stroke reaches (its potentials are undefined; ``connected`` False, or a
    function asked last, as it may cost a components search).
    """
    name = canonical_eigensolver(problem.settings.eigensolver)
    if name not in EIGENSOLVERS:
        raise ValueError(f"unknown eigensolver {name!r}; one of {', '.join(EIGENSOLVERS)}")
    if name != "harmonic":
        return "lobpcg", ""
    why = ("soft strokes" if problem.soft else
           f"{problem.nev} vectors asked for {len(problem.sets)} labels"
           if problem.nev >= len(problem.sets) else
           "a part of the graph no stroke reaches" if not (
               connected() if callable(connected) else connected in (None, True)) else "")
    if why:
        return "lobpcg", f"LOBPCG, not the harmonic potentials: {why}"
    return "harmonic", ""


def random_start(M: AMGPreconditioner, n: int, m: int, rng: np.random.Generator,
                 cancel: CancelToken = NEVER) -> np.ndarray:
    """``M G`` for a Gaussian n × m block G: a start with the preconditioner's smoothness."""
    return M(rng.standard_normal((n, m)), cancel)


def analysis_ahead(shape: tuple[int, int], offsets: list[tuple[int, int]]) -> Ahead | None:
    """Begin the direct solver's analysis of an image graph's pixel grid now, before its
    weights exist — it depends on the grid only (:func:`segapp.graphs.image.grid_pattern`) —
    so that it runs beside the graph's build (0.17 s at 250K px, 0.6 s of CPU at 1.1M, off
    the first answer's path); :meth:`GraphSolver.analyse_ahead` takes it. None where the
    direct solver cannot serve (above :data:`~segapp.solve.direct.MAX_FACTORED_PIXELS`, no
    usable CHOLMOD, a grid of fewer than two pixels)."""
    from ..graphs.image import grid_pattern

    if not direct.serves(int(shape[0]) * int(shape[1])):
        return None
    return Ahead(lambda: direct.GridAnalysis(grid_pattern(shape, offsets), shape,
                                            offsets_reach(offsets)), name="segapp-analysis")


class GraphSolver:
    """The solve stage of one graph: built once per image, asked once per edit.

    Keeps what carries over from edit to edit: at most two
    :class:`~segapp.solve.harmonic.HarmonicSolver` s (each with its factor and hierarchy: the
    plain one and that of the current appearance weight — an edit whose labels' colours stop
    or start differing beyond noise needs the other, and a flip back costs no factorization
    again), LOBPCG's hierarchy (for one constraint set) and its last vectors (a warm start),
    and whether the graph is connected.

    Parameters
    ----------
    laplacian, degrees
        The graph's ``L_D`` and degrees.
    grid : (shape, reach), optional
        The pixel grid of an image graph: only image graphs get the direct solver (and are
        connected by construction).
    """

    def __init__(self, laplacian: sp.csr_matrix, degrees: np.ndarray, *,
                 grid: tuple[tuple[int, ...], int] | None = None) -> None:
        self.laplacian = laplacian
        self.degrees = degrees
        self.grid = grid
        #: The harmonic path's solver of the last solve (its factor is what ``prepare`` makes).
        self.harmonic: HarmonicSolver | None = None
        self._harmonic: dict[tuple[float, float], HarmonicSolver] = {}
        self._amg: AMGPreconditioner | None = None
        self._amg_for: tuple[float, Constraints | None] | None = None
        self._X: np.ndarray | None = None               # LOBPCG's last vectors
        self._stroke_keys: dict[int, bytes] = {}        # and the strokes they were for
        self._connected: bool | None = None
        self._analysis: Ahead | None = None             # the grid's analysis (analyse_ahead)

    @classmethod
    def of(cls, graph: Graph) -> "GraphSolver":
        """The solver of a built graph (an image graph's pixel grid read from its offsets)."""
        grid = (graph.shape, offsets_reach(graph.offsets)) if graph.offsets else None
        return cls(graph.laplacian, graph.degrees, grid=grid)

    @property
    def n(self) -> int:
        return self.laplacian.shape[0]

    def connected(self) -> bool:
        """Whether the graph is one component (an image graph always is), computed once."""
        if self._connected is None:
            self._connected = self.grid is not None or connected_components(
                self.laplacian, directed=False)[0] == 1
        return self._connected

    # -- per image -------------------------------------------------------------------------
    def analyse_ahead(self, ahead: Ahead | None = None) -> bool:
        """Have the direct solver's per-image analysis (:class:`~segapp.solve.direct.GridAnalysis`)
        made before the first solve needs it: ``ahead``, one begun beside the graph's build
        (:func:`analysis_ahead`), or else one begun now from the graph in a thread of its
        own. Every harmonic solver of the graph (each appearance weight) shares it. Nothing
        where the direct solver cannot serve (not an image graph, above
        :data:`~segapp.solve.direct.MAX_FACTORED_PIXELS`, no usable CHOLMOD) or when one is
        already there. Returns whether it took one."""
        if self._analysis is not None or self.grid is None:
            return False
        if ahead is None:
            if not direct.serves(self.n):
                return False
            ahead = Ahead(direct.GridAnalysis, self.laplacian, *self.grid,
                          name="segapp-analysis")
        self._analysis = ahead
        return True

    def _grid_analysis(self) -> direct.GridAnalysis | None:
        """The analysis :meth:`analyse_ahead` took (waited for), None without one; raises
        what making it raised."""
        return None if self._analysis is None else self._analysis.result()

    # -- per edit --------------------------------------------------------------------------
    def eigenpairs(self, problem: EigenProblem, cancel: CancelToken = NEVER,
                   timings: dict[str, float] | None = None) -> Eigenpairs:
        """The ``problem.nev`` smallest pairs of ``problem.pencil`` on ``dᵀx = 0``, checked.

        By the eigensolver :func:`choose_eigensolver` picks; ``timings`` gets ``amg_setup``
        (a hierarchy or factor this solve built) and ``eigensolver`` (the rest), added to
        what it holds. The problem's non-convergence policy applies.
        """
        timings = {} if timings is None else timings
        which, why = choose_eigensolver(problem, self.connected)
        if which == "harmonic":
            return self._harmonic_pairs(problem, cancel, timings)
        pairs = self._lobpcg_pairs(problem, cancel, timings)
        if why:
            pairs.diagnostics.notes.append(why)
        return pairs

    def potentials(self, sets: list[np.ndarray], *, theta: float = DEFAULT_THETA,
                   tol: float = 1e-4, maxiter: int = 300, shift: float = 0.0,
                   prior: np.ndarray | None = None,
                   cancel: CancelToken = NEVER) -> np.ndarray:
        """``Y`` (n × k): ``Y_a = E_a + φ_a``, every label's strokes extended harmonically,
        from the harmonic solver's factor where it can (updated per edit), else by block CG
        (:meth:`HarmonicSolver.potentials`). With ``shift`` γ > 0 and a ``prior`` (n × k, the
        labels' posteriors), Grady's random walker with priors: ``(L + γD) Y = γ D P`` off
        the strokes (:mod:`segapp.solve.harmonic`, "Appearance")."""
        return self.harmonic_solver(theta, shift).potentials(sets, tol=tol, maxiter=maxiter,
                                                             prior=prior, cancel=cancel)

    def harmonic_solver(self, theta: float, shift: float = 0.0) -> HarmonicSolver:
        """The harmonic solver of ``L + shift·D`` (made on first use; at most two kept: the
        plain one and the current shift's — a new ``theta`` or shift replaces the old ones)."""
        key = (theta, shift)
        if key not in self._harmonic:
            self._harmonic = {k: h for k, h in self._harmonic.items()
                              if k[0] == theta and (k[1] == 0.0) != (shift == 0.0)}
            self._harmonic[key] = HarmonicSolver(self.laplacian, self.degrees, theta=theta,
                                                 grid=self.grid, shift=shift,
                                                 analysis=self._grid_analysis)
        self.harmonic = self._harmonic[key]
        return self.harmonic

    @contextmanager
    def ahead(self, problem: EigenProblem, cancel: CancelToken = NEVER) -> Iterator[bool]:
        """Within: the direct solver's snapshot of ``problem``'s strokes is made in a thread
        of its own (:meth:`HarmonicSolver.factor_ahead`) for the solve of ``problem`` with a
        prior of weight ``problem.prior_weight`` that the caller is computing meanwhile; it
        yields whether that started (not where the harmonic path's direct solver will not
        answer). On the way out that thread has ended: a solve that failed or was cancelled
        first waits for it (at most the factorization a cold solve waited for before)."""
        h = None
        if choose_eigensolver(problem, self.connected)[0] == "harmonic":
            s = problem.settings
            h = self.harmonic_solver(s.theta, problem.prior_weight)
            if not h.factor_ahead(list(problem.sets), linear_solver=s.linear_solver,
                                  reuse=s.warm_start is not False, cancel=cancel):
                h = None
        try:
            yield h is not None
        finally:
            if h is not None:
                h.join_ahead()

    # -- after an answer -------------------------------------------------------------------
    def prepare(self, cancel: CancelToken = NEVER) -> None:
        """Work for the next edit, after this one's answer (:meth:`HarmonicSolver.prepare`:
        the factor of the last strokes)."""
        if self.harmonic is not None:
            self.harmonic.prepare(cancel)

    def prepares_alongside(self) -> bool:
        """Whether the next solve may run while :meth:`prepare` still does: always (a solve
        takes its own snapshot of the factor; without a harmonic solver there is no work)."""
        return True

    def prepared(self) -> bool:
        """Whether the last harmonic solver has a factor to answer the next edit from."""
        h = self.harmonic
        return h is not None and h.direct is not None and h.direct.base is not None

    # -- the two eigensolvers --------------------------------------------------------------
    def _harmonic_pairs(self, problem: EigenProblem, cancel: CancelToken,
                        timings: dict[str, float]) -> Eigenpairs:
        """The m ≤ k − 1 pairs from the strokes' harmonic potentials (:mod:`segapp.solve.harmonic`)."""
        s = problem.settings
        shift = problem.prior_weight if problem.prior is not None else 0.0
        h = self.harmonic_solver(s.theta, shift)
        self._X = None  # a later LOBPCG warm start must not mix the two solvers' vectors
        t = time.perf_counter()
        steps: dict[str, float] = {}
        lam, X, diag = h.potential_ritz_pairs(
            problem.pencil, list(problem.sets), list(problem.label_ids), nev=problem.nev,
            tol=s.cg_tol, maxiter=s.maxiter, reuse=s.warm_start is not False,
            linear_solver=s.linear_solver, cancel=cancel, timings=steps, prior=problem.prior)
        if not diag.converged:
            handle_nonconvergence(diag, s.on_nonconvergence, HARMONIC_ADVICE)
        setup = steps.get("amg_setup", 0.0)
        timings["amg_setup"] = timings.get("amg_setup", 0.0) + setup
        timings["eigensolver"] = (timings.get("eigensolver", 0.0) + time.perf_counter() - t
                                  - setup)
        return Eigenpairs(lam, X, diag)

    def _lobpcg_pairs(self, problem: EigenProblem, cancel: CancelToken,
                      timings: dict[str, float]) -> Eigenpairs:
        """Block LOBPCG preconditioned by the hierarchy of this constraint set."""
        s, nev, pencil = problem.settings, problem.nev, problem.pencil
        M = self._preconditioner(problem, cancel, timings)
        cancel.progress("eigenvectors")
        t = time.perf_counter()
        if problem.start is not None:
            X0, warm = problem.start, False
        else:
            X0, warm = self._start(problem, M, cancel)
        lam, X, diag = lobpcg(pencil.A, pencil.B, X0, nev=nev, M=partial(M, cancel=cancel),
                              project=pencil.project, maxiter=s.maxiter, eig_tol=s.eig_tol,
                              res_tol=s.res_tol, cancel=cancel)
        diag.preconditioner_applications = M.applications
        if not diag.converged:
            handle_nonconvergence(diag, s.on_nonconvergence, s.advice)
        diag.warm_start = warm
        self._X = X[:, :nev]
        self._stroke_keys = {i: fingerprint(S) for i, S in zip(problem.label_ids, problem.sets)}
        timings["eigensolver"] = timings.get("eigensolver", 0.0) + time.perf_counter() - t
        return Eigenpairs(lam[:nev], X[:, :nev], diag)

    def _preconditioner(self, problem: EigenProblem, cancel: CancelToken,
                        timings: dict[str, float]) -> AMGPreconditioner:
        """LOBPCG's AMG hierarchy on ``L_D + L̃_ML + εD``, one per constraint set.

        Rebuilt for every new set of strokes: the preconditioner must see the must-link edges.
        Measured at 250K pixels (4 labels, one stroke added): a Galerkin update of the
        previous hierarchy (same aggregates, coarse operators corrected by ``Pᵀ ΔA P``,
        0.03 s) needed 17 LOBPCG iterations where a new hierarchy (0.4 s) needed 9, so
        rebuilding is faster overall. Without strokes (normalized cut, CCSKL's spectrum) one
        hierarchy serves every edit.
        """
        key = (problem.settings.theta, problem.constraints)
        if self._amg is None or self._amg_for is None or self._amg_for[0] != key[0] \
                or self._amg_for[1] is not key[1]:
            cancel.progress("multigrid hierarchy")
            t = time.perf_counter()
            ml = None if problem.constraints is None else sparsify(problem.constraints, self.n)
            self._amg = None
            self._amg = amg_preconditioner(self.laplacian, self.degrees, must_link=ml,
                                           theta=key[0], cancel=cancel)
            self._amg_for = key
            timings["amg_setup"] = timings.get("amg_setup", 0.0) + time.perf_counter() - t
        return self._amg

    def _start(self, problem: EigenProblem, M: AMGPreconditioner,
               cancel: CancelToken) -> tuple[np.ndarray, bool]:
        """LOBPCG's start block and whether it is a warm start.

        With strokes, one preconditioned source per label: ``M u_a`` (u_a = degrees on label
        a's strokes) is one multigrid approximation of the potential ``A⁻¹u_a`` — smooth,
        nearly constant inside the region of stroke a, what the eigenvectors look like. A warm
        start takes the previous vectors first, plus the sources of the labels whose strokes
        changed (the initial Rayleigh–Ritz keeps the best m directions). Without strokes, the
        previous vectors when there are as many (warm start), else ``M G`` (random).
        """
        n, nev, sets = self.n, problem.nev, list(problem.sets)
        warm = problem.settings.warm_start is True and self._X is not None
        if sets:
            sources = stroke_indicators(self.degrees, sets)
            if warm:
                changed = [a for a, (i, S) in enumerate(zip(problem.label_ids, sets))
                           if self._stroke_keys.get(i) != fingerprint(S)]
                extra = M(sources[:, changed], cancel) if changed else np.zeros((n, 0))
                X0 = np.hstack([self._X, extra])
                if X0.shape[1] >= nev:
                    return X0, True
            return M(sources, cancel), False
        if warm and self._X.shape[1] == nev:
            return self._X, True
        if problem.random is None:
            raise ValueError("LOBPCG needs a start: the problem's start block, strokes, or "
                             "a random generator")
        return random_start(M, n, nev, problem.random, cancel), False


__all__ = ["ALIASES", "DEFAULT_THETA", "analysis_ahead", "EIGENSOLVERS", "EigenProblem", "Eigenpairs",
           "Eigensolver", "GraphSolver", "Pencil", "SolveSettings", "SolverDiagnostics",
           "canonical_eigensolver", "choose_eigensolver", "random_start"]
