"""CHOLMOD's supernodal Cholesky factorization, loaded from the system library at run time.

Why CHOLMOD, and why through ctypes
-----------------------------------
The direct solve of :mod:`segapp.solve.direct` needs a sparse Cholesky factor that can be refactored
numerically on a fixed pattern, whose supernodes can be read (for its sparse triangular
solves), and whose long calls release Python's GIL: the app's window must repaint while an
image is factored (0.4 s at 250K px, 3 s at 1.1M). Measured on this project's 8-neighbour grid
with the same ordering (docs/architecture.md): CHOLMOD factors in 0.54 / 3.8 s at 250K /
1.1M px, SciPy's SuperLU in 1.0 / 10.4 s; PARDISO needs MKL (0.9 GB, not open source).
scikit-sparse wraps CHOLMOD but holds the GIL in every call (the window froze 0.6 / 3.5 s) and
hides the supernodes; ``ctypes`` releases the GIL during foreign calls and lets us read them.

Licence: CHOLMOD is LGPL-2.1+ (its Supernodal module GPL-2+). segapp does not ship or link it
at build time: this module opens the system's ``libcholmod`` (Debian/Ubuntu: ``libcholmod3``)
when it is installed and segapp falls back to its iterative solver when it is not
(:func:`available`). The structure layouts below are CHOLMOD 3's (SuiteSparse 5.x, checked
against its ``cholmod_core.h``); another major version is not used.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import POINTER, c_int, c_size_t, c_void_p

import numpy as np

from ..errors import SolverError

# CHOLMOD 3 constants (cholmod_core.h).
_INT, _REAL = 0, 1
_A, _L, _LT = 0, 4, 5
_GIVEN, _SUPERNODAL = 1, 2
_NOT_POSDEF = 1
#: Byte offsets of the cholmod_common fields set here (CHOLMOD 3.0; sizeof = 2664).
_COMMON_SIZE = 2664
_OFF = {"supernodal": 48, "print": 144, "nmethods": 168, "method0_ordering": 184 + 132,
        "postorder": 1864, "status": 1972}


class _Sparse(ctypes.Structure):
    _fields_ = [("nrow", c_size_t), ("ncol", c_size_t), ("nzmax", c_size_t),
                ("p", c_void_p), ("i", c_void_p), ("nz", c_void_p), ("x", c_void_p),
                ("z", c_void_p), ("stype", c_int), ("itype", c_int), ("xtype", c_int),
                ("dtype", c_int), ("sorted", c_int), ("packed", c_int)]


class _Dense(ctypes.Structure):
    _fields_ = [("nrow", c_size_t), ("ncol", c_size_t), ("nzmax", c_size_t), ("d", c_size_t),
                ("x", c_void_p), ("z", c_void_p), ("xtype", c_int), ("dtype", c_int)]


class _Factor(ctypes.Structure):
    _fields_ = [("n", c_size_t), ("minor", c_size_t), ("Perm", c_void_p),
                ("ColCount", c_void_p), ("IPerm", c_void_p), ("nzmax", c_size_t),
                ("p", c_void_p), ("i", c_void_p), ("x", c_void_p), ("z", c_void_p),
                ("nz", c_void_p), ("next", c_void_p), ("prev", c_void_p),
                ("nsuper", c_size_t), ("ssize", c_size_t), ("xsize", c_size_t),
                ("maxcsize", c_size_t), ("maxesize", c_size_t), ("super", c_void_p),
                ("pi", c_void_p), ("px", c_void_p), ("s", c_void_p), ("ordering", c_int),
                ("is_ll", c_int), ("is_super", c_int), ("is_monotonic", c_int),
                ("itype", c_int), ("xtype", c_int), ("dtype", c_int), ("useGPU", c_int)]


assert ctypes.sizeof(_Sparse) == 88 and ctypes.sizeof(_Dense) == 56 \
    and ctypes.sizeof(_Factor) == 208, "CHOLMOD 3 structure layouts assume a 64-bit platform"

_lib: ctypes.CDLL | None = None
_load_error: str | None = None
_load_lock = threading.Lock()


def _load() -> ctypes.CDLL:
    """Open libcholmod (once) and declare the calls used; SolverError if it cannot be used."""
    global _load_error
    with _load_lock:
        if _lib is not None:
            return _lib
        if _load_error is None:
            _load_error = _open()
        if _lib is None:
            raise SolverError(f"the direct solver is not available: {_load_error}")
        return _lib


def _open() -> str | None:
    """Try to open the library; the reason it cannot be used, or None (sets ``_lib``)."""
    global _lib
    if os.environ.get("SEGAPP_NO_CHOLMOD"):
        return "SEGAPP_NO_CHOLMOD is set"
    names = [n for n in (ctypes.util.find_library("cholmod"), "libcholmod.so.3") if n]
    lib = None
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return ("libcholmod was not found (Debian/Ubuntu: apt-get install libcholmod3 "
                "libopenblas0-pthread)")
    version = (c_int * 3)()
    try:
        lib.cholmod_version(version)
    except AttributeError:
        return "libcholmod has no cholmod_version (too old)"
    if version[0] != 3:
        return (f"libcholmod {version[0]}.{version[1]}.{version[2]} found; segapp reads "
                "CHOLMOD 3's structures only")
    lib.cholmod_start.argtypes = [c_void_p]
    lib.cholmod_finish.argtypes = [c_void_p]
    lib.cholmod_analyze_p.argtypes = [POINTER(_Sparse), c_void_p, c_void_p, c_size_t, c_void_p]
    lib.cholmod_analyze_p.restype = POINTER(_Factor)
    lib.cholmod_factorize.argtypes = [POINTER(_Sparse), POINTER(_Factor), c_void_p]
    lib.cholmod_solve.argtypes = [c_int, POINTER(_Factor), POINTER(_Dense), c_void_p]
    lib.cholmod_solve.restype = POINTER(_Dense)
    lib.cholmod_free_dense.argtypes = [POINTER(POINTER(_Dense)), c_void_p]
    lib.cholmod_free_factor.argtypes = [POINTER(POINTER(_Factor)), c_void_p]
    lib.cholmod_copy_factor.argtypes = [POINTER(_Factor), c_void_p]
    lib.cholmod_copy_factor.restype = POINTER(_Factor)
    _lib = lib
    return None


def available() -> bool:
    """Whether CHOLMOD 3 can be loaded here (else the iterative solver serves)."""
    try:
        _load()
        return True
    except SolverError:
        return False


def unavailable_reason() -> str | None:
    """Why :func:`available` is False (None when it is True)."""
    return None if available() else _load_error


def _array(ptr: int, dtype: type, count: int) -> np.ndarray:
    """A NumPy view of ``count`` items at a C pointer (valid while the factor lives)."""
    if count == 0:
        return np.zeros(0, dtype)
    ctype = np.ctypeslib.as_ctypes_type(np.dtype(dtype))
    return np.ctypeslib.as_array(ctypes.cast(ptr, POINTER(ctype)), shape=(count,))


class Factor:
    """A supernodal ``L Lᵀ = P A Pᵀ`` of a symmetric matrix with a fixed pattern.

    Built with the matrix's lower triangle (CSC, int32 indices) and a fill-reducing order
    (:mod:`segapp.solve.ordering`); CHOLMOD post-orders it (:attr:`perm` is the final one).
    :meth:`factorize` computes the numbers for new values on the same pattern; all calls
    release the GIL. One instance is used by one thread at a time (its own lock).
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, order: np.ndarray) -> None:
        self._lib = _load()
        n = int(indptr.shape[0] - 1)
        self.n = n
        self._indptr = np.ascontiguousarray(indptr, dtype=np.int32)
        self._indices = np.ascontiguousarray(indices, dtype=np.int32)
        self._factor: ctypes._Pointer | None = None
        self._start()
        lib = self._lib
        user = np.ascontiguousarray(order, dtype=np.int32)
        A = self._sparse(np.zeros(self._indices.shape[0]))
        f = lib.cholmod_analyze_p(ctypes.byref(A), user.ctypes.data, None, 0, self._common)
        if not f:
            lib.cholmod_finish(self._common)
            raise SolverError(f"CHOLMOD's analysis failed (status {self._get('status')})")
        self._factor = f
        if not f.contents.is_super:
            raise SolverError("CHOLMOD did not make a supernodal analysis")
        self.perm = _array(f.contents.Perm, np.int32, n).astype(np.int64)
        self.factored = False

    def _start(self) -> None:
        """A cholmod_common of this object's own (one per factor: one thread at a time each)."""
        self._common = ctypes.create_string_buffer(_COMMON_SIZE + 4096)
        self._lock = threading.Lock()
        self._lib.cholmod_start(self._common)
        self._set("print", 0)                 # errors come back as exceptions, not prints
        self._set("supernodal", _SUPERNODAL)  # dense panels: BLAS-3 speed, readable blocks
        self._set("nmethods", 1)              # exactly the given order (no AMD/METIS trials)
        self._set("method0_ordering", _GIVEN)
        self._set("postorder", 1)

    def copy(self) -> "Factor":
        """An independent copy (the analysis, and the numbers if any): a new factor can be
        computed on it while this one still serves solves in another thread."""
        new = Factor.__new__(Factor)
        new._lib, new.n, new.perm = self._lib, self.n, self.perm
        new._indptr, new._indices = self._indptr, self._indices
        new._factor = None
        new._start()
        with self._lock:
            f = self._lib.cholmod_copy_factor(self._factor, new._common)
        if not f:
            raise SolverError(f"CHOLMOD could not copy a factor (status {new._get('status')})")
        new._factor = f
        new.factored = self.factored
        return new

    # -- cholmod_common fields -------------------------------------------------------------
    def _set(self, field: str, value: int) -> None:
        c_int.from_buffer(self._common, _OFF[field]).value = value

    def _get(self, field: str) -> int:
        return c_int.from_buffer(self._common, _OFF[field]).value

    def _sparse(self, data: np.ndarray) -> _Sparse:
        n = self.n
        return _Sparse(nrow=n, ncol=n, nzmax=data.shape[0], p=self._indptr.ctypes.data,
                       i=self._indices.ctypes.data, nz=None, x=data.ctypes.data, z=None,
                       stype=-1, itype=_INT, xtype=_REAL, dtype=0, sorted=1, packed=1)

    # -- numbers ---------------------------------------------------------------------------
    def factorize(self, data: np.ndarray) -> None:
        """Factor the matrix with these values (same pattern as at analysis); GIL released.

        Raises :class:`~segapp.errors.SolverError` if the matrix is not positive definite.
        """
        data = np.ascontiguousarray(data, dtype=np.float64)
        with self._lock:
            A = self._sparse(data)
            self.factored = False
            ok = self._lib.cholmod_factorize(ctypes.byref(A), self._factor, self._common)
            f = self._factor.contents
            if not ok or self._get("status") == _NOT_POSDEF or f.minor < self.n:
                raise SolverError("the Dirichlet matrix is not positive definite "
                                  f"(CHOLMOD status {self._get('status')}, column {f.minor})")
            self.factored = True

    def _solve(self, system: int, B: np.ndarray) -> np.ndarray:
        if not self.factored:
            raise SolverError("the factor has no numbers (factorize first)")
        B = np.asfortranarray(B, dtype=np.float64)
        squeeze = B.ndim == 1
        if squeeze:
            B = B[:, None]
        dense = _Dense(nrow=B.shape[0], ncol=B.shape[1], nzmax=B.size, d=B.shape[0],
                       x=B.ctypes.data, z=None, xtype=_REAL, dtype=0)
        with self._lock:
            X = self._lib.cholmod_solve(system, self._factor, ctypes.byref(dense), self._common)
            if not X:
                raise SolverError(f"CHOLMOD's solve failed (status {self._get('status')})")
            try:
                out = _array(X.contents.x, np.float64, B.size).reshape(B.shape, order="F").copy()
            finally:
                self._lib.cholmod_free_dense(ctypes.byref(X), self._common)
        return out[:, 0] if squeeze else out

    def solve(self, B: np.ndarray) -> np.ndarray:
        """``A⁻¹ B`` (original order)."""
        return self._solve(_A, B)

    def solve_L(self, B: np.ndarray) -> np.ndarray:
        """``L⁻¹ B`` for B in the factor's order (``B[perm]``)."""
        return self._solve(_L, B)

    def solve_Lt(self, B: np.ndarray) -> np.ndarray:
        """``L⁻ᵀ B`` in the factor's order."""
        return self._solve(_LT, B)

    def supernodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Views of the supernodal factor: ``super, pi, px, s, x`` (CHOLMOD's names).

        Supernode j holds the columns ``super[j] : super[j+1]`` of L as one dense
        column-major panel ``x[px[j] : px[j] + nrows·ncols]`` whose rows are
        ``s[pi[j] : pi[j+1]]`` (nrows of them; the first ncols are the columns themselves,
        whose square block is lower triangular). Valid until the next :meth:`factorize`.
        """
        if not self.factored:
            raise SolverError("the factor has no numbers (factorize first)")
        f = self._factor.contents
        ns = int(f.nsuper)
        return (_array(f.super, np.int32, ns + 1), _array(f.pi, np.int32, ns + 1),
                _array(f.px, np.int32, ns + 1), _array(f.s, np.int32, int(f.ssize)),
                _array(f.x, np.float64, int(f.xsize)))

    @property
    def nbytes(self) -> int:
        """Memory of the numeric factor (values and integer pattern)."""
        f = self._factor.contents
        return int(f.xsize) * 8 + int(f.ssize) * 4 + int(f.nsuper) * 12 + self.n * 8

    def __del__(self) -> None:
        lib = getattr(self, "_lib", None)
        if lib is not None and getattr(self, "_factor", None):
            lib.cholmod_free_factor(ctypes.byref(self._factor), self._common)
            lib.cholmod_finish(self._common)
            self._factor = None
