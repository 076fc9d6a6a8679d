"""Issue 28 item 3, never silently slow: every result names its linear solver and, on the
iterative path, the real reason the direct one did not run; one warning says how to fix it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import segapp
from segapp.cli import main
from segapp.solve import cholmod, direct

REPO = Path(__file__).resolve().parents[2]


def scene() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    img = np.clip(np.where(np.arange(50) < 25, 0.2, 0.7)[None, :] + rng.normal(0, 0.05, (40, 50)),
                  0, 1)
    s = np.zeros((40, 50), int)
    s[5:35, 5] = 1
    s[5:35, 45] = 2
    return img, s


def test_a_result_names_its_linear_solver():
    img, s = scene()
    r = segapp.segment(img, s)
    d = r.diagnostics
    if direct.available():
        assert d.linear_solver == f"direct, {cholmod.describe()}" and not d.direct_unavailable
        assert "linear solver: direct, CHOLMOD" in repr(r)
    else:
        assert d.linear_solver.startswith("iterative") and "no usable CHOLMOD" in \
            d.direct_unavailable


@pytest.mark.parametrize("options, why", [
    ({"linear_solver": "iterative"}, "linear_solver='iterative' was asked")])
def test_the_iterative_path_says_why(options, why):
    img, s = scene()
    d = segapp.segment(img, s, **options).diagnostics
    assert d.linear_solver == "iterative, AMG-preconditioned CG" and d.direct_unavailable == why
    assert f"not direct: {why}" in repr(d) and f"not direct: {why}" in d.solver_summary()


def test_a_graph_without_a_grid_says_so():
    import scipy.sparse as sp
    W = sp.diags(np.ones(59), 1) + sp.diags(np.ones(59), -1)
    labels = np.zeros(60, dtype=int)
    labels[:3], labels[-3:] = 1, 2
    d = segapp.cluster(labels, graph=W).diagnostics
    assert d.linear_solver.startswith("iterative") and d.direct_unavailable == "not an image graph"


def test_lobpcg_has_no_linear_solver_line():
    img, s = scene()
    d = segapp.segment(img, s, eigensolver="lobpcg").diagnostics
    assert d.linear_solver == "" and "linear solver" not in repr(d)


SCRIPT = """
import warnings, numpy as np, segapp
warnings.simplefilter("always")
rng = np.random.default_rng(0)
img = rng.random((40, 50)); s = np.zeros((40, 50), int); s[5, 5:20] = 1; s[30, 5:20] = 2
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    a = segapp.segment(img, s)
    sess = segapp.Session(img); sess.update(s); sess.update(s)
print(len([w for w in caught if w.category.__name__ == "SlowSolverWarning"]))
print([str(w.message) for w in caught if w.category.__name__ == "SlowSolverWarning"][:1])
print(a.diagnostics.direct_unavailable)
"""


def test_without_a_library_one_warning_says_why_and_how_to_fix_it():
    env = {**os.environ, "SEGAPP_CHOLMOD": "/nonexistent/libcholmod.so.5",
           "PYTHONPATH": str(REPO)}
    env.pop("SEGAPP_NO_CHOLMOD", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    count, message, reason = proc.stdout.splitlines()
    assert count == "1"                                     # once per process
    assert "/nonexistent/libcholmod.so.5" in message and cholmod.INSTALL_HINT in message
    assert reason.startswith("no usable CHOLMOD: /nonexistent/libcholmod.so.5")


def test_cli_verbose_prints_the_linear_solver(tmp_path, capsys):
    from PIL import Image
    img, s = scene()
    Image.fromarray((img * 255).astype(np.uint8)).save(tmp_path / "a.png")
    Image.fromarray(s.astype(np.uint8)).save(tmp_path / "s.png")
    args = ["segment", str(tmp_path / "a.png"), "-s", str(tmp_path / "s.png"), "-o",
            str(tmp_path / "o.png")]
    assert main(args + ["--verbose"]) == 0
    out = capsys.readouterr().out
    assert f"direct solver on this machine: {cholmod.describe()}" in out
    assert "  linear solver: " in out
    assert main(args + ["--verbose", "--linear-solver", "iterative"]) == 0
    out = capsys.readouterr().out
    assert ("linear solver: iterative, AMG-preconditioned CG (not direct: "
            "linear_solver='iterative' was asked)") in out
