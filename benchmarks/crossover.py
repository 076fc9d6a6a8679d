"""Where a low-rank update of the base factor stops paying: update vs numeric refactor.

On the ``coffee`` photo resized to 250K, 0.5M and 1.1M px (its scribbles as the base strokes),
one :class:`segapp.solve.direct.DirichletFactor` is factored once; then edits of growing size are
solved (3 right-hand sides, as for 4 labels) both ways, interleaved:

* **update**: :meth:`DirichletFactor.solve` from the base factor (the bordered low-rank
  update of :mod:`segapp.solve.direct`), forced even past the crossover the code uses;
* **refactor**: a numeric factorization for the edited strokes, then a solve.

Edits: ``paint`` a 3-px-wide horizontal stroke of growing length (only its boundary is
pinned, so its cost grows with the perimeter); ``erase`` that many painted pixels of the
sample's strokes; ``scatter`` single pixels spread over the image (every one on a boundary:
the worst case for an update). The table gives both times and which wins; ``rank`` is the
update's border size (pinned + unpainted pixels), against ``max_rank`` (the code's crossover, ``2√n``).

Run ``python benchmarks/crossover.py`` (about 2 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.speed import SIZES, resized  # noqa: E402
from segapp import io, samples  # noqa: E402
from segapp.solve import direct
from segapp.solve.direct import DirichletFactor, _Update  # noqa: E402
from segapp.graphs.image import image_graph  # noqa: E402


def edits(s: np.ndarray, rng: np.random.Generator) -> list[tuple[str, int, np.ndarray]]:
    H, W = s.shape
    base = s.ravel() > 0
    out = []
    for length in (10, 40, 160, 400, 800):
        new = base.reshape(H, W).copy()
        y = H // 2
        x0 = max(0, W // 2 - length // 2)
        rows = [(y + dy) % H for dy in (0, 1, 2)]
        for r in rows:
            new[r, x0:x0 + length] = True
        out.append(("paint", int((new.ravel() != base).sum()), new.ravel()))
    painted = np.flatnonzero(base)
    for m in (30, 120, 480, 1200):
        new = base.copy()
        new[painted[:min(m, painted.size)]] = False
        out.append(("erase", int((new != base).sum()), new))
    for m in (30, 120, 480):
        new = base.copy()
        new[rng.choice(np.flatnonzero(~base), m, replace=False)] = True
        out.append(("scatter", m, new))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["250K", "0.5M", "1.1M"], choices=list(SIZES))
    p.add_argument("--repeat", type=int, default=2)
    a = p.parse_args(argv)
    image = io.read_image(samples.sample_path("coffee"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    print(f"{'size':>5} {'edit':>7} {'pixels':>6} {'rank':>5} {'max':>5} | {'update':>7} "
          f"{'refactor':>8} | winner")
    for size in a.sizes:
        img, s = resized(image, scribbles, SIZES[size])
        g = image_graph(img)
        d = DirichletFactor(g.laplacian, g.shape)
        base = s.ravel() > 0
        rng = np.random.default_rng(0)
        b = rng.normal(size=(g.n, 3))
        with threadpool_limits(limits=1, user_api="blas"):
            d.factor(base)
            t_factor = d.timings["factor"]
            for kind, m, new in edits(s, rng):
                bb = b.copy()
                bb[new] = 0.0
                code_updates = d.can_update(new)
                saved = d.max_rank, d.max_border
                d.max_rank, d.max_border = 10**9, 10**9
                up = _Update.of(d, new, d.changed(new))
                d.max_rank, d.max_border = saved
                rank = up.m + up.R.size
                upd, ref = [], []
                for _ in range(a.repeat):
                    saved = d.max_rank, d.max_border, direct.REACH_BYTES_PER_PIXEL
                    d.max_rank, d.max_border, direct.REACH_BYTES_PER_PIXEL = 10**9, 10**9, 10**6
                    try:
                        t = time.perf_counter()
                        d.solve(new, bb)
                        upd.append(time.perf_counter() - t)
                    finally:
                        d.max_rank, d.max_border, direct.REACH_BYTES_PER_PIXEL = saved
                    t = time.perf_counter()
                    d.factor(new)
                    d.solve(new, bb)
                    ref.append(time.perf_counter() - t)
                    d.factor(base)
                u, r = min(upd), min(ref)
                print(f"{size:>5} {kind:>7} {m:>6} {rank:>5} {d.max_rank:>5} | {u:7.3f} {r:8.3f} | "
                      f"{'update' if u < r else 'refactor':8} (the code: "
                      f"{'update' if code_updates else 'refactor'})",
                      flush=True)
        print(f"{size:>5} factor {t_factor:.3f} s, {d.nbytes / g.n:.0f} B/px")
    return 0


if __name__ == "__main__":
    sys.exit(main())
