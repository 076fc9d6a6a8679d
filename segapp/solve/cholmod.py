"""CHOLMOD's supernodal Cholesky factorization, loaded at run time: CHOLMOD 3 or 5, checked first.

Why CHOLMOD, and why through ctypes
-----------------------------------
The direct solve of :mod:`segapp.solve.direct` needs a sparse Cholesky factor that can be refactored
numerically on a fixed pattern, whose supernodes can be read (for its sparse triangular
solves), and whose long calls release Python's GIL: the app's window must repaint while an
image is factored (0.4 s at 250K px, 3 s at 1.1M). Measured on this project's 8-neighbour grid
with the same ordering (docs/architecture.md): CHOLMOD factors in 0.54 / 3.8 s at 250K /
1.1M px, SciPy's SuperLU in 1.0 / 10.4 s; PARDISO needs MKL (0.9 GB, not open source).
scikit-sparse wraps CHOLMOD but holds the GIL in every call (the window froze 0.6 / 3.5 s) and
hides the supernodes; ``ctypes`` releases the GIL during foreign calls and lets us read them
(``tests/solve/test_cholmod.py`` measures that another thread runs on during a factorization).

Which library (:func:`library`)
-------------------------------
Tried in this order, the first that passes its checks serves:

1. ``SEGAPP_CHOLMOD``: a path to a ``libcholmod`` (or a folder holding one) — only that one
   (``SEGAPP_CHOLMOD=system`` or ``=pip``: only the libraries of 2. or of 3.);
2. the system's: ``libcholmod.so.5`` (SuiteSparse 7.x: Debian 13, Ubuntu 24.04),
   ``libcholmod.so.4`` (SuiteSparse 6.x), ``libcholmod.so.3`` (SuiteSparse 5.x: Debian 12,
   Ubuntu 22.04), whatever ``ctypes.util.find_library`` names (macOS, Windows);
3. pip's: the ``libcholmod`` that CVXOPT's Linux wheels bundle (``pip install
   'segapp[fast]'``: CHOLMOD 3.0.6, in ``cvxopt.libs``; linked with ATLAS, but bound to the
   wheel's own OpenBLAS, see BLAS below).

``SEGAPP_NO_CHOLMOD`` (any value) turns the direct solver off.

The checks
----------
The structures are C structs of a given major version: CHOLMOD 3 and 4 (SuiteSparse 5–6) and
CHOLMOD 5 (SuiteSparse 7) differ in ``cholmod_common`` (2664 vs 2680 bytes; the fields read
or set here sit at the same offsets in both, read from their ``cholmod.h``). A library is used
only if

* ``cholmod_version`` names a major version with a known layout (:data:`LAYOUTS`);
* ``cholmod_start``, run on a buffer filled with a sentinel, writes nothing past the layout's
  size and leaves the documented defaults where the layout says they are (``grow0`` = 1.2,
  ``supernodal_switch`` = 40, ``print`` = 3, ``method[1].ordering`` = AMD, ``postorder``,
  ``metis_nswitch`` = 3000, ...; CHOLMOD 5: ``chunk`` = 128000, its last field);
* a 36-unknown grid Laplacian + I is analysed, factored and solved through these structs: the
  factor reads back as supernodal, int32, of order n with our ordering and a permutation, and
  the solution matches a dense solve to 1e-12.

A library that fails is refused with its reason (:func:`unavailable_reason`), never used.

OpenMP
------
CHOLMOD 3 and 4 (SuiteSparse 5–6) open OpenMP parallel regions of a fixed team size
(``num_threads(CHOLMOD_OMP_NUM_THREADS)``, 4 in Debian's build) around small loops inside the
supernodal factorization (clearing, zeroing and scattering into each supernode, one region
per supernode or update). On two cores, beside other work, their fork/join and the team's
spinning cost more than the loops: the numeric factorization of a 250K-px grid took 0.73–0.76 s
(0.83 s of processor time) with CHOLMOD 3.0.14 on one BLAS thread at load 6.7, and 0.43 s
(0.55 s) with those regions run by the calling thread alone — as fast as CHOLMOD 5.3.1, whose regions open
only above a work threshold (``chunk``). So a factorization with CHOLMOD 3 or 4 runs with the
calling thread's OpenMP settings at one thread (:func:`_openmp_serial`; the
runtime is the one the library loaded, found with ``RTLD_NOLOAD``), restored after the call;
the dense work keeps its BLAS threads.

BLAS
----
The dense work of a factorization runs in the BLAS the library was linked with (Debian's
``libblas.so.3``: the system OpenBLAS), a different library from NumPy's and SciPy's (their
wheels carry OpenBLAS builds with prefixed symbols). CVXOPT's wheel links its CHOLMOD with a
generic serial ATLAS but also carries an OpenBLAS (0.3.15): that one is opened into the
global scope first (:func:`_wheel_openblas`), so the CHOLMOD opened after it binds its BLAS
and LAPACK calls there (a 250K-px photo from scratch 1.07 → 0.50–0.57 s, about the system
library's time). Two things follow:

* its kernels: an OpenBLAS older than the processor does not know its model and falls back
  to its SSE3 ("Prescott") kernels, so the library is loaded with ``OPENBLAS_CORETYPE`` set
  to the widest instruction set ``/proc/cpuinfo`` names (:func:`_blas_kernels`; a user's own
  setting is kept). Debian 12's OpenBLAS 0.3.21 on a Sapphire Rapids Xeon took 0.91 s of
  processor time to factor a 1.1M-px photo's matrix with its fallback, 0.68 s with its
  AVX-512 kernels;
* its threads: :func:`blas_threads` sets those of that library only, found by the address
  its thread-count function has as seen from ``libcholmod`` (:func:`_own_blas`), so a
  factorization may take a core that NumPy's tall-skinny products in another thread must
  not (they lose with a second thread, :meth:`segapp.methods.base.Method.run`).

Licence: CHOLMOD is LGPL-2.1+ (its Supernodal module GPL-2+); CVXOPT is GPL-3+. segapp does
not ship or link either at build time: it opens a library that is installed, and falls back
to its iterative solver when none is (:func:`available`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import glob
import importlib.util
import os
import re
import sys
import threading
from ctypes import POINTER, c_double, c_int, c_size_t, c_void_p
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

from ..errors import SolverError

# Constants shared by CHOLMOD 3, 4 and 5 (cholmod_core.h / cholmod.h).
_INT, _REAL = 0, 1
_A, _L, _LT = 0, 4, 5
_GIVEN, _AMD, _AUTO, _SUPERNODAL = 1, 2, 1, 2
_NOT_POSDEF = 1


@dataclass(frozen=True)
class Layout:
    """Where one major version keeps the ``cholmod_common`` fields used and checked here.

    ``offsets``: field → (byte offset, C type); ``defaults``: what ``cholmod_start`` leaves
    in a field (its documented default); ``size``: ``sizeof(cholmod_common)``.
    """

    name: str
    size: int
    offsets: dict[str, tuple[int, type]]
    defaults: dict[str, float]

    def __repr__(self) -> str:
        return f"Layout({self.name!r}, {self.size} bytes)"


#: Byte offsets and C types of the cholmod_common fields used here: identical in CHOLMOD 3.0
#: and 5.3 (each read off its cholmod.h with offsetof).
_COMMON_FIELDS: dict[str, tuple[int, type]] = {
    "grow0": (8, c_double), "grow2": (24, c_size_t), "maxrank": (32, c_size_t),
    "supernodal_switch": (40, c_double), "supernodal": (48, c_int), "final_asis": (52, c_int),
    "print": (144, c_int), "nmethods": (168, c_int), "method0_ordering": (184 + 132, c_int),
    "method1_ordering": (184 + 168 + 132, c_int), "postorder": (1864, c_int),
    "metis_dswitch": (1880, c_double), "metis_nswitch": (1888, c_size_t),
    "itype": (1960, c_int), "status": (1972, c_int), "fl": (1976, c_double),
    "lnz": (1984, c_double)}
_COMMON_DEFAULTS: dict[str, float] = {
    "grow0": 1.2, "grow2": 5, "maxrank": 8, "supernodal_switch": 40.0, "supernodal": _AUTO,
    "final_asis": 1, "print": 3, "nmethods": 0, "method0_ordering": _GIVEN,
    "method1_ordering": _AMD, "postorder": 1, "metis_dswitch": 0.66, "metis_nswitch": 3000,
    "itype": _INT, "status": 0}

_V3 = Layout("CHOLMOD 3", 2664, _COMMON_FIELDS, _COMMON_DEFAULTS)
_V5 = Layout("CHOLMOD 5", 2680, {**_COMMON_FIELDS, "chunk": (2664, c_double)},
             {**_COMMON_DEFAULTS, "chunk": 128000.0})
#: The layout of each major version segapp can read (CHOLMOD 4, SuiteSparse 6, kept
#: CHOLMOD 3's structures; its checks decide).
LAYOUTS: dict[int, Layout] = {3: _V3, 4: _V3, 5: _V5}
#: Sentinel bytes after the layout's size: cholmod_start must leave them alone.
_GUARD = 4096


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


# The same in CHOLMOD 3 and 5 (their cholmod.h; 64-bit platforms).
assert ctypes.sizeof(_Sparse) == 88 and ctypes.sizeof(_Dense) == 56 \
    and ctypes.sizeof(_Factor) == 208, "CHOLMOD's structure layouts assume a 64-bit platform"


@dataclass(frozen=True)
class Library:
    """A libcholmod that passed its checks: where it is, its version, how it came."""

    path: str
    version: tuple[int, int, int]
    layout: Layout
    source: str                                   # "SEGAPP_CHOLMOD", "system" or "pip (cvxopt)"
    cdll: ctypes.CDLL = field(repr=False, compare=False)
    #: The OpenMP runtimes whose regions a factorization runs serially (module doc, OpenMP).
    openmp: tuple[ctypes.CDLL, ...] = field(default=(), repr=False, compare=False)

    def describe(self) -> str:
        """E.g. ``CHOLMOD 3.0.14 (system: /usr/lib/x86_64-linux-gnu/libcholmod.so.3)``."""
        v = ".".join(map(str, self.version))
        return f"CHOLMOD {v} ({self.source}: {self.path})"


#: The command that installs a direct solver, for messages (Debian/Ubuntu; pip elsewhere).
INSTALL_HINT = ("sudo apt-get install '?name(^libcholmod[35]$)' libopenblas0-pthread "
                "(Debian/Ubuntu), or pip install 'segapp[fast]' (Linux)")

_lib: Library | None = None
_load_error: str | None = None
_load_lock = threading.Lock()


def _load() -> Library:
    """The library (found and checked once); SolverError if none can be used."""
    global _load_error
    with _load_lock:
        if _lib is not None:
            return _lib
        if _load_error is None:
            _load_error = _find()
        if _lib is None:
            raise SolverError(f"the direct solver is not available: {_load_error}")
        return _lib


def _candidates() -> list[tuple[str, str]]:
    """``(path or soname, source)`` in the order they are tried (module doc)."""
    given = os.environ.get("SEGAPP_CHOLMOD", "")
    if given and given not in ("system", "pip"):
        p = Path(given)
        if p.is_dir():
            found = sorted(glob.glob(str(p / "**" / "libcholmod*.so*"), recursive=True)
                           + glob.glob(str(p / "**" / "*cholmod*.dylib"), recursive=True))
            return [(found[0] if found else str(p / "libcholmod.so"), "SEGAPP_CHOLMOD")]
        return [(given, "SEGAPP_CHOLMOD")]
    out = []
    if given != "pip":
        names = ["libcholmod.so.5", "libcholmod.so.4", "libcholmod.so.3"]
        found = ctypes.util.find_library("cholmod")
        if found and found not in names:
            names.append(found)
        if sys.platform == "darwin":
            names += [f"{d}/libcholmod.dylib" for d in ("/opt/homebrew/lib", "/usr/local/lib")]
        out += [(n, "system") for n in names]
    spec = importlib.util.find_spec("cvxopt") if given != "system" else None
    if spec is not None and spec.origin:
        libs = Path(spec.origin).parent.parent / "cvxopt.libs"
        out += [(p, "pip (cvxopt)") for p in sorted(glob.glob(str(libs / "libcholmod*.so*")))]
    return out


def _open_with_deps(path: str, mode: int = ctypes.DEFAULT_MODE, depth: int = 0) -> ctypes.CDLL:
    """Open ``path``; a wheel's bundled library needs its neighbours (no RUNPATH): each one
    the loader says is missing is opened first from the same folder (and its own, in turn)."""
    folder = Path(path).parent
    for _ in range(16):
        try:
            return ctypes.CDLL(path, mode=mode)
        except OSError as exc:
            m = re.search(r"([^\s:/]+\.so[^\s:]*): cannot open shared object", str(exc))
            missing = folder / m.group(1) if m is not None else None
            if missing is None or depth > 8 or not missing.exists():
                raise
            _open_with_deps(str(missing), ctypes.RTLD_GLOBAL, depth + 1)
    return ctypes.CDLL(path, mode=mode)


def _wheel_openblas(cholmod_path: str) -> None:
    """Before a wheel's ``libcholmod``: the OpenBLAS beside it opened with ``RTLD_GLOBAL``,
    whose BLAS and LAPACK symbols the dynamic linker then finds before those of the ATLAS
    the library names (module doc, BLAS). Nothing where there is none: ATLAS serves."""
    for blas in sorted(Path(cholmod_path).parent.glob("libopenblas*.so*"))[:1]:
        try:
            _open_with_deps(str(blas), ctypes.RTLD_GLOBAL)
        except OSError:
            pass


def _openblas_coretype(flags: set[str], vendor: str = "") -> str | None:
    """The OpenBLAS kernel set (``OPENBLAS_CORETYPE``) for a processor with these
    ``/proc/cpuinfo`` flags (module doc, BLAS): the widest vector instructions it
    has; None below AVX (OpenBLAS's own choice then stands)."""
    if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Zen" if vendor == "AuthenticAMD" else "Haswell"
    if "avx" in flags:
        return "SandyBridge"
    return None


def _cpu_flags() -> tuple[set[str], str]:
    """The first processor's flags and vendor in ``/proc/cpuinfo`` (empty elsewhere)."""
    flags: set[str] = set()
    vendor = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "vendor_id" and not vendor:
                    vendor = value.strip()
                elif key == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return flags, vendor


@contextlib.contextmanager
def _blas_kernels():
    """Within: an OpenBLAS loaded now (CHOLMOD's dependency) uses the kernels of this
    processor's instruction set (module doc, BLAS). A user's own ``OPENBLAS_CORETYPE`` is
    kept; the variable is removed after (child processes' OpenBLAS choose their own)."""
    if "OPENBLAS_CORETYPE" in os.environ:
        yield
        return
    core = _openblas_coretype(*_cpu_flags())
    if core is None:
        yield
        return
    os.environ["OPENBLAS_CORETYPE"] = core
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_CORETYPE", None)


def _find() -> str | None:
    """Try each candidate; sets ``_lib`` and returns None, or returns why none serves."""
    if os.environ.get("SEGAPP_NO_CHOLMOD"):
        return "SEGAPP_NO_CHOLMOD is set"
    with _blas_kernels():
        return _try_candidates()


def _try_candidates() -> str | None:
    global _lib
    refused = []
    for name, source in _candidates():
        try:
            if source == "pip (cvxopt)":
                _wheel_openblas(name)
            cdll = _open_with_deps(name) if os.sep in name else ctypes.CDLL(name)
        except OSError as exc:
            if source != "system":
                refused.append(f"{name}: {exc}")
            continue
        lib, reason = check_library(cdll, name, source)
        if lib is not None:
            _lib = lib
            return None
        refused.append(reason)
    if not refused:
        return f"libcholmod was not found (install: {INSTALL_HINT})"
    return "; ".join(refused)


def _declare(lib: ctypes.CDLL) -> None:
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
    lib.cholmod_amd.argtypes = [POINTER(_Sparse), c_void_p, c_size_t, c_void_p, c_void_p]
    lib.cholmod_amd.restype = c_int


def check_library(cdll: ctypes.CDLL, path: str, source: str = "system",
                  layout: Layout | None = None) -> tuple[Library | None, str]:
    """The module doc's checks: ``(Library, "")`` if ``cdll`` can be used with ``layout``
    (default: its major version's), else ``(None, reason)``."""
    name = Path(path).name
    version = (c_int * 3)()
    try:
        cdll.cholmod_version(version)
    except AttributeError:
        return None, f"{name} has no cholmod_version (older than CHOLMOD 2.1)"
    v = (int(version[0]), int(version[1]), int(version[2]))
    vs = ".".join(map(str, v))
    if layout is None:
        layout = LAYOUTS.get(v[0])
        if layout is None:
            return None, (f"{name} is CHOLMOD {vs}, whose structures segapp does not know "
                          f"(it reads CHOLMOD {', '.join(map(str, sorted(LAYOUTS)))})")
    try:
        _declare(cdll)
    except AttributeError as exc:
        return None, f"{name} (CHOLMOD {vs}) lacks a call segapp uses: {exc}"
    lib = Library(path, v, layout, source, cdll, _fine_grained_openmp(v))
    reason = _check_common(lib) or _self_test(lib)
    if reason:
        return None, f"{name} (CHOLMOD {vs}) refused with the {layout.name} layout: {reason}"
    return lib, ""


#: OpenMP runtimes a libcholmod may have loaded (its build's own; none is loaded here).
_OPENMP_RUNTIMES = ("libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so",
                    "libgomp.1.dylib", "libomp.dylib")


def _fine_grained_openmp(version: tuple[int, int, int]) -> tuple[ctypes.CDLL, ...]:
    """The OpenMP runtimes already in the process when CHOLMOD 3 or 4 is (module doc,
    OpenMP): those whose per-thread settings :func:`_openmp_serial` sets. None for CHOLMOD 5,
    or where the loader cannot look up a library without loading it."""
    noload = getattr(os, "RTLD_NOLOAD", None)
    if version[0] >= 5 or noload is None:
        return ()
    found = []
    for name in _OPENMP_RUNTIMES:
        try:
            rt = ctypes.CDLL(name, mode=noload | ctypes.RTLD_LOCAL)
            for getter in ("omp_get_dynamic", "omp_get_max_threads",
                           "omp_get_max_active_levels"):
                getattr(rt, getter).restype = c_int
            for setter in ("omp_set_dynamic", "omp_set_num_threads",
                           "omp_set_max_active_levels"):
                getattr(rt, setter).argtypes = [c_int]
        except (OSError, AttributeError):
            continue
        found.append(rt)
    return tuple(found)


@contextlib.contextmanager
def _openmp_serial(runtimes: tuple[ctypes.CDLL, ...]):
    """Within: OpenMP regions opened by this thread run on it alone (module doc, OpenMP).

    A region's ``num_threads`` clause overrides ``nthreads-var``, not these:
    ``max-active-levels-var`` 0 (no region of this thread is active: libgomp and LLVM's
    runtime give it one thread), and, for a runtime that keeps that setting process-wide,
    ``dyn-var`` on with ``nthreads-var`` 1 (libgomp's dynamic adjustment gives at most
    ``nthreads-var`` threads). All are per-thread settings since OpenMP 5.0, restored on
    the way out (a caller's own OpenMP code after a ``segment`` call keeps its threads)."""
    saved = [(rt, rt.omp_get_dynamic(), rt.omp_get_max_threads(),
              rt.omp_get_max_active_levels()) for rt in runtimes]
    for rt, *_ in saved:
        rt.omp_set_dynamic(1)
        rt.omp_set_num_threads(1)
        rt.omp_set_max_active_levels(0)
    try:
        yield
    finally:
        for rt, dyn, n, levels in saved:
            rt.omp_set_max_active_levels(levels)
            rt.omp_set_num_threads(n)
            rt.omp_set_dynamic(dyn)


def _check_common(lib: Library) -> str | None:
    """cholmod_start on a sentinel-filled buffer: nothing written past the layout's size,
    the documented defaults where the layout puts them."""
    lay = lib.layout
    buf = ctypes.create_string_buffer(b"\xa5" * (lay.size + _GUARD), lay.size + _GUARD)
    lib.cdll.cholmod_start(buf)
    try:
        tail = buf.raw[lay.size:]
        if tail != b"\xa5" * _GUARD:
            last = lay.size + max(i for i, c in enumerate(tail) if c != 0xA5)
            return (f"cholmod_start wrote up to byte {last}, past the {lay.size} bytes of "
                    "the layout's cholmod_common")
        for key, want in lay.defaults.items():
            off, ctype = lay.offsets[key]
            got = ctype.from_buffer(buf, off).value
            if not np.isclose(got, want, rtol=1e-12, atol=0):
                return f"cholmod_common.{key} reads {got!r}, its documented default is {want!r}"
    finally:
        lib.cdll.cholmod_finish(buf)
    return None


def _self_test(lib: Library) -> str | None:
    """Factor and solve a small SPD matrix (6×6 grid Laplacian + I) through the structs."""
    import scipy.sparse as sp

    side = 6
    path = sp.diags([-np.ones(side - 1), 2 * np.ones(side), -np.ones(side - 1)], [-1, 0, 1])
    A = (sp.kronsum(path, path) + sp.identity(side * side)).tocsc()
    n = A.shape[0]
    lower = sp.tril(A, format="csc")
    lower.sort_indices()
    order = np.arange(n)[::-1].copy()
    try:
        f = Factor(lower.indptr, lower.indices, order, lib=lib)
        c = f._factor.contents
        if (c.n != n or not c.is_super or c.itype != _INT or c.dtype != 0
                or c.ordering != _GIVEN):
            return (f"the analysed factor reads n={c.n}, is_super={c.is_super}, "
                    f"itype={c.itype}, dtype={c.dtype}, ordering={c.ordering}")
        if not np.array_equal(np.sort(f.perm), np.arange(n)):
            return "the factor's permutation is not one"
        f.factorize(lower.data)
        sup, pi, px, s, x = f.supernodes()
        if sup[-1] != n or px[-1] != x.size or pi[-1] != s.size or f._get("lnz") <= 0:
            return "the supernodes do not read back as the factor's"
        b = np.arange(1.0, n + 1.0)
        err = np.abs(f.solve(b) - np.linalg.solve(A.toarray(), b)).max()
        if not err < 1e-12:
            return f"a 36-unknown solve is off by {err:.1e}"
    except SolverError as exc:
        return str(exc)
    return None


def library() -> Library | None:
    """The libcholmod in use (None where none can be: see :func:`unavailable_reason`)."""
    try:
        return _load()
    except SolverError:
        return None


def loaded() -> bool:
    """Whether a library is loaded already (no attempt to load one)."""
    return _lib is not None


def available() -> bool:
    """Whether a checked CHOLMOD can be loaded here (else the iterative solver serves)."""
    return library() is not None


def unavailable_reason() -> str | None:
    """Why :func:`available` is False (None when it is True)."""
    return None if available() else _load_error


#: The thread-count query of each BLAS threadpoolctl controls, as a library exports it.
_BLAS_THREAD_QUERIES = ("openblas_get_num_threads", "bli_thread_get_num_threads",
                        "MKL_Get_Max_Threads", "flexiblas_get_num_threads")
_own_blas_cache: dict[str, "ThreadpoolController | None"] = {}


def _address(cdll: ctypes.CDLL, name: str) -> int | None:
    try:
        return ctypes.cast(getattr(cdll, name), c_void_p).value
    except AttributeError:
        return None


def _own_blas(lib: Library | None) -> "ThreadpoolController | None":
    """threadpoolctl's controller of the BLAS ``lib`` calls (module doc, BLAS; default: the
    library in use), or None if there is no library, or its BLAS cannot be told apart from
    the others or has no threads to set."""
    lib = lib if lib is not None else library()
    if lib is None:
        return None
    if lib.path in _own_blas_cache:
        return _own_blas_cache[lib.path]
    found = None
    noload = getattr(os, "RTLD_NOLOAD", None)
    seen = {q: a for q in _BLAS_THREAD_QUERIES if (a := _address(lib.cdll, q)) is not None}
    if noload is not None and seen:
        ctl = ThreadpoolController()
        for lc in ctl.lib_controllers:
            if lc.user_api != "blas":
                continue
            try:
                other = ctypes.CDLL(lc.filepath, mode=noload | ctypes.RTLD_LOCAL)
            except OSError:
                continue
            if any(_address(other, q) == a for q, a in seen.items()):
                found = ctl.select(filepath=lc.filepath)
                break
    _own_blas_cache[lib.path] = found
    return found


def blas_threads(limits: int, lib: Library | None = None) -> contextlib.AbstractContextManager:
    """Within: the BLAS of ``lib`` (default: the one in use) at ``limits`` threads, restored
    on the way out; NumPy's and SciPy's BLAS keep theirs. Nothing where that BLAS cannot be
    told apart or has no threads to set (CVXOPT's wheel links a serial ATLAS)."""
    own = _own_blas(lib)
    return contextlib.nullcontext() if own is None else own.limit(limits=limits)


def set_blas_threads(limits: int, lib: Library | None = None) -> None:
    """Set the threads of ``lib``'s own BLAS (default: the library in use) from now on;
    nothing where it cannot be told apart (NumPy's must keep theirs)."""
    own = _own_blas(lib)
    if own is not None:
        for lc in own.lib_controllers:
            lc.set_num_threads(limits)


def describe() -> str:
    """The library in use, or why there is none (one line)."""
    lib = library()
    return lib.describe() if lib is not None else f"no CHOLMOD: {_load_error}"


def _array(ptr: int, dtype: type, count: int) -> np.ndarray:
    """A NumPy view of ``count`` items at a C pointer (valid while the factor lives)."""
    if count == 0:
        return np.zeros(0, dtype)
    ctype = np.ctypeslib.as_ctypes_type(np.dtype(dtype))
    return np.ctypeslib.as_array(ctypes.cast(ptr, POINTER(ctype)), shape=(count,))


class Factor:
    """A supernodal ``L Lᵀ = P A Pᵀ`` of a symmetric matrix with a fixed pattern.

    Built with the matrix's lower triangle (CSC, int32 indices) and a fill-reducing order
    (:mod:`segapp.solve.ordering`), or with ``order=None`` CHOLMOD's own AMD (for graphs that
    are not a whole grid: :mod:`segapp.solve.band`); CHOLMOD post-orders it (:attr:`perm` is
    the final one).
    :meth:`factorize` computes the numbers for new values on the same pattern; all calls
    release the GIL. One instance is used by one thread at a time (its own lock).
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, order: np.ndarray | None, *,
                 lib: Library | None = None) -> None:
        self._bind(indptr, indices, lib)
        n, lib_ = self.n, self._lib
        user = None if order is None else np.ascontiguousarray(order, dtype=np.int32)
        if user is None:
            self._set("method0_ordering", _AMD)
        A = self._sparse(np.zeros(self._indices.shape[0]))
        f = lib_.cholmod_analyze_p(ctypes.byref(A), None if user is None else user.ctypes.data,
                                   None, 0, self._common)
        if not f:
            raise SolverError(f"CHOLMOD's analysis failed (status {self._get('status')})")
        self._factor = f
        if not f.contents.is_super:
            raise SolverError("CHOLMOD did not make a supernodal analysis")
        self.perm = _array(f.contents.Perm, np.int32, n).astype(np.int64)
        self.factored = False

    def _bind(self, indptr: np.ndarray, indices: np.ndarray, lib: Library | None) -> None:
        """The library, the pattern (int32, contiguous) and a cholmod_common of its own: what
        the constructor, :meth:`amd` and :meth:`copy` all start from (no factor yet)."""
        self.library = lib if lib is not None else _load()
        self._lib = self.library.cdll
        self.n = int(indptr.shape[0] - 1)
        self._indptr = np.ascontiguousarray(indptr, dtype=np.int32)
        self._indices = np.ascontiguousarray(indices, dtype=np.int32)
        self._factor: ctypes._Pointer | None = None
        self._start()

    def _start(self) -> None:
        """A cholmod_common of this object's own (one per factor: one thread at a time each)."""
        self._common = ctypes.create_string_buffer(self.library.layout.size + _GUARD)
        self._lock = threading.Lock()
        self._lib.cholmod_start(self._common)
        self._started = True
        self._set("print", 0)                 # errors come back as exceptions, not prints
        self._set("supernodal", _SUPERNODAL)  # dense panels: BLAS-3 speed, readable blocks
        self._set("nmethods", 1)              # exactly the given order (no AMD/METIS trials)
        self._set("method0_ordering", _GIVEN)
        self._set("postorder", 1)

    @classmethod
    def amd(cls, indptr: np.ndarray, indices: np.ndarray, *, lib: Library | None = None
            ) -> np.ndarray:
        """CHOLMOD's AMD order of a symmetric pattern (the lower triangle as CSC, as the
        constructor's), without the symbolic factorization: ``perm`` with ``P A Pᵀ``
        sparse-factorable, for a matrix assembled from parts
        (:class:`segapp.solve.band.BandSolver`). Releases the GIL."""
        self = cls.__new__(cls)
        self._bind(indptr, indices, lib)
        perm = np.empty(self.n, dtype=np.int32)
        A = self._sparse(np.zeros(self._indices.shape[0]))
        if self.n and not self._lib.cholmod_amd(ctypes.byref(A), None, 0, perm.ctypes.data,
                                                self._common):
            raise SolverError(f"CHOLMOD's AMD failed (status {self._get('status')})")
        return perm

    def copy(self) -> "Factor":
        """An independent copy (the analysis, and the numbers if any): a new factor can be
        computed on it while this one still serves solves in another thread."""
        new = Factor.__new__(Factor)
        new._bind(self._indptr, self._indices, self.library)   # the same arrays, no copy
        new.perm = self.perm
        with self._lock:
            f = self._lib.cholmod_copy_factor(self._factor, new._common)
        if not f:
            raise SolverError(f"CHOLMOD could not copy a factor (status {new._get('status')})")
        new._factor = f
        new.factored = self.factored
        return new

    # -- cholmod_common fields -------------------------------------------------------------
    def _set(self, field: str, value: int) -> None:
        off, ctype = self.library.layout.offsets[field]
        ctype.from_buffer(self._common, off).value = value

    def _get(self, field: str) -> float:
        off, ctype = self.library.layout.offsets[field]
        return ctype.from_buffer(self._common, off).value

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
        with self._lock, _openmp_serial(self.library.openmp):
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
                # Kept in CHOLMOD's column order: the next solve of the update takes it as is.
                out = _array(X.contents.x, np.float64, B.size).reshape(
                    B.shape, order="F").copy(order="F")
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
        if lib is None or not getattr(self, "_started", False):
            return
        if getattr(self, "_factor", None):
            lib.cholmod_free_factor(ctypes.byref(self._factor), self._common)
            self._factor = None
        lib.cholmod_finish(self._common)
        self._started = False
