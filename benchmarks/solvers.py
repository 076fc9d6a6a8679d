"""Eigensolver variants for FAST-GE's pencil, side by side with random_walker, same run.

Issue 15 asks which design solves ``L_G x = λ L_H x`` fastest at the app's sizes. This script
times the variants selectable through FAST-GE's ``eigensolver`` option on the same image,
scribbles and AMG hierarchy, and reports for each: seconds (eigensolver stage only and whole
cold segment), iterations, and the share of labels equal to a tightly converged reference
(LOBPCG with ``eig_tol=1e-9``), with ``skimage.segmentation.random_walker(mode='cg_mg')`` timed in the same
run. Variants:

* ``harmonic`` — the strokes' harmonic potentials by block CG on the image Laplacian with
  Dirichlet stroke rows, then Rayleigh–Ritz of the pencil (segapp/solve/harmonic.py; the default);
* ``lobpcg`` — block LOBPCG (segapp/solve/lobpcg.py), one AMG V-cycle per iteration;
* ``scipy`` — :func:`scipy.sparse.linalg.lobpcg` on the same pencil, start block and V-cycle
  (absolute residual tolerance), for comparison: :func:`scipy_lobpcg` (it left segapp's
  ``eigensolver`` option, where nothing but this comparison used it; issue 24).

Run ``python benchmarks/solvers.py`` (44K and 250K px, 4 labels); ``--sizes 44K`` for a quick
look. Absolute times on a shared machine are noisy: compare ratios of one run.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import segapp  # noqa: E402
from segapp import io, samples  # noqa: E402
from segapp.graphs import image_graph  # noqa: E402
from segapp.solve.amg import AMGPreconditioner, amg_preconditioner  # noqa: E402
from segapp.solve.diagnostics import SolverDiagnostics  # noqa: E402
from segapp.solve.pencil import Pencil  # noqa: E402
from segapp.strokes.constraints import build_constraints, sparsify, stroke_indicators  # noqa: E402
from speed import SIZES, random_walker, resized  # noqa: E402

VARIANTS = ("harmonic", "lobpcg")


def scipy_lobpcg(pencil: Pencil, X0: np.ndarray, M: AMGPreconditioner, nev: int, *,
                 maxiter: int = 300, res_tol: float = 1e-6
                 ) -> tuple[np.ndarray, np.ndarray, SolverDiagnostics]:
    """scipy's LOBPCG on ``pencil`` on ``dᵀx = 0`` (constraint ``Y = 1``), preconditioned by
    ``M``, from the first ``nev`` columns of ``X0`` (absolute residual tolerance)."""
    from scipy.sparse.linalg import LinearOperator
    from scipy.sparse.linalg import lobpcg as scipy_lobpcg_
    n = pencil.n
    op = lambda f: LinearOperator((n, n), matvec=f, matmat=f, dtype=float)  # noqa: E731
    X0 = pencil.project(X0)[:, :nev]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lam, X, hist = scipy_lobpcg_(op(pencil.A), X0, B=op(pencil.B), M=op(M),
                                     Y=np.ones((n, 1)), tol=res_tol, maxiter=maxiter,
                                     largest=False, retResidualNormsHistory=True)
    residuals = np.asarray(hist[-1])
    converged = bool(np.max(residuals) <= res_tol)
    diag = SolverDiagnostics(iterations=len(hist) - 1, eigenvalues=lam, residuals=residuals,
                             converged=converged,
                             reason="scipy lobpcg (absolute residual tolerance)"
                             + ("" if converged else ", iteration cap"))
    return lam, X, diag


def scipy_fastge(img: np.ndarray, scribbles: np.ndarray) -> tuple[float, int, np.ndarray]:
    """FAST-GE's k − 1 pairs by scipy's LOBPCG from LOBPCG's start (the strokes' sources):
    seconds, iterations, and the labels (FAST-GE's rounding)."""
    from segapp.partition import round_eigenvectors
    g = image_graph(img)
    cons = build_constraints(scribbles, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    t = time.perf_counter()
    M = amg_preconditioner(g.laplacian, g.degrees, must_link=sparsify(cons, g.n))
    X0 = M(stroke_indicators(g.degrees, cons.sets))
    _, X, diag = scipy_lobpcg(pencil, X0, M, cons.k - 1)
    seconds = time.perf_counter() - t
    labels = round_eigenvectors(X, pencil, cons)[0]
    return seconds, diag.iterations, labels.reshape(g.shape)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["44K", "250K"], choices=list(SIZES))
    p.add_argument("--labels", type=int, default=4, choices=[2, 3, 4, 5])
    a = p.parse_args(argv)
    image = io.read_image(samples.sample_path("coffee"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    scribbles[scribbles > a.labels] = 0
    random_walker(*resized(image, scribbles, 2_000))   # imports and caches out of the timings
    head = (f"{'size':>5} {'variant':>10} | {'eig s':>6} {'its':>4} {'cold s':>6} "
            f"{'agree':>8} | {'rw s':>6} {'cold/rw':>7}")
    print(head + "\n" + "-" * len(head))
    for size in a.sizes:
        img, s = resized(image, scribbles, SIZES[size])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = segapp.segment(img, s, max_pixels=None, eigensolver="lobpcg", eig_tol=1e-9,
                                 maxiter=1000, on_nonconvergence="warn").labels
        t = time.perf_counter()
        random_walker(img, s)
        rw = time.perf_counter() - t
        for v in VARIANTS:
            t = time.perf_counter()
            r = segapp.segment(img, s, max_pixels=None, eigensolver=v)
            cold = time.perf_counter() - t
            print(f"{size:>5} {v:>10} | {r.timings['eigensolver']:6.2f} "
                  f"{r.diagnostics.iterations:>4} {cold:6.2f} {np.mean(r.labels == ref):8.3%} | "
                  f"{rw:6.2f} {cold / rw:6.2f}x", flush=True)
        seconds, iterations, labels = scipy_fastge(img, s)
        print(f"{size:>5} {'scipy':>10} | {seconds:6.2f} {iterations:>4} {'':>6} "
              f"{np.mean(labels == ref):8.3%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
