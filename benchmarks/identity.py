"""Labels and eigenvalues of every method on every bundled sample, saved or compared.

A restructuring must not change an answer: run ``--save`` before it and ``--compare`` after.

    python benchmarks/identity.py --save /tmp/before.npz
    python benchmarks/identity.py --compare /tmp/before.npz

Prints one row per (sample, method): the pixels whose label differs and the largest
eigenvalue difference (relative), with the seconds each run took.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import segapp
from segapp.io import read_image, read_scribbles
from segapp.samples import list_samples, sample_path, sample_scribbles_path


def _answers(methods: list[str], samples: list[str]):
    for name in samples:
        image = read_image(sample_path(name))
        scribbles = read_scribbles(sample_scribbles_path(name), shape=image.shape[:2])
        for method in methods:
            start = time.perf_counter()
            result = segapp.segment(image, scribbles, method=method)
            seconds = time.perf_counter() - start
            values = np.asarray(result.eigenvalues, dtype=float)
            yield f"{name}/{method}", np.asarray(result.labels), values, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", metavar="NPZ")
    what.add_argument("--compare", metavar="NPZ")
    parser.add_argument("--methods", nargs="*", default=[m for m, _ in segapp.available_methods()])
    parser.add_argument("--samples", nargs="*", default=list_samples())
    args = parser.parse_args(argv)
    saved = dict(np.load(args.compare)) if args.compare else {}
    store: dict[str, np.ndarray] = {}
    changed = 0
    print(f"{'sample/method':24} {'seconds':>8} {'labels differ':>14} {'max rel. eigenvalue diff':>25}")
    for key, labels, values, seconds in _answers(args.methods, args.samples):
        store[key + ":labels"], store[key + ":eigenvalues"] = labels, values
        if args.compare:
            before_l, before_v = saved[key + ":labels"], saved[key + ":eigenvalues"]
            differ = int(np.count_nonzero(before_l != labels)) if before_l.shape == labels.shape \
                else labels.size
            if before_v.shape == values.shape and values.size:
                scale = np.maximum(np.abs(before_v), 1e-300)
                dv = f"{float(np.max(np.abs(before_v - values) / scale)):.1e}"
            else:
                dv = "same (none)" if before_v.size == values.size == 0 else "SHAPE"
            changed += differ > 0 or dv == "SHAPE"
            print(f"{key:24} {seconds:8.2f} {differ:14d} {dv:>25}", flush=True)
        else:
            print(f"{key:24} {seconds:8.2f} {'-':>14} {'-':>25}", flush=True)
    if args.save:
        np.savez_compressed(args.save, **store)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
