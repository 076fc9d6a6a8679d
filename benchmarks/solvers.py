"""Eigensolver variants for FAST-GE's pencil, side by side with random_walker, same run.

Issue 15 asks which design solves ``L_G x = λ L_H x`` fastest at the app's sizes. This script
times the variants selectable through FAST-GE's ``eigensolver`` option on the same image,
scribbles and AMG hierarchy, and reports for each: seconds (eigensolver stage only and whole
cold segment), iterations, and the share of labels equal to a tightly converged reference
(LOBPCG with ``eig_tol=1e-9``), with ``skimage.segmentation.random_walker(mode='cg_mg')`` timed in the same
run. Variants:

* ``harmonic`` — the strokes' harmonic potentials by block CG on the image Laplacian with
  Dirichlet stroke rows, then Rayleigh–Ritz of the pencil (segapp/solve/harmonic.py; the default);
* ``segapp`` — block LOBPCG (segapp/solve/lobpcg.py), one AMG V-cycle per iteration.

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
from speed import SIZES, random_walker, resized  # noqa: E402

VARIANTS = ("harmonic", "segapp")


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
            ref = segapp.segment(img, s, max_pixels=None, eigensolver="segapp", eig_tol=1e-9,
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
