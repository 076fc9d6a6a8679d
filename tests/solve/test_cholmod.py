"""The CHOLMOD binding: which library, its layout checks, the GIL released while it factors.

CI runs this file and ``test_direct.py`` once per ABI: with the system's CHOLMOD 3 and with
Debian 13's CHOLMOD 5 named by ``SEGAPP_CHOLMOD`` (``.ci/run``, ``.ci/fetch-cholmod5``).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from segapp.errors import SolverError
from segapp.solve import cholmod

REPO = Path(__file__).resolve().parents[2]
needs_cholmod = pytest.mark.skipif(not cholmod.available(),
                                   reason=f"CHOLMOD: {cholmod.unavailable_reason()}")


def test_a_library_named_by_segapp_cholmod_is_the_one_used():
    """A CI run against one ABI must not pass by falling back to another library or to the
    iterative path."""
    given = os.environ.get("SEGAPP_CHOLMOD")
    if not given:
        pytest.skip("SEGAPP_CHOLMOD is not set")
    lib = cholmod.library()
    assert lib is not None, cholmod.unavailable_reason()
    if given in ("system", "pip"):
        assert lib.source.startswith(given)
    else:
        assert lib.source == "SEGAPP_CHOLMOD" and str(Path(given)) in lib.path
    want = os.environ.get("SEGAPP_EXPECT_CHOLMOD_MAJOR")
    if want:
        assert lib.version[0] == int(want), lib.describe()


@needs_cholmod
def test_the_library_says_what_it_is():
    lib = cholmod.library()
    assert lib.version[0] in cholmod.LAYOUTS
    text = cholmod.describe()
    assert text.startswith(f"CHOLMOD {lib.version[0]}.") and lib.source in text


@needs_cholmod
def test_the_other_major_versions_layout_is_refused_with_its_reason():
    """CHOLMOD 3's common is 2664 bytes, CHOLMOD 5's 2680 (with ``chunk`` at 2664): each
    library read with the other's layout fails a check instead of being used."""
    lib = cholmod.library()
    other = cholmod.LAYOUTS[5] if lib.layout.size == 2664 else cholmod.LAYOUTS[3]
    used, reason = cholmod.check_library(lib.cdll, lib.path, layout=other)
    assert used is None
    assert f"refused with the {other.name} layout" in reason
    assert ("chunk reads" in reason if other.size == 2680
            else "cholmod_start wrote up to byte 2679, past the 2664" in reason)


@needs_cholmod
@pytest.mark.parametrize("key, value", [("grow0", 1.3), ("postorder", 7), ("metis_nswitch", 9)])
def test_a_default_in_the_wrong_place_is_refused(key, value):
    """A layout whose offsets are off reads something else than cholmod_start's defaults."""
    lib = cholmod.library()
    off, ctype = lib.layout.offsets[key]
    wrong = cholmod.Layout("shifted", lib.layout.size, lib.layout.offsets,
                           {**lib.layout.defaults, key: value})
    used, reason = cholmod.check_library(lib.cdll, lib.path, layout=wrong)
    assert used is None and f"cholmod_common.{key} reads" in reason
    assert f"documented default is {value!r}" in reason


class _FakeLibrary:
    """Answers cholmod_version with a given version, nothing else."""

    def __init__(self, version):
        self.version = version

    def cholmod_version(self, out):
        out[0], out[1], out[2] = self.version
        return self.version[0] * 1000 + self.version[1]


@pytest.mark.parametrize("version", [(2, 1, 0), (6, 0, 0), (9, 9, 9)])
def test_an_unknown_major_version_is_refused_before_any_call(version):
    used, reason = cholmod.check_library(_FakeLibrary(version), "/x/libcholmod.so.9")
    assert used is None
    assert f"is CHOLMOD {'.'.join(map(str, version))}, whose structures segapp does not " \
           "know" in reason


def test_a_library_without_cholmod_version_is_refused():
    used, reason = cholmod.check_library(object(), "/x/libcholmod.so.1")
    assert used is None and "has no cholmod_version" in reason


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    for key in [k for k, v in env.items() if v is None]:
        full.pop(key, None)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("env, words", [
    ({"SEGAPP_CHOLMOD": "/nonexistent/libcholmod.so.5"}, "/nonexistent/libcholmod.so.5"),
    ({"SEGAPP_NO_CHOLMOD": "1"}, "SEGAPP_NO_CHOLMOD is set")])
def test_why_there_is_no_direct_solver_is_said(env, words):
    proc = run_python("from segapp.solve import cholmod; print(cholmod.available()); "
                      "print(cholmod.describe())", **env)
    out = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert out[0] == "False" and out[1].startswith("no CHOLMOD: ") and words in out[1]


def grid_lower(side: int) -> sp.csc_matrix:
    path = sp.diags([-np.ones(side - 1), 2.0 * np.ones(side), -np.ones(side - 1)], [-1, 0, 1])
    A = (sp.kronsum(path, path) + 1e-3 * sp.identity(side * side)).tocsc()
    lower = sp.tril(A, format="csc")
    lower.sort_indices()
    return lower


@needs_cholmod
def test_a_factorization_does_not_hold_the_gil():
    """Another Python thread keeps running while CHOLMOD factors (the app's window repaints).

    The other thread counts 1 ms sleeps; if the factorization held the GIL it would stop for
    the whole call. The longest pause must be a small part of the factorization's time.
    """
    from segapp.solve.ordering import grid_nested_dissection

    side = 500
    lower = grid_lower(side)
    f = cholmod.Factor(lower.indptr, lower.indices, grid_nested_dissection((side, side), 1))
    stop = threading.Event()
    ticks: list[float] = []

    def count() -> None:
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    th = threading.Thread(target=count)
    th.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    f.factorize(lower.data)
    t1 = time.perf_counter()
    stop.set()
    th.join()
    inside = [t for t in ticks if t0 <= t <= t1]
    gaps = np.diff([t0] + inside + [t1])
    assert t1 - t0 > 0.1, "the factorization is too fast to tell"
    assert len(inside) > 10 and gaps.max() < 0.25 * (t1 - t0), (len(inside), gaps.max(),
                                                                 t1 - t0)


@needs_cholmod
def test_a_factor_that_is_not_positive_definite_is_an_error():
    lower = grid_lower(8)
    f = cholmod.Factor(lower.indptr, lower.indices, np.arange(64))
    data = lower.data.copy()
    data[0] = -5.0
    with pytest.raises(SolverError, match="not positive definite"):
        f.factorize(data)


@needs_cholmod
def test_factors_of_one_library_serve_several_threads_at_once():
    """Each factor has its own cholmod_common: copies factor and solve concurrently."""
    lower = grid_lower(60)
    n = lower.shape[0]
    A = (lower + sp.tril(lower, -1).T).toarray()
    base = cholmod.Factor(lower.indptr, lower.indices, np.arange(n))
    b = np.arange(1.0, n + 1.0)
    want = np.linalg.solve(A, b)
    errors: list[float] = []

    def work() -> None:
        f = base.copy()
        for _ in range(5):
            f.factorize(lower.data)
            errors.append(float(np.abs(f.solve(b) - want).max()))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(errors) == 20 and max(errors) < 1e-10 * np.abs(want).max()


def test_library_objects_are_described_without_their_handle():
    lib = cholmod.Library("/x/libcholmod.so.3", (3, 0, 14), cholmod.LAYOUTS[3], "system",
                          ctypes.CDLL(None))
    assert lib.describe() == "CHOLMOD 3.0.14 (system: /x/libcholmod.so.3)"
    assert "cdll" not in repr(lib)


# -- OpenMP (module doc): CHOLMOD 3 and 4's fine-grained regions run on the calling thread ---

def test_only_cholmod_3_and_4_have_their_openmp_regions_serialised():
    assert cholmod._fine_grained_openmp((5, 3, 1)) == ()


@needs_cholmod
def test_a_serial_factorization_equals_the_librarys_own_to_the_bit():
    """The regions clear, zero and scatter: run by one thread they give the same numbers."""
    import dataclasses

    lib = cholmod.library()
    lower = grid_lower(40)
    n = lower.shape[0]
    b = np.arange(1.0, n + 1.0)
    out = []
    for openmp in (lib.openmp, ()):
        f = cholmod.Factor(lower.indptr, lower.indices, np.arange(n)[::-1].copy(),
                           lib=dataclasses.replace(lib, openmp=openmp))
        f.factorize(lower.data)
        out.append(f.solve(b))
    assert np.array_equal(out[0], out[1])


@needs_cholmod
def test_a_factorization_gives_the_thread_its_openmp_settings_back():
    """A caller's own OpenMP code after a ``segment`` call keeps its threads and dynamic."""
    lib = cholmod.library()
    if not lib.openmp:
        pytest.skip(f"{lib.describe()}: no OpenMP runtime to serialise")
    lower = grid_lower(12)
    seen = {}

    def work() -> None:          # in a thread of its own: the settings are per thread
        rt = lib.openmp[0]
        rt.omp_set_num_threads(3)
        rt.omp_set_dynamic(0)
        rt.omp_set_max_active_levels(2)
        f = cholmod.Factor(lower.indptr, lower.indices, np.arange(lower.shape[0]))
        inside = []
        f.factorize(lower.data)
        seen["after"] = (rt.omp_get_max_threads(), rt.omp_get_dynamic(),
                         rt.omp_get_max_active_levels())
        with cholmod._openmp_serial(lib.openmp):
            inside.append((rt.omp_get_max_threads(), rt.omp_get_dynamic(),
                           rt.omp_get_max_active_levels()))
        seen["inside"] = inside[0]

    th = threading.Thread(target=work)
    th.start()
    th.join()
    assert seen["after"] == (3, 0, 2)
    assert seen["inside"] == (1, 1, 0)


# -- BLAS (module doc): the kernels of this processor, threads of CHOLMOD's BLAS only ----------

@pytest.mark.parametrize("flags, vendor, core", [
    ({"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl"},
     "GenuineIntel", "SkylakeX"),
    ({"avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl"}, "AuthenticAMD",
     "SkylakeX"),
    ({"avx", "avx2", "fma", "avx512f"}, "GenuineIntel", "Haswell"),   # AVX-512 foundation only
    ({"avx", "avx2", "fma"}, "GenuineIntel", "Haswell"),
    ({"avx", "avx2", "fma"}, "AuthenticAMD", "Zen"),
    ({"avx", "avx2"}, "GenuineIntel", "SandyBridge"),                 # no FMA
    ({"sse4_2", "avx"}, "GenuineIntel", "SandyBridge"),
    ({"sse4_2", "sse3"}, "GenuineIntel", None),
    (set(), "", None),                                                 # not Linux
])
def test_the_openblas_kernels_follow_the_processors_instructions(flags, vendor, core):
    assert cholmod._openblas_coretype(flags, vendor) == core


def test_a_users_own_openblas_coretype_is_kept(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    with cholmod._blas_kernels():
        assert os.environ["OPENBLAS_CORETYPE"] == "Haswell"
    assert os.environ["OPENBLAS_CORETYPE"] == "Haswell"


def test_the_openblas_coretype_is_set_only_while_the_library_loads(monkeypatch):
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.setattr(cholmod, "_cpu_flags", lambda: ({"avx", "avx2", "fma"}, "GenuineIntel"))
    with cholmod._blas_kernels():
        assert os.environ["OPENBLAS_CORETYPE"] == "Haswell"
    assert "OPENBLAS_CORETYPE" not in os.environ


def _openblas_of_cholmod():
    lib = cholmod.library()
    own = cholmod._own_blas(lib) if lib is not None else None
    if own is None:
        pytest.skip(f"{cholmod.describe()}: its BLAS has no threads segapp can set")
    return own


@needs_cholmod
def test_cholmods_openblas_runs_the_kernels_this_processor_has():
    """Debian 12's OpenBLAS 0.3.21 does not know a Sapphire Rapids Xeon and fell back to its
    SSE3 kernels (a third more processor time per factorization); loaded through segapp it
    must not."""
    own = _openblas_of_cholmod()
    wanted = cholmod._openblas_coretype(*cholmod._cpu_flags())
    if wanted is None or os.environ.get("OPENBLAS_CORETYPE"):
        pytest.skip("no AVX on this processor, or the user chose the kernels")
    info = own.info()[0]
    if info.get("internal_api") != "openblas":
        pytest.skip(f"CHOLMOD's BLAS is {info.get('internal_api')}")
    assert info["architecture"].lower() not in ("prescott", "core2", "nehalem", "katmai")


@needs_cholmod
def test_cholmods_blas_threads_are_set_without_touching_numpys():
    from threadpoolctl import threadpool_info

    own = _openblas_of_cholmod()
    path = own.info()[0]["filepath"]

    def threads() -> dict[str, int]:
        return {i["filepath"]: i["num_threads"] for i in threadpool_info()
                if i["user_api"] == "blas"}

    before = threads()
    others = {p: n for p, n in before.items() if p != path}
    assert others, "NumPy's BLAS should be another library than CHOLMOD's"
    with cholmod.blas_threads(1):
        assert threads()[path] == 1
        assert {p: n for p, n in threads().items() if p != path} == others
        cholmod.set_blas_threads(2)
        assert threads()[path] == 2
    assert threads() == before


def test_one_blas_thread_sets_every_blas_and_gives_them_back():
    from threadpoolctl import threadpool_info

    from segapp.blas import one_blas_thread

    before = {i["filepath"]: i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    with one_blas_thread():
        inside = {i["filepath"]: i["num_threads"] for i in threadpool_info()
                  if i["user_api"] == "blas"}
    assert set(inside) == set(before) and set(inside.values()) == {1}
    assert {i["filepath"]: i["num_threads"] for i in threadpool_info()
            if i["user_api"] == "blas"} == before


def test_the_wheels_cholmod_calls_the_wheels_openblas_not_its_atlas():
    """CVXOPT's wheel links its CHOLMOD with a generic ATLAS; segapp opens the wheel's own
    OpenBLAS first, so the dynamic linker binds CHOLMOD's BLAS and LAPACK calls there (read
    from the linker's own account, ``LD_DEBUG=bindings``, in a child that factors a matrix)."""
    import importlib.util

    if importlib.util.find_spec("cvxopt") is None:
        pytest.skip("CVXOPT (pip install 'segapp[fast]') is not installed")
    code = ("import numpy as np, scipy.sparse as sp; from segapp.solve import cholmod; "
            "A = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(400, 400)) "
            "+ sp.diags([-1.0, -1.0], [-20, 20], shape=(400, 400)); "
            "L = sp.csc_matrix(sp.tril(A)); f = cholmod.Factor(L.indptr, L.indices, None); "
            "f.factorize(L.data); print(cholmod.library().source)")
    env = {**os.environ, "SEGAPP_CHOLMOD": "pip", "LD_DEBUG": "bindings"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "pip" in out.stdout, out.stderr[-2000:]
    bound = [line for line in out.stderr.splitlines()
             if "libcholmod" in line.split(" to ")[0] and "normal symbol" in line
             and any(f"`{name}'" in line for name in ("dgemm_", "dsyrk_", "dtrsm_", "dpotrf_"))]
    assert bound, "CHOLMOD called no BLAS"
    assert all("libopenblas" in line for line in bound), bound
