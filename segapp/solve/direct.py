r"""Direct solves of the strokes' Dirichlet problem: one factor per image, a low-rank update per edit.

The maths
---------
The harmonic potentials of :mod:`segapp.solve.harmonic` solve ``Ã(F) x = b`` with
``Ã(F) = Π M Π + (I − Π) diag(M)`` (Π: the unpainted pixels, F the painted ones; M the image
graph's Laplacian ``L_D`` or any symmetric matrix with its pattern whose ``Ã(F)`` are positive
definite, e.g. ``L_D + γD``: nothing here assumes zero row sums). Stored
with the matrix's whole pattern (zeros where an edge touches a painted pixel), every
``Ã(F)`` has the same sparsity pattern, so one fill-reducing order
(:func:`segapp.solve.ordering.grid_nested_dissection`) and one symbolic analysis serve every edit
of an image; a stroke set ``F₀`` (the *base*) gets a numeric factor
``P Ã(F₀) Pᵀ = L Lᵀ`` (:class:`segapp.solve.cholmod.Factor`).

An edit changes the painted set to F. Against the base, N = F \ F₀ are newly painted and
R = F₀ \ F unpainted. With ``u = L⁻¹ P b`` (b zero on N and R):

* a newly painted pixel gets ``x = 0`` by a free multiplier μ on its row (``A₀ x = b + E μ``
  with ``Eᵀx = 0``; the base matrix's coupling to it then multiplies zero). Only the pixels
  of N with a still-unpainted neighbour (N's boundary Bd) need one: an interior pixel's row,
  with zero right-hand side and only pinned or interior neighbours, already gives zero;
* an unpainted pixel, whose row stood apart in the base, becomes an extra unknown ``x_R``
  bordered onto the base system: ``A_FR`` couples it to the base's free pixels (non-zero only
  on R's boundary Rb) and ``A_RR`` among themselves.

With ``V = [E_Bd  A_{·Rb}]``, ``Z = L⁻¹ P V`` and ``G = Zᵀ Z`` this is the symmetric system

.. math:: \begin{pmatrix} −G_{BB} & G_{BR} \\ G_{RB} & A_{RR} − G_{RR} \end{pmatrix}
          \begin{pmatrix} μ \\ x_R \end{pmatrix} =
          \begin{pmatrix} Z_Bᵀ u \\ b_R − Z_Rᵀ u \end{pmatrix},
          \qquad x = Pᵀ L^{-T} (u + Z_B μ − Z_R x_{Rb}),

exact (the Sherman–Morrison–Woodbury identity in bordered form). Everything but ``u`` and the
last line depends on the stroke set only: :meth:`DirichletFactor.for_strokes` does it once
(``Z``, ``G``, the LU factors of the bordered matrix) and returns a :class:`StrokeSolve`
whose every further right-hand side costs one forward and one backward solve. Each column of ``P V`` has a
handful of entries, so ``Z``'s columns are non-zero only on the elimination-tree paths from
them to the root (Gilbert's reach): a supernodal forward solve restricted to the supernodes on
those paths (:func:`_reach_solve`) costs a small part of a full solve. An edit is one forward
solve, the reach solves, a dense system of ``|Bd| + |R|`` unknowns and one backward solve. A
3-px stroke of ~100 px costs a fifth of a numeric refactor + solve at 250K px, a seventh at
1.1M (``benchmarks/crossover.py``); past a border that grows like ``√n``
(:attr:`DirichletFactor.max_rank`), many unpainted pixels
(:attr:`DirichletFactor.max_border`) or a reach block above :data:`REACH_BYTES_PER_PIXEL`,
the refactor is cheaper and is done instead.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings

from collections.abc import Callable, Iterator

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp

from . import cholmod
from ..cancel import NEVER, CancelToken
from ..errors import SlowSolverWarning, SolverError
from .ordering import grid_nested_dissection

_trsm = la.get_blas_funcs("trsm", dtype=np.float64)

#: Updates whose border (pinned boundary + unpainted boundary) is at most
#: ``RANK_PER_SQRT_N · √n`` (at least 64) are applied from the base factor, larger ones by a
#: numeric refactor (``benchmarks/crossover.py``: at 250K a 3-px stroke of 1,822 px — border
#: 1,214 — still updated in 1.8 s against 2.7 s, 480 scattered pixels did not; 1.1M: a border
#: of 1,597 updated in 4.6 s against 5.5 s; both under load).
RANK_PER_SQRT_N = 2.5
#: Unpainted pixels up to ``BORDER_PER_SQRT_N · √n`` (at least 1,000) are bordered onto the
#: base factor — a dense system of that size, O(m³), against a refactor that grows like
#: n^1.5 — more are refactored (speed.py: erasing a 2,600-px stroke at 1.1M px was
#: refactored in 3.0 s, 4.7× the added stroke, with a fixed bound of 2,500).
BORDER_PER_SQRT_N = 4.0
#: ... and only while the reach solve's dense block stays under this many bytes per pixel.
REACH_BYTES_PER_PIXEL = 64
#: The direct solver is used up to this many pixels (its factor: 570–750 B/px measured from
#: 44K to 1.1M px, growing like log n) and while the symbolic analysis says the factor fits
#: :data:`MAX_FACTOR_BYTES`; beyond either, the iterative solver (0.9 KB/px) serves.
MAX_FACTORED_PIXELS = 4_000_000
MAX_FACTOR_BYTES = 3 * 2**30
#: With ``linear_solver="auto"``, images up to this size *per free core*
#: (:func:`cold_pixels`) are factored for their first solve too; larger ones get their first
#: answer iteratively and are factored in the background. With the image's analysis made
#: ahead (:class:`GridAnalysis`), the factor path costs less CPU than a cold AMG set-up + CG
#: even on one core at 1.1M px (the coffee photo, 4 labels, load 7: a whole ``segment``
#: 5.8–6.4 s CPU direct against 6.8–7.2 s iterative; wall 11.8–12.4 s against 16.9–25.3 s):
#: the factorization is dense BLAS, where AMG and CG are memory-bound; the dense fronts also
#: use a second core, the AMG set-up and CG do not (600K per core before, from a comparison
#: that counted the analysis on the factor's side). Every answer of a session is then
#: exact: a fresh session and an edited one agree to the last pixel. Above 1.2M per core
#: the crossover is extrapolated (factor ~n^1.5, CG ~n: about 2.8M px on one core).
COLD_PIXELS = 1_200_000
def cold_pixels() -> int:
    """The largest image factored for its first answer (:data:`COLD_PIXELS` per free core)."""
    return COLD_PIXELS * foreground_threads()


def factors_cold(n: int) -> bool:
    """Whether an image of ``n`` px is factored for its first answer (else CG answers it)."""
    return n <= cold_pixels()


def foreground_threads() -> int:
    """BLAS threads for a factorization a person waits for: this core and those the last
    minute left idle, at least 1. The supernodal factor's large dense fronts gain from a
    second core; on a loaded machine a second thread only competes (measured at 250K / 1.1M
    px, load 2.9 / 3.7 on 2 cores: 0.52–0.68 vs 0.67–0.75 s and 3.3–7.0 vs 3.2–4.8 s).

    "Idle" is the load average (``os.getloadavg``) less this process's own recent use of
    the processor (:func:`_own_load`): the app's previous edit, counted as load, must not
    keep the next edit's factorization on one thread; and less the threads of this process
    said to be busy now (:func:`busy_core`)."""
    cores = os.cpu_count() or 1
    others = others_load()
    if others is None:                  # Windows
        return 1
    threads = max(1, min(cores, int(cores - others + 1.0)) - _busy[0])
    return min(threads, _cap[0]) if _cap[0] else threads


def others_load() -> float | None:
    """The load average less this process's own recent use of the processor
    (:func:`_own_load`): the cores other work holds (None where there is no load average)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):   # Windows
        return None
    return max(0.0, load - _own_load())


@contextlib.contextmanager
def factor_threads_at_most(threads: int) -> Iterator[None]:
    """Within: :func:`foreground_threads` gives at most ``threads`` (a batch's worker
    processes share the cores among them: the load of its sibling processes, all this
    batch's, must not look like idle cores to each)."""
    saved = _cap[0]
    _cap[0] = threads
    try:
        yield
    finally:
        _cap[0] = saved


#: (monotonic seconds, process processor seconds) samples of this process (:func:`_own_load`).
_usage: list[tuple[float, float]] = [(time.monotonic(), time.process_time())]
#: Threads of this process that hold a core beside a factorization now (:func:`busy_core`),
#: and the factorizations running (whose BLAS threads :func:`busy_core` raises on its way out).
_busy = [0]
_factoring = [0]
_cap = [0]          # factor_threads_at_most (0: no cap)
_threads_lock = threading.RLock()


def _own_load() -> float:
    """This process's processor use, in cores, over about the last minute (the load
    average's window): from the oldest kept sample at most 60 s old (at least 1 s back)."""
    now, cpu = time.monotonic(), time.process_time()
    with _threads_lock:
        _usage[:] = [u for u in _usage if now - u[0] <= 60.0] + [(now, cpu)]
        t0, c0 = _usage[0]
    return (cpu - c0) / (now - t0) if now - t0 >= 1.0 else 0.0


@contextlib.contextmanager
def busy_core() -> Iterator[None]:
    """Within: another thread of this process holds a core (Session's preview beside the
    full solve), so a factorization started meanwhile takes one BLAS thread less; on the way
    out, one running then is given the freed core (CHOLMOD's own BLAS only,
    :func:`segapp.solve.cholmod.blas_threads`; the factorization restores its threads when it
    ends)."""
    with _threads_lock:
        _busy[0] += 1
    try:
        yield
    finally:
        with _threads_lock:   # held: a factorization ending restores its threads under it
            _busy[0] -= 1
            if _factoring[0] > 0:
                cholmod.set_blas_threads(foreground_threads())


def available() -> bool:
    """Whether the direct solver can be used on this machine (a checked CHOLMOD loads)."""
    return cholmod.available()


def serves(n: int) -> bool:
    """Whether the direct solver can serve a pixel grid of ``n`` pixels: at least two, at
    most :data:`MAX_FACTORED_PIXELS`, and :func:`available`."""
    return 2 <= n <= MAX_FACTORED_PIXELS and available()


def unavailable_reason() -> str:
    """Why :func:`available` is False, in words a person can act on."""
    return f"no usable CHOLMOD: {cholmod.unavailable_reason() or 'it cannot be loaded'}"


_warned = threading.Event()


def warn_unavailable(reason: str) -> None:
    """Say once per process that edits are solved the slow way, and how to fix it (not when
    ``SEGAPP_NO_CHOLMOD`` asked for it)."""
    if _warned.is_set() or os.environ.get("SEGAPP_NO_CHOLMOD"):
        return
    _warned.set()
    warnings.warn(f"segapp's direct solver is not available ({reason}); every edit is solved "
                  f"iteratively, 3–7× slower. To install it: {cholmod.INSTALL_HINT}",
                  SlowSolverWarning, stacklevel=3)


class GridAnalysis:
    """What every factor of an image shares: the lower triangle's pattern, the grid's
    nested-dissection order (:func:`~segapp.solve.ordering.grid_nested_dissection`) and
    CHOLMOD's symbolic analysis (:class:`segapp.solve.cholmod.Factor`, never factored).

    It depends on the graph's pattern only — the same for ``L_D``, every ``L_D + γD`` on its
    pattern (:func:`segapp.solve.harmonic.shifted`) and every stroke set — so it is made once
    per image, and can be made as soon as the graph is built, before any stroke
    (:meth:`segapp.solve.GraphSolver.analyse_ahead`): 0.17 s at 250K px, 0.6 s (CPU) at
    1.1M, taken off the first answer's path.

    Raises :class:`~segapp.errors.SolverError` when the factor would exceed
    :data:`MAX_FACTOR_BYTES`.
    """

    def __init__(self, pattern: sp.spmatrix, shape: tuple[int, int], reach: int = 1) -> None:
        t = time.perf_counter()
        M = sp.csr_matrix(pattern)
        M = M if M.has_sorted_indices else M.sorted_indices()
        self.n = M.shape[0]
        self._indptr, self._indices = M.indptr, M.indices
        indptr, self.rows, self.cols, self._keep = _lower_csc(M)
        self.symbolic = cholmod.Factor(indptr, self.rows, grid_nested_dissection(shape, reach))
        if self.symbolic.nbytes > MAX_FACTOR_BYTES:
            raise SolverError(f"the factor would need {self.symbolic.nbytes / 2**30:.1f} GB "
                              f"(budget {MAX_FACTOR_BYTES / 2**30:.0f} GB)")
        self.library = self.symbolic.library
        self.perm = self.symbolic.perm
        self.iperm = np.empty_like(self.perm)
        self.iperm[self.perm] = np.arange(self.n)
        #: Seconds the analysis took.
        self.seconds = time.perf_counter() - t

    def fits(self, M: sp.csr_matrix) -> bool:
        """Whether ``M`` (CSR, sorted indices) has the pattern analysed, stored alike."""
        return M.shape == (self.n, self.n) and (
            (M.indptr is self._indptr or np.array_equal(M.indptr, self._indptr))
            and (M.indices is self._indices or np.array_equal(M.indices, self._indices)))

    def values(self, M: sp.csr_matrix) -> np.ndarray:
        """The lower triangle's values of ``M`` (:meth:`fits`) in the analysis' order."""
        return np.ascontiguousarray(M.data[self._keep], dtype=np.float64)


class DirichletFactor:
    """Per image: the ordering and symbolic analysis, a numeric factor of one base stroke set,
    and exact solves for any other stroke set by a low-rank update (see module doc).

    Every solve works on a :class:`StrokeSolve` (:meth:`for_strokes`): an immutable snapshot
    of one base factor and its painted mask, taken once, with the per-stroke-set work done.
    A new base (:meth:`factor`, e.g. in the background) never changes a snapshot taken before.

    Parameters
    ----------
    matrix : sparse matrix
        Any symmetric positive (semi-)definite matrix on the pixel grid whose Dirichlet
        matrices ``Ã(F) = Π M Π + (I − Π) diag(M)`` are positive definite: the image graph's
        ``L_D``, or a shifted ``L_D + γ D``. Nothing assumes zero row sums.
    shape : (H, W)
        The pixel grid (the ordering's nested dissection follows it).
    reach : int
        The largest row / column distance of an edge (:func:`segapp.solve.ordering.offsets_reach`).
    """

    def __init__(self, matrix: sp.spmatrix, shape: tuple[int, int], reach: int = 1, *,
                 analysis: "GridAnalysis | None" = None) -> None:
        t = time.perf_counter()
        M = sp.csr_matrix(matrix)
        M = M if M.has_sorted_indices else M.sorted_indices()
        if analysis is None or not analysis.fits(M):
            analysis = GridAnalysis(M, shape, reach)
        self.n = n = M.shape[0]
        self.matrix = M
        self._rows, self._cols = analysis.rows, analysis.cols
        self._data = analysis.values(M)
        #: The analysis alone (never factored): every factor is a copy of it, so a new one
        #: can be computed (in the background) while the last one still serves solves.
        self._symbolic = analysis.symbolic
        #: The CHOLMOD library the factors come from (:func:`segapp.solve.cholmod.library`).
        self.library = analysis.library
        self.perm, self.iperm = analysis.perm, analysis.iperm
        self._current: _Base | None = None
        self.max_rank = max(64, int(RANK_PER_SQRT_N * np.sqrt(n)))
        self.max_border = max(1000, int(BORDER_PER_SQRT_N * np.sqrt(n)))
        #: Seconds of the last analysis / factorization / update (diagnostics, benchmarks).
        self.timings: dict[str, float] = {"analyse": time.perf_counter() - t}

    # -- the base factor -------------------------------------------------------------------
    @property
    def base(self) -> np.ndarray | None:
        """The painted mask the numeric factor was made for (None before the first)."""
        cur = self._current
        return None if cur is None else cur.base

    def factor(self, fixed: np.ndarray, cancel: CancelToken = NEVER,
               threads: int | None = None) -> "_Base":
        """Numerically factor ``Ã(fixed)`` and make ``fixed`` the base (GIL released).

        The new factor is computed on a copy of the analysis and swapped in when complete
        (one attribute assignment): snapshots taken before keep the factor they hold.
        ``threads``: BLAS threads for the factorization (None: as the caller set them).
        Returns the new base.
        """
        t = time.perf_counter()
        fixed = np.array(fixed, dtype=bool, copy=True)
        r, c = self._rows, self._cols
        data = self._data * ((r == c) | ~(fixed[r] | fixed[c]))
        cancel.check()
        f = self._symbolic.copy()
        cancel.check()
        if threads is None:
            f.factorize(data)
        else:
            threading_ = cholmod.blas_threads(threads, self.library)
            with _threads_lock:
                threading_.__enter__()
                _factoring[0] += 1
            try:
                f.factorize(data)
            finally:
                with _threads_lock:     # busy_core may have raised them meanwhile
                    _factoring[0] -= 1
                    threading_.__exit__(None, None, None)
        fixed.flags.writeable = False
        cur = _Base(f, fixed)
        self._current = cur
        self.timings["factor"] = time.perf_counter() - t
        return cur

    def reset(self) -> None:
        """Forget the base: the next :meth:`for_strokes` factors its own strokes."""
        self._current = None

    # -- solves ----------------------------------------------------------------------------
    def for_strokes(self, fixed: np.ndarray, cancel: CancelToken = NEVER,
                    took: Callable[["_Base | None"], None] | None = None) -> "StrokeSolve":
        """The solver of ``Ã(fixed) x = b`` for any number of right-hand sides (exact).

        Takes the current base once; the per-stroke-set work (the bordered update's reach
        solves ``Z``, ``G = ZᵀZ`` and the dense factorization of its system ``K``) is done
        here, so each :meth:`StrokeSolve.solve` costs one forward and one backward solve with
        the factor plus small dense products. Without a base, or past the update's limits
        (:attr:`max_rank`, :attr:`max_border`, :data:`REACH_BYTES_PER_PIXEL`), ``fixed`` is
        factored afresh (and becomes the base).

        ``took(base)``: called once, as soon as it is known, with the base an update will
        use (None: no update of a base), so that another thread can start the update's
        :class:`Forward` solve meanwhile.
        """
        t = time.perf_counter()
        fixed = np.array(fixed, dtype=bool, copy=True)
        fixed.flags.writeable = False
        cur = self._current                   # one read: a rebase may swap it meanwhile
        had_base = cur is not None
        T = np.arange(self.n) if cur is None else np.flatnonzero(fixed != cur.base)
        up = None
        try:
            if cur is not None and T.size:
                cancel.check()
                up = _Update.of(self, fixed, T)
        finally:
            if took is not None:
                took(cur if up is not None else None)
        if up is not None:
            try:
                up = up.prepared(self, cur, cancel)
            except MemoryError:
                up = None
        if cur is None or (T.size and up is None):
            cur = self.factor(fixed, cancel, threads=foreground_threads())  # a solve waits
            snap = StrokeSolve(self, cur, fixed, None, "refactor", T.size)
            snap.timings["factor"] = self.timings["factor"]
        else:
            snap = StrokeSolve(self, cur, fixed, up, "update" if T.size else "base", T.size)
        snap.timings["prepare"] = time.perf_counter() - t
        snap.had_base = had_base
        return snap

    def solve(self, fixed: np.ndarray, b: np.ndarray, cancel: CancelToken = NEVER
              ) -> np.ndarray:
        """``Ã(fixed)⁻¹ b``, exact: one :meth:`for_strokes` snapshot, one solve."""
        snap = self.for_strokes(fixed, cancel)
        x = snap.solve(b, cancel)
        self.timings["solve"] = snap.timings["solve"]
        return x

    def changed(self, fixed: np.ndarray) -> np.ndarray:
        """The pixels painted or unpainted since the current base (all without one)."""
        cur = self._current
        return np.arange(self.n) if cur is None else np.flatnonzero(fixed != cur.base)

    def can_update(self, fixed: np.ndarray) -> bool:
        """Whether ``fixed`` is within an update of the current base (else a refactor)."""
        cur = self._current
        if cur is None:
            return False
        T = np.flatnonzero(fixed != cur.base)
        return T.size == 0 or _Update.of(self, fixed, T) is not None

    @property
    def nbytes(self) -> int:
        """Memory held: the factor plus the matrix's lower pattern."""
        cur = self._current
        return ((cur.factor.nbytes if cur is not None else 0) + self._data.nbytes
                + self._rows.nbytes + self._cols.nbytes)


class StrokeSolve:
    """``Ã(fixed)⁻¹`` for one stroke set: an immutable snapshot, reusable for any number of
    right-hand sides (made by :meth:`DirichletFactor.for_strokes`).

    Attributes
    ----------
    fixed : ndarray of bool (read-only)
        The painted mask this solves for.
    base : ndarray of bool (read-only)
        The painted mask of the factor it uses (``fixed`` itself after a refactor).
    how : {"base", "update", "refactor"}
        The factor as it was, the factor with a bordered update, or a new factor.
    changed : int
        Pixels painted or unpainted between ``base`` and ``fixed`` (n after a refactor).
    library : segapp.solve.cholmod.Library
    had_base : bool
        Whether a base factor existed when it was made (a warm start: an update, or a
        refactor past the update's limits).
    timings : dict
        ``prepare`` (this snapshot's making, ``factor`` included after a refactor) and the
        last ``solve``.
    """

    def __init__(self, owner: DirichletFactor, cur: "_Base", fixed: np.ndarray,
                 up: "_Update | None", how: str, changed: int) -> None:
        self._owner, self._cur, self._up = owner, cur, up
        self.fixed, self.base, self.how, self.changed = fixed, cur.base, how, changed
        self.library = owner.library
        self.had_base = True
        self.timings: dict[str, float] = {}

    @property
    def rank(self) -> int:
        """Unknowns of the bordered system (0 without an update)."""
        return 0 if self._up is None else self._up.K.shape[0]

    def solve(self, b: np.ndarray, cancel: CancelToken = NEVER,
              forward: "Forward | None" = None) -> np.ndarray:
        """``x = Ã(fixed)⁻¹ b`` (b: n or n × m); exact to rounding. Thread-safe: nothing of
        the snapshot changes. ``forward``: the first half of an update's solve of this
        ``b``, made before the snapshot (:class:`Forward`); used if it is of this snapshot's
        base and strokes, else ignored."""
        t = time.perf_counter()
        cancel.check()
        f = self._cur.factor
        up = self._up
        if up is None:
            x = f.solve(b)
        else:
            U = forward.take(self) if forward is not None else None
            x = up.solve(self._owner, f, b, cancel, U)
        self.timings["solve"] = time.perf_counter() - t
        return x


class Forward:
    """The first half of an update's solve, ``U = L⁻¹ P b̃`` with the base factor, made
    before the update's snapshot exists (b̃: ``b`` zeroed on the pixels painted or unpainted
    since the base, whose rows the update handles).

    It needs only the base and the strokes, not the update's reach solves: the caller's
    thread makes it while another makes the snapshot (:meth:`DirichletFactor.for_strokes`
    with ``took``; both only read the factor, and CHOLMOD's solve releases the GIL), so an
    edit's forward solve and its reach solves take the longer of the two instead of their
    sum on 2 cores. :meth:`StrokeSolve.solve` then starts from it: the same numbers.
    Used once (the update's solve continues in ``U``'s memory).
    """

    def __init__(self, owner: DirichletFactor, base: "_Base", fixed: np.ndarray,
                 b: np.ndarray) -> None:
        self._base, self._fixed = base, fixed
        self._U: np.ndarray | None = _forward_solve(
            owner, base.factor, b, np.flatnonzero(fixed != base.base))

    def take(self, snap: "StrokeSolve") -> np.ndarray | None:
        """``U`` if it was made from ``snap``'s base for its strokes (then not again)."""
        U, self._U = self._U, None
        ok = snap._cur is self._base and np.array_equal(snap.fixed, self._fixed)
        return U if ok else None


def _forward_solve(d: "DirichletFactor", f: cholmod.Factor, b: np.ndarray,
                   changed: np.ndarray) -> np.ndarray:
    """``L⁻¹ P b`` with ``b``'s rows ``changed`` (painted or unpainted since the base) zero
    (n × m, the factor's order, column-major)."""
    PB = _rows_taken(np.asarray(b, dtype=np.float64).reshape(d.n, -1), d.perm)
    PB[d.iperm[changed]] = 0.0    # the base system's rows there are pinned / kept apart
    return f.solve_L(PB)


class _Base:
    """One numeric factor and the painted mask it was made for (replaced, never changed)."""

    def __init__(self, factor: cholmod.Factor, base: np.ndarray) -> None:
        self.factor, self.base = factor, base
        self._supernodes: _Supernodes | None = None

    def supernodes(self) -> "_Supernodes":
        if self._supernodes is None:
            self._supernodes = _Supernodes(*self.factor.supernodes())
        return self._supernodes


def _rows_taken(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``A[rows]`` (n × m) as the column-major array CHOLMOD's dense matrices are: one
    contiguous gather per column instead of a row gather and a transposing copy (0.5 MP × 4:
    30 → 11 ms; the inverse permutation's scatter 14 → 8 ms). ``mode="clip"``: NumPy checks
    no index (``rows`` is a permutation) and writes ``out`` directly instead of through a
    buffer (0.5 MP × 4, one core: 12.6 → 4.9 ms from a row-major A, 8.9 → 6.2 ms from a
    column-major one)."""
    out = np.empty((rows.shape[0], A.shape[1]), order="F")
    for j in range(A.shape[1]):
        np.take(A[:, j], rows, out=out[:, j], mode="clip")
    return out


def _lower_csc(M: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pattern of ``tril(M)`` of a symmetric CSR matrix with sorted indices in CSC form
    as ``(indptr, rows, cols, keep)``, int32 indices; ``M.data[keep]`` are its values in that
    order: the upper triangle's CSR arrays read as CSC (scipy's ``tril`` goes through COO and
    a sort: 0.16 s at 0.5 MP against 0.02 s)."""
    n = M.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(M.indptr))
    keep = M.indices >= rows               # upper triangle of row i = lower of column i
    indptr = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows[keep], minlength=n), out=indptr[1:])
    return indptr, M.indices[keep].astype(np.int32), rows[keep], keep


def _neighbour_entries(L: sp.csr_matrix, T: np.ndarray) -> np.ndarray:
    """Positions in ``L.indices`` / ``L.data`` of the rows T (row by row)."""
    counts = np.diff(L.indptr)[T]
    first = L.indptr[T] - (np.cumsum(counts) - counts)
    return np.repeat(first, counts) + np.arange(counts.sum())


def _neighbours(L: sp.csr_matrix, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pattern of the rows T of a symmetric L: (column, index of the row in T)."""
    idx = _neighbour_entries(L, T)
    return L.indices[idx], np.repeat(np.arange(T.size), np.diff(L.indptr)[T])


class _Update:
    """The bordered system of an edit against the base (module doc, *Updates*).

    Newly painted pixels N are pinned: ``x_N = 0`` with a free multiplier μ on their rows;
    only those on N's boundary (a neighbour unpainted now) need one — an interior pixel's row,
    with zero right-hand side and only pinned or interior neighbours, already gives 0.
    Unpainted pixels R (painted in the base, where their rows stood apart) become extra
    unknowns ``x_R`` coupled to the base's free pixels by ``A_FR`` — non-zero only on R's
    boundary Rb — and among themselves by ``A_RR``. With ``V = [E_Bd  A_{·Rb}]``,
    ``Z = L⁻¹ P V``, ``G = Zᵀ Z`` and ``u = L⁻¹ P b``::

        [ −G_BB        G_BR        ] [ μ   ]   [ Z_Bᵀ u        ]
        [  G_RB   A_RR − G_RR      ] [ x_R ] = [ b_R − Z_Rᵀ u  ]

    (G's R blocks placed on Rb), then ``x = Pᵀ L⁻ᵀ (u + Z_B μ − Z_R x_Rb)`` and ``x_R``.
    """

    def __init__(self, N, R, Bd, Rb, rows, cols, vals, A_RR) -> None:
        self.N, self.R, self.Bd, self.Rb = N, R, Bd, Rb
        self.rows, self.cols, self.vals = rows, cols, vals
        self.m = Bd.size + Rb.size
        self.A_RR = A_RR

    @classmethod
    def of(cls, d: "DirichletFactor", fixed: np.ndarray, T: np.ndarray) -> "_Update | None":
        """The update's pieces, or None past :attr:`DirichletFactor.max_rank` /
        :attr:`DirichletFactor.max_border` (then a refactor is cheaper)."""
        L = d.matrix
        now = fixed[T]
        N, R = T[now], T[~now]
        if R.size > d.max_border:
            return None
        ni, nc = _neighbours(L, N)
        open_ = np.zeros(N.size, dtype=bool)
        np.logical_or.at(open_, nc, ~fixed[ni])
        Bd = N[open_]
        ri, rc = _neighbours(L, R)
        w = L.data[_neighbour_entries(L, R)]
        inR = np.full(d.n, -1, dtype=np.int64)
        inR[R] = np.arange(R.size)
        off = ri != R[rc]
        to_free = off & ~fixed[ri] & (inR[ri] < 0)
        within = off & (inR[ri] >= 0)
        Rb, rb_col = np.unique(rc[to_free], return_inverse=True)
        if Bd.size + Rb.size > d.max_rank:
            return None
        nb = Bd.size
        rows = np.concatenate([Bd, ri[to_free]])
        cols = np.concatenate([np.arange(nb), nb + rb_col.ravel()])
        vals = np.concatenate([np.ones(nb), w[to_free]])
        A_RR = np.zeros((R.size, R.size))
        A_RR[np.arange(R.size), np.arange(R.size)] = L.diagonal()[R]
        np.add.at(A_RR, (inR[ri[within]], rc[within]), w[within])
        return cls(N, R, Bd, Rb, rows, cols, vals, A_RR)

    def system(self, G: np.ndarray, zu: np.ndarray, b_R: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        nb, nr = self.Bd.size, self.R.size
        K = np.zeros((nb + nr, nb + nr))
        rb = nb + self.Rb
        K[:nb, :nb] = -G[:nb, :nb]
        K[:nb, rb] = G[:nb, nb:]
        K[rb, :nb] = G[nb:, :nb]
        K[nb:, nb:] = self.A_RR
        K[np.ix_(rb, rb)] -= G[nb:, nb:]
        return K, self.rhs(zu, b_R)

    def rhs(self, zu: np.ndarray, b_R: np.ndarray) -> np.ndarray:
        nb, nr = self.Bd.size, self.R.size
        rhs = np.empty((nb + nr, zu.shape[1]))
        rhs[:nb] = zu[:nb]
        rhs[nb:] = b_R
        rhs[nb + self.Rb] -= zu[nb:]
        return rhs

    def prepared(self, d: "DirichletFactor", cur: "_Base", token: CancelToken
                 ) -> "_Update | None":
        """This update with its per-stroke-set work done against the base ``cur``: the reach
        solve ``Z``, ``G = ZᵀZ`` and the LU factors of ``K`` (None: too wide a reach, a
        refactor is cheaper)."""
        t = time.perf_counter()
        reach_rows, Z = _reach_solve(cur.supernodes(), d.iperm[self.rows], self.cols,
                                     self.vals, self.m, max_bytes=REACH_BYTES_PER_PIXEL * d.n)
        if Z is None:
            return None
        d.timings["reach"] = time.perf_counter() - t
        token.check()
        G = Z.T @ Z
        K, _ = self.system(G, np.zeros((self.m, 0)), np.zeros((self.R.size, 0)))
        try:
            lu = la.lu_factor(K, check_finite=False)
        except (la.LinAlgError, ValueError) as exc:   # K singular only if Ã(fixed) is
            raise SolverError(f"the stroke update's bordered system is singular: {exc}") \
                from None
        if not np.all(np.isfinite(lu[0])) or np.any(np.diag(lu[0]) == 0):
            raise SolverError("the stroke update's bordered system is singular")
        self.reach_rows, self.Z, self.K, self.lu = reach_rows, Z, K, lu
        for a in (reach_rows, Z, K, lu[0], lu[1]):
            a.flags.writeable = False
        return self

    def solve(self, d: "DirichletFactor", f: cholmod.Factor, b: np.ndarray,
              token: CancelToken, U: np.ndarray | None = None) -> np.ndarray:
        """``Ã(fixed)⁻¹ b`` from the base factor ``f`` (the module doc's bordered formula);
        ``U``: its forward solve if made already (:class:`Forward`)."""
        squeeze = np.ndim(b) == 1
        B = np.asarray(b, dtype=np.float64).reshape(d.n, -1)
        b_R = B[self.R]
        if U is None:
            U = _forward_solve(d, f, B, np.concatenate([self.N, self.R]))
        token.check()
        Z, rows = self.Z, self.reach_rows
        sol = la.lu_solve(self.lu, self.rhs(Z.T @ U[rows], b_R), check_finite=False)
        nb = self.Bd.size
        mu, x_R = sol[:nb], sol[nb:]
        U[rows] += Z[:, :nb] @ mu - Z[:, nb:] @ x_R[self.Rb]
        x = _rows_taken(f.solve_Lt(U), d.iperm)   # x[perm] = y, as a gather
        x[self.R] = x_R
        return x[:, 0] if squeeze else x


class _Supernodes:
    """The supernodal factor's panels and its supernodal elimination tree."""

    def __init__(self, super_: np.ndarray, pi: np.ndarray, px: np.ndarray, s: np.ndarray,
                 x: np.ndarray) -> None:
        self.super, self.pi, self.px, self.s, self.x = super_, pi, px, s, x
        ns = super_.size - 1
        self.ncols = np.diff(super_)
        self.nrows = np.diff(pi)
        self.col2sn = np.repeat(np.arange(ns), self.ncols)
        below = self.nrows > self.ncols
        first = s[np.minimum(pi[:-1] + self.ncols, s.size - 1)]
        self.parent = np.where(below, self.col2sn[first], -1)


def _reach_solve(sn: _Supernodes, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray,
                 m: int, max_bytes: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``L⁻¹ B`` for a sparse ``B`` (n × m, given as triplets in the factor's order).

    Only the supernodes on the elimination-tree paths from B's rows to the root can be
    non-zero in the solution (Gilbert's reach); they are solved in order (children first:
    CHOLMOD post-orders the tree), each by a dense triangular solve of its diagonal block and
    one product with its panel below. Returns the rows of the reach (factor order) and the
    solution there, or ``(rows, None)`` if that dense block would exceed ``max_bytes``.
    """
    mark = np.zeros(sn.parent.size, dtype=bool)
    cur = np.unique(sn.col2sn[rows])
    while cur.size:
        cur = cur[~mark[cur]]
        mark[cur] = True
        up = sn.parent[cur]
        cur = np.unique(up[up >= 0])
    reach = np.flatnonzero(mark)
    lo, hi = sn.super[reach], sn.super[reach + 1]
    width = hi - lo
    reach_rows = np.repeat(lo - np.cumsum(width) + width, width) + np.arange(width.sum())
    if reach_rows.size * m * 8 > max_bytes:
        return reach_rows, None
    pos = np.full(sn.col2sn.size, -1, dtype=np.int64)
    pos[reach_rows] = np.arange(reach_rows.size)
    X = np.zeros((reach_rows.size, m))
    np.add.at(X, (pos[rows], cols), vals)
    start = np.cumsum(width) - width
    s, pi, px, x = sn.s, sn.pi, sn.px, sn.x
    for j, p0 in zip(reach.tolist(), start.tolist()):
        nc, nr = int(sn.ncols[j]), int(sn.nrows[j])
        panel = x[px[j]:px[j] + nr * nc].reshape(nc, nr).T    # column-major nr × nc
        Xs = X[p0:p0 + nc]
        # Xs ← T⁻¹ Xs as Xsᵀ ← Xsᵀ T⁻ᵀ on the Fortran view of the C-ordered block (in place)
        _trsm(1.0, panel[:nc], Xs.T, side=1, lower=1, trans_a=1, overwrite_b=1)
        if nr > nc:
            below = pos[s[pi[j] + nc:pi[j + 1]]]
            X[below] -= panel[nc:] @ Xs
    return reach_rows, X
