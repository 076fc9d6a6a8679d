"""The normalized-cut baseline (``segapp/methods/ncut.py``), which composes the eigensolver
entry: only the options it uses, FAST-GE's refused, convergence checked. (Its clustering and
label naming: ``tests/methods/test_fastge.py``, beside FAST-GE's.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import segapp
from segapp.errors import InvalidInputError, SolverError
from segapp.methods import options_of
from scenes import two_regions  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.usefixtures("one_blas_thread")

FASTGE_ONLY = sorted({o.name for o in options_of("fastge")} - {o.name for o in options_of("ncut")})


def test_ncut_declares_only_what_it_uses():
    assert {"constraint_weight", "warm_start", "eigensolver", "k2_partition"} <= set(FASTGE_ONLY)


@pytest.mark.parametrize("name", FASTGE_ONLY)
def test_ncut_rejects_fastge_options(name):
    default = next(o.default for o in options_of("fastge") if o.name == name)
    img = two_regions()
    with pytest.raises(InvalidInputError, match=name):
        segapp.Session(img, method="ncut", **{name: default})
    s = np.zeros(img.shape[:2], int)
    s[3, 2:6], s[20, 20:26] = 1, 2
    with pytest.raises(InvalidInputError, match=name):
        segapp.Session(img, method="ncut").update(s, **{name: default})


def test_ncut_checks_convergence():
    img = two_regions()
    s = np.zeros(img.shape[:2], int)
    s[3, 2:6], s[20, 20:26], s[3, 20:26] = 1, 2, 3
    tight = dict(maxiter=1, eig_tol=1e-12, res_tol=1e-12)
    with pytest.raises(SolverError, match="did not converge"):
        segapp.segment(img, s, method="ncut", **tight)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = segapp.segment(img, s, method="ncut", on_nonconvergence="warn", **tight)
    assert any("did not converge" in str(w.message) for w in caught)
    assert not res.diagnostics.converged
    assert segapp.segment(img, s, method="ncut").diagnostics.converged


