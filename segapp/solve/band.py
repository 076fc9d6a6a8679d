"""One-shot direct solves of a band's Dirichlet problem (:mod:`segapp.graphs.band`).

The band around a 12-megapixel answer's boundaries is a set of strips a few dozen pixels
wide (200K–650K unknowns), solved once per edit for a few right-hand sides. Not a whole
grid, so :mod:`segapp.solve.ordering`'s nested dissection does not apply: CHOLMOD orders the
band itself (AMD: a strip's natural order). Measured on the coffee sample's band at 12 MP
(452,664 unknowns, 2.2M entries in the upper triangle, 4 right-hand sides; load 1.0, 2 cores):
analysis 0.26 s, factorization 0.62 s, solve 0.10 s, factor 159 MB. The analysis needs the
pattern only, so :mod:`segapp.inputs.refine` runs it while the features are computed
(:class:`BandSolver`). Where two cores are free, a band of :data:`SPLIT_MIN` unknowns or
more is cut at an image row into two halves analysed and factored in two threads, joined
exactly on the cut by its Schur complement (:class:`BandSolver`, :func:`two_core_cut`): the
strips cross a row at a few places, so the cut is small (168 and 273 px for coffee's and
astronaut's 631K and 822K-px bands), and each step's wall time about halves. Not cut along
its connected pieces: one holds 97% of coffee's band, 86% of astronaut's. Where CHOLMOD is
missing, SciPy's SuperLU (minimum degree on ``AᵀA + A``) solves the same system, exactly and
more slowly. Both release the GIL.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from . import cholmod
from ..cancel import NEVER, CancelToken
from ..errors import SolverError


#: Bands of at least this many unknowns are cut in two at a separator and the halves
#: analysed and factored in two threads (:class:`BandSolver`); smaller ones are not worth it.
SPLIT_MIN = 150_000

#: Largest separator the cut may have: its pixels form a dense block in each half's factor
#: (|S|³/3 flops each) and a dense Schur complement.
SPLIT_MAX_SEPARATOR = 400


def row_separator(unknown: np.ndarray, width: int, reach: int) -> tuple[int, int] | None:
    """Where to cut a band in two: the rows ``[a, c)`` of U (its pixels on ``reach``
    consecutive image rows, ``reach`` the neighbourhood's largest row offset) that part the
    band's rows above from those below (no edge joins the two), chosen among the cuts of at
    most :data:`SPLIT_MAX_SEPARATOR` pixels as the one whose larger side is smallest (the
    two threads' work is about proportional to their pixels; a separator's pixels cost
    little, so it may be any size up to that cap), fewer cut pixels breaking ties. None if
    the band is below :data:`SPLIT_MIN` or no cut leaves 35% of U on either side.

    ``unknown``: U's flat (row-major) indices, sorted; ``width``: the image's width.
    """
    n = unknown.size
    if n < SPLIT_MIN:
        return None
    y = np.asarray(unknown) // width
    reach = max(reach, 1)
    counts = np.bincount(y - y[0])
    before = np.r_[0, np.cumsum(counts)]            # pixels above each row
    window = np.convolve(counts, np.ones(reach, np.int64), "valid")
    above = before[:window.size]
    larger = np.maximum(above, n - above - window)
    ok = (window > 0) & (window <= SPLIT_MAX_SEPARATOR) & (larger <= 0.65 * n)
    if not ok.any():
        return None     # (a row the band does not cross is no cut here: S must hold pixels)
    rows = np.flatnonzero(ok)
    r = int(rows[np.lexsort((window[rows], larger[rows]))[0]])
    return int(before[r]), int(before[r + reach])


#: Most load of other work (cores, :func:`segapp.solve.direct.others_load`) under which a
#: band is cut (:func:`two_core_cut`).
CUT_MAX_OTHERS_LOAD = 0.5


def two_core_cut(unknown: np.ndarray, width: int, reach: int) -> tuple[int, int] | None:
    """:func:`row_separator`'s cut where two cores are free now, else None. Free: the load of
    other work under :data:`CUT_MAX_OTHERS_LOAD` and no other thread of this process busy
    (:func:`segapp.solve.direct.foreground_threads`). With another process on the other
    core, even a niced one, the halves gained nothing here: the band's kernels are
    memory-bound (AMD's, the small supernodes' updates) and the two cores share the memory's
    bandwidth (coffee at 12 MP, load 1.5: 2.18 s cut against 2.02 s whole, wall and
    processor alike; the halves' AMD or factorization in two threads no faster than one
    after the other)."""
    from . import direct
    others = direct.others_load()
    if others is None or others >= CUT_MAX_OTHERS_LOAD or direct.foreground_threads() < 2:
        return None
    return row_separator(unknown, width, reach)


class BandSolver:
    """A direct solver of one band's matrix: :meth:`analyse` (the pattern only: CHOLMOD's
    AMD order and symbolic factorization) can run in another thread while the values are
    computed (it releases the GIL); :meth:`solve` factors the values and solves.

    With ``split = (a, c)`` (:func:`row_separator`: rows ``a:c`` of U are a separator S
    between rows ``:a`` and rows ``c:``, no entry joining the two), the band is solved in two
    halves, each analysed and factored in a thread of its own (two cores: the wall time of
    each step about halves). Half i's matrix is ``M_i = [[A_ii, A_iS], [A_Si, A_SS]]``,
    ordered with S last (AMD on ``A_ii``, S made a dense block); its factor's last block
    ``L_i`` satisfies ``L_i L_iᵀ = A_SS − A_Si A_ii⁻¹ A_iS``. So the Schur complement of
    the whole matrix on S is ``Σ_i L_i L_iᵀ − A_SS`` (dense, |S| × |S|), and with
    ``L_i [u_i; v_i] = [b_i; 0]`` (forward solves), ``x_S`` solves
    ``(Σ L_i L_iᵀ − A_SS) x_S = b_S + Σ_i L_i v_i``; then each half's backward solve with
    ``L_iᵀ x_S`` in place of ``v_i`` gives ``x_i = A_ii⁻¹ (b_i − A_iS x_S)``: exactly the
    whole system's solution, for the cost of two triangular solves per half.

    Parameters
    ----------
    indptr, indices : ndarray
        The upper triangle's pattern as CSR, sorted, diagonal included
        (:class:`segapp.graphs.band.BandGraph`).
    split : (a, c), optional
        :func:`row_separator`'s cut; ignored without CHOLMOD.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray,
                 split: tuple[int, int] | None = None) -> None:
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int32)
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.n = self.indptr.size - 1
        self.split = split if split is not None and cholmod.available() else None
        self._factor: cholmod.Factor | None = None
        self._halves: list[_Half] | None = None
        self.seconds: dict[str, float] = {}

    def analyse(self) -> None:
        """CHOLMOD's analysis of the pattern (nothing to do without CHOLMOD); of each half
        in a thread of its own when split."""
        if not self.n or not cholmod.available() or self._ready():
            return
        t = time.perf_counter()
        if self.split is not None:
            a, c = self.split
            halves = [_Half(self.indptr, self.indices, a, c, self.n, upper)
                      for upper in (True, False)]
            _both(halves, _Half.analyse)
            if all(h.ok for h in halves):
                self._halves = halves
            else:   # S not a trailing block after CHOLMOD's postorder: solve it whole
                self.split = None
        if self._halves is None:
            # CSR of the upper triangle = CSC of the lower one, what CHOLMOD reads
            self._factor = cholmod.Factor(self.indptr, self.indices, None)
        self.seconds["analyse"] = time.perf_counter() - t

    def _ready(self) -> bool:
        return self._factor is not None or self._halves is not None

    def solve(self, data: np.ndarray, b: np.ndarray, cancel: CancelToken = NEVER
              ) -> tuple[np.ndarray, dict]:
        """``x = A⁻¹ b`` for the matrix with these values on the pattern; the report as
        :func:`solve_band`'s."""
        if self.n == 0:
            return np.zeros((0,) + b.shape[1:]), {"solver": "none", "factor_bytes": 0}
        cancel.check()
        self.analyse()
        b = np.asarray(b, dtype=np.float64)
        if self._halves is not None:
            return self._solve_halves(np.asarray(data, dtype=np.float64), b)
        if self._factor is not None:
            f = self._factor
            t1 = time.perf_counter()
            f.factorize(data)
            t2 = time.perf_counter()
            x = f.solve(b)
            return x, {"solver": "CHOLMOD (AMD)", **self.seconds, "factorize": t2 - t1,
                       "solve": time.perf_counter() - t2, "factor_bytes": f.nbytes}
        from scipy.sparse.linalg import splu

        from ..graphs.band import symmetric
        upper = sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n, self.n))
        t = time.perf_counter()
        try:
            lu = splu(symmetric(upper).tocsc(), permc_spec="MMD_AT_PLUS_A")
        except RuntimeError as exc:   # "Factor is exactly singular"
            raise SolverError(f"the band's Dirichlet matrix is singular ({exc})") from None
        t1 = time.perf_counter()
        x = lu.solve(b)
        return x, {"solver": "SuperLU", "factorize": t1 - t, "solve": time.perf_counter() - t1,
                   "factor_bytes": int(lu.L.data.nbytes + lu.U.data.nbytes
                                       + lu.L.indices.nbytes + lu.U.indices.nbytes)}

    def _solve_halves(self, data: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, dict]:
        """The class docstring's two-half solve."""
        assert self._halves is not None and self.split is not None
        a, c = self.split
        t1 = time.perf_counter()
        for h in self._halves:
            h.rhs = b
        with cholmod.blas_threads(1):   # the two halves hold the two cores already
            _both(self._halves, lambda h: h.factor_forward(data))
        t2 = time.perf_counter()
        # A_SS, dense: the S rows' entries to S columns, from the upper triangle
        ns = c - a
        A_SS = np.zeros((ns, ns))
        for j in range(a, c):
            lo, hi = self.indptr[j], self.indptr[j + 1]
            cols = self.indices[lo:hi]
            on = cols < c
            A_SS[j - a, cols[on] - a] = data[lo:hi][on]
        A_SS = np.triu(A_SS) + np.triu(A_SS, 1).T
        schur = sum(h.L @ h.L.T for h in self._halves) - A_SS
        g = b[a:c] + sum(h.L @ h.v for h in self._halves)
        try:
            x_S = scipy.linalg.solve(schur, g, assume_a="pos")
        except np.linalg.LinAlgError as exc:
            raise SolverError(f"the band's Dirichlet matrix is not positive definite "
                              f"on its separator ({exc})") from None
        x = np.empty_like(b)
        x[a:c] = x_S
        _both(self._halves, lambda h: h.backward(x_S, x))    # disjoint rows of x
        return x, {"solver": "CHOLMOD (AMD, 2 halves)", **self.seconds,
                   "factorize": t2 - t1, "solve": time.perf_counter() - t2,
                   "factor_bytes": sum(h.factor.nbytes for h in self._halves),
                   "separator": ns}


class _Half:
    """One half of a split band (:class:`BandSolver`): with S = U's rows ``a:c`` (U has
    ``n`` rows), the ``upper`` half is rows ``0:c`` (its own ``0:a``, then S), the lower
    one rows ``a:n`` (S, then its own ``c:n``); S is ordered last in its factor."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, a: int, c: int, n: int,
                 upper: bool) -> None:
        self.upper = upper
        self.a, self.c = a, c
        self.lo, self.hi = (0, c) if upper else (a, n)
        self.indptr, self.indices = indptr, indices
        self.ok = False
        self.rhs: np.ndarray | None = None

    def analyse(self) -> None:
        """The pattern of ``M_i`` (S a dense block), its order (AMD on the half's own rows,
        then S), CHOLMOD's symbolic factorization; ``ok`` if S came out last."""
        lo, hi, a, c = self.lo, self.hi, self.a, self.c
        ip, ix = self.indptr, self.indices
        ns, m = c - a, hi - lo
        # positions of the whole pattern's entries kept in M_i, rows lo:hi, columns < hi
        rows_own = np.arange(lo, a) if self.upper else np.arange(c, hi)
        own_lo, own_hi = ip[rows_own[0]], ip[rows_own[-1] + 1]   # one contiguous run
        own_src = np.arange(own_lo, own_hi, dtype=np.int64)
        own_cols = ix[own_lo:own_hi] - lo
        own_counts = np.diff(ip[rows_own[0]:rows_own[-1] + 2])
        # S rows: the dense upper triangle of S, then (lower half) the entries to its rows
        s_src, s_cols, s_counts = [], [], []
        for j in range(a, c):
            r0, r1 = ip[j], ip[j + 1]
            cols = ix[r0:r1]
            where = np.full(c - j, -1, np.int64)
            inside = cols < c
            where[cols[inside] - j] = np.arange(r0, r1)[inside]
            extra = np.flatnonzero(cols >= c) if not self.upper else np.zeros(0, np.intp)
            s_src += [where, r0 + extra]
            s_cols += [np.arange(j, c) - lo, cols[extra] - lo]
            s_counts.append(c - j + extra.size)
        counts = (np.r_[own_counts, s_counts] if self.upper else np.r_[s_counts, own_counts])
        parts = ([own_src] + s_src, [own_cols] + s_cols) if self.upper else \
            (s_src + [own_src], s_cols + [own_cols])
        self.src = np.concatenate(parts[0])
        self.mindptr = np.r_[0, np.cumsum(counts)].astype(np.int32)
        self.mindices = np.concatenate(parts[1]).astype(np.int32)
        # the order: AMD on the half's own block, S last
        own = slice(0, a - lo) if self.upper else slice(ns, m)
        off = 0 if self.upper else ns
        sub_ptr = self.mindptr[own.start:own.stop + 1] - self.mindptr[own.start]
        sub_idx = self.mindices[self.mindptr[own.start]:self.mindptr[own.stop]] - off
        keep = sub_idx < own.stop - own.start                      # drop the S columns
        sub_ptr = np.r_[0, np.cumsum(np.add.reduceat(keep, sub_ptr[:-1])
                                     if keep.size else np.zeros(0, int))]
        perm = cholmod.Factor.amd(sub_ptr, sub_idx[keep])
        s_local = np.arange(a - lo, c - lo)
        order = np.r_[perm + off, s_local].astype(np.int32)
        self.factor = cholmod.Factor(self.mindptr, self.mindices, order)
        where = np.empty(m, np.int64)
        where[self.factor.perm] = np.arange(m)
        self.s_at = int(where[s_local[0]])
        self.ok = bool(np.array_equal(where[s_local], self.s_at + np.arange(ns)))

    def factor_forward(self, data: np.ndarray) -> None:
        """Factor ``M_i``; read ``L_i`` (S's block); the forward solve ``u, v``."""
        f, ns, s0 = self.factor, self.c - self.a, self.s_at
        vals = np.where(self.src >= 0, data[np.maximum(self.src, 0)], 0.0)
        f.factorize(vals)
        sup, pi, px, s, x = f.supernodes()
        L = np.zeros((ns, ns))
        for j in range(int(np.searchsorted(sup, s0, side="right")) - 1, sup.size - 1):
            c0, c1 = int(sup[j]), int(sup[j + 1])
            rows = s[pi[j]:pi[j + 1]]
            panel = x[px[j]:px[j] + rows.size * (c1 - c0)].reshape(c1 - c0, rows.size)
            first = max(c0, s0)
            on = rows >= s0
            L[np.ix_(rows[on] - s0, np.arange(first, c1) - s0)] = panel[first - c0:, on].T
        self.L = L
        assert self.rhs is not None
        r = np.zeros((self.hi - self.lo, self.rhs.shape[1]))
        own = slice(0, self.a) if self.upper else slice(self.c - self.lo, self.hi - self.lo)
        r[own] = self.rhs[self.lo:self.a] if self.upper else self.rhs[self.c:self.hi]
        self.u = f.solve_L(r[f.perm])
        self.v = self.u[s0:s0 + ns]

    def backward(self, x_S: np.ndarray, out: np.ndarray) -> None:
        """The backward solve with ``L_iᵀ x_S`` in S's place: the half's own rows of x."""
        f, s0, ns = self.factor, self.s_at, self.c - self.a
        u = self.u
        u[s0:s0 + ns] = self.L.T @ x_S
        z = f.solve_Lt(u)
        xh = np.empty_like(z)
        xh[f.perm] = z
        if self.upper:
            out[:self.a] = xh[:self.a]
        else:
            out[self.c:self.hi] = xh[self.c - self.lo:]


def _both(halves: list[_Half], work) -> None:
    """``work(half)`` for both halves, the second in a thread of its own (CHOLMOD releases
    the GIL); an error in either is raised here, once both have ended."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work(halves[1])
        except BaseException as exc:   # noqa: BLE001 — raised again in the caller's thread
            errors.append(exc)

    t = threading.Thread(target=run, name="segapp-band-half", daemon=True)
    t.start()
    try:
        work(halves[0])
    finally:
        t.join()
    if errors:
        raise errors[0]


def solve_band(upper: sp.csr_matrix, b: np.ndarray, cancel: CancelToken = NEVER
               ) -> tuple[np.ndarray, dict]:
    """``x = A⁻¹ b`` for the symmetric positive definite ``A`` whose upper triangle (CSR,
    sorted, diagonal included) is ``upper``: :func:`segapp.graphs.band.band_system`'s.

    Returns ``x`` and a report: ``solver`` ("CHOLMOD (AMD)" or "SuperLU"; a
    :class:`BandSolver` given a cut: "CHOLMOD (AMD, 2 halves)"), the seconds of
    each step, the factor's bytes. ``cancel`` is checked before the factorization (which
    runs to its end once started: under a second at 12 MP).
    """
    return BandSolver(upper.indptr, upper.indices).solve(upper.data, b, cancel)
