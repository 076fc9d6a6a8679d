"""The image's numeric factorization per CHOLMOD library, its OpenMP regions serialised or not.

An image's first answer on the direct path waits for one numeric factorization of its
Dirichlet matrix (:mod:`segapp.solve.direct`). This script times that factorization on the
``coffee`` sample's graph (resized, 8 neighbours, the default options; the analysis made
first, as the app makes it ahead), for every CHOLMOD named (``--cholmod``: ``system``,
``pip`` or a path; each in a process of its own, since a process loads one library), on one
and two BLAS threads, two ways:

* **serial** — as segapp factors: CHOLMOD 3 and 4's OpenMP regions on the calling thread
  (:mod:`segapp.solve.cholmod`, *OpenMP*);
* **library** — the library's own OpenMP regions (``Library.openmp`` emptied).

Beside each: the process's processor seconds (a team spinning on the other core shows here)
and, once per size, scikit-image's ``random_walker(mode='cg_mg')`` on the same image and
strokes, so that each time is also a ratio to it. The two ways are interleaved in each
repeat; the best of ``--repeat`` is printed (and the median). The solutions of the two ways
are compared bit for bit.

Run: ``python benchmarks/factor.py`` (250K and 1.1M px; a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

SIZES = {"250K": 250_000, "0.5M": 500_000, "1.1M": 1_100_000}


def measure(size: str, repeat: int) -> list[dict]:
    """The rows of one library (the one this process loaded) at one size."""
    from threadpoolctl import threadpool_limits

    from segapp import io, methods, samples
    from segapp.solve import cholmod, direct
    from segapp.solve.ordering import offsets_reach
    from speed import random_walker, resized

    lib = cholmod.library()
    if lib is None:
        raise SystemExit(f"no CHOLMOD: {cholmod.unavailable_reason()}")
    image = io.read_image(samples.sample_path("coffee"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    scribbles[scribbles > 4] = 0
    img, s = resized(image, scribbles, SIZES[size])
    fastge = methods.get("fastge")
    g = fastge.from_settings(img, fastge.resolve({})).graph
    analysis = direct.GridAnalysis(g.laplacian, g.shape, offsets_reach(g.offsets))
    fixed = s.ravel() > 0
    ways = ({"serial": lib, "library": dataclasses.replace(lib, openmp=())} if lib.openmp
            else {"library": lib})        # CHOLMOD 5: segapp runs its regions as they are
    times: dict[tuple[str, int], list[tuple[float, float]]] = {}
    solutions = {}
    data = analysis.values(g.laplacian)
    r, c = analysis.rows, analysis.cols
    data = data * ((r == c) | ~(fixed[r] | fixed[c]))
    b = np.ones(fixed.size)
    for _ in range(repeat):
        for threads in (1, 2):
            for way, used in ways.items():
                f = analysis.symbolic.copy()
                f.library = used
                with threadpool_limits(limits=threads, user_api="blas"):
                    c0, t0 = time.process_time(), time.perf_counter()
                    f.factorize(data)
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                times.setdefault((way, threads), []).append((wall, cpu))
                solutions.setdefault(way, f.solve(b))
    t0 = time.perf_counter()
    random_walker(img, s)
    rw = time.perf_counter() - t0
    same = bool(np.array_equal(*solutions.values())) if len(solutions) == 2 else None
    rows = []
    for (way, threads), v in times.items():
        v = np.array(v)
        rows.append(dict(size=size, n=int(fixed.size), library=lib.describe(), way=way,
                         threads=threads, best=float(v[:, 0].min()),
                         median=float(np.median(v[:, 0])), cpu=float(np.median(v[:, 1])),
                         rw=rw, same=same, openmp=len(lib.openmp),
                         load=os.getloadavg()[0]))
    return rows


def table(rows: list[dict]) -> str:
    out = ["| size | library | OpenMP regions | BLAS threads | factorization best (median) | "
           "CPU | / random_walker |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lib = r["library"].split(" (")[0]
        way = ("serialised (as segapp runs it)" if r["way"] == "serial" else
               "the library's own" + ("" if r["openmp"] else " (as segapp runs it)"))
        out.append(f"| {r['size']} | {lib} | {way} | {r['threads']} | {r['best']:.3f} "
                   f"({r['median']:.3f}) | {r['cpu']:.3f} | {r['best'] / r['rw']:.2f}× |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["250K", "1.1M"], choices=list(SIZES))
    p.add_argument("--repeat", type=int, default=3, help="best of N (interleaved)")
    p.add_argument("--cholmod", nargs="+", default=["system"], metavar="LIB",
                   help="system, pip or a path to a libcholmod (each in its own process)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        rows = [r for size in a.sizes for r in measure(size, a.repeat)]
        print("ROWS " + json.dumps(rows))
        return 0
    rows = []
    for spec in a.cholmod:
        env = dict(os.environ, SEGAPP_CHOLMOD=spec)
        out = subprocess.run([sys.executable, __file__, "--child", "--sizes", *a.sizes,
                              "--repeat", str(a.repeat)], env=env, capture_output=True,
                             text=True)
        line = next((x for x in out.stdout.splitlines() if x.startswith("ROWS ")), None)
        if line is None:
            print(f"{spec}: {out.stderr.strip().splitlines()[-1] if out.stderr else 'failed'}")
            continue
        rows += json.loads(line[5:])
    if rows:
        print(f"coffee resized, 8 neighbours; seconds, best of {a.repeat} (median); CPU: the "
              f"process's processor seconds (median); load {rows[0]['load']:.1f} → "
              f"{rows[-1]['load']:.1f}")
        print(table(rows))
        print("solutions of the two ways equal to the bit: "
              + ", ".join(f"{r['size']} {r['library'].split(' (')[0]}: {r['same']}"
                          for r in rows if r["way"] == "serial" and r["threads"] == 1)
              + " (CHOLMOD 5: one way only)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
