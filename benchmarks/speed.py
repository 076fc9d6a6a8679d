"""Speed benchmark: FAST-GE per stage against scikit-image's random_walker, same input, same run.

One bundled photo (``coffee``, 600×400) is resized to about 44K, 250K and 1.1M pixels — the
sizes of the FAST-GE paper's Patras, Santorini and Soccer images (§7.3) — with its scribbles
resized by nearest neighbour; the 4-label case drops the sample's fifth label. For each size and
label count it reports

* FAST-GE cold (``segapp.segment``): graph, constraints, AMG set-up, eigensolver (the
  harmonic potentials' CG steps, or LOBPCG iterations), embedding + k-means, total — best of
  ``--repeat`` runs;
* the warm re-solve of a :class:`segapp.Session` after one added stroke (what the app does
  on every edit: the hierarchy of the previous edit, Galerkin-updated);
* peak traced memory of one cold run (``tracemalloc``: NumPy/SciPy buffers; bytes per pixel);
* ``skimage.segmentation.random_walker(mode='cg_mg')`` on the identical image and scribbles
  (default beta, colour), best of ``--repeat``, and the ratio FAST-GE cold / random_walker;
  random_walker again after the added stroke (its "warm" path: it has none, it solves again)
  and the ratio FAST-GE warm / that;
* time to the first result on a 12 MP photo as the app gets it: ``Session`` with its default
  working resolution, ``update(..., preview=...)`` — when the preview arrives and when the
  full result does (random_walker at the same working resolution beside it).

All at full resolution (``max_pixels=None``: the session's working-resolution cap, which the
app uses for photos above 0.5 MP, is off). Run ``python benchmarks/speed.py`` (about 2 minutes on 2 cores); ``--quick`` for 44K only.
Absolute times on a shared machine are noisy: compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import segapp  # noqa: E402
from segapp import io, samples  # noqa: E402

SIZES = {"44K": 44_000, "250K": 250_000, "1.1M": 1_100_000}


def resized(image: np.ndarray, scribbles: np.ndarray, pixels: int) -> tuple[np.ndarray, np.ndarray]:
    from skimage.transform import resize
    H, W = scribbles.shape
    f = np.sqrt(pixels / (H * W))
    shape = (max(2, round(H * f)), max(2, round(W * f)))
    img = np.clip(resize(image, shape + image.shape[2:], anti_aliasing=f < 1), 0, 1)
    s = resize(scribbles, shape, order=0, preserve_range=True, anti_aliasing=False)
    return img.astype(np.float32), s.astype(np.int32)


def extra_stroke(scribbles: np.ndarray) -> np.ndarray:
    """The scribbles plus one short horizontal stroke of label 1, away from the first stroke."""
    s = scribbles.copy()
    H, W = s.shape
    ys, xs = np.nonzero(s == 1)
    y = int(np.clip(ys.mean() + 0.1 * H, 2, H - 3)) if ys.size else H // 2
    x0 = int(np.clip(xs.mean() - 0.05 * W, 0, W - 1)) if xs.size else W // 3
    x1 = int(min(W, x0 + max(4, W // 15)))
    s[y - 1:y + 2, x0:x1] = np.where(s[y - 1:y + 2, x0:x1] == 0, 1, s[y - 1:y + 2, x0:x1])
    return s


def best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def random_walker(image: np.ndarray, scribbles: np.ndarray) -> np.ndarray:
    from skimage.segmentation import random_walker as rw
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rw(image, scribbles, mode="cg_mg", channel_axis=-1)


def run(size: str, k: int, image: np.ndarray, scribbles: np.ndarray, repeat: int,
        memory: bool, peer: bool) -> dict:
    s = scribbles.copy()
    s[s > k] = 0
    img, s = resized(image, s, SIZES[size])
    n = s.size
    cold, res = best(lambda: segapp.segment(img, s, max_pixels=None), repeat)
    sess = segapp.Session(img, max_pixels=None)
    sess.update(s)
    s2 = extra_stroke(s)
    warm_times = []
    for _ in range(repeat):
        t = time.perf_counter()
        warm = sess.update(s2)
        warm_times.append(time.perf_counter() - t)
        sess.update(s)  # back, so every repeat adds the same stroke
    cold2 = segapp.segment(img, s2, max_pixels=None)
    agree = float(np.mean(cold2.labels == warm.labels))
    row = dict(size=size, n=n, k=k, cold=cold, warm=min(warm_times),
               warm_iters=warm.diagnostics.iterations, warm_agree=agree,
               iters=res.diagnostics.iterations, **{f"t_{a}": b for a, b in res.timings.items()})
    if memory:
        row["peak"] = peak_bytes(lambda: segapp.segment(img, s, max_pixels=None))
    if peer:
        row["rw"], rw_labels = best(lambda: random_walker(img, s), repeat)
        row["rw_agree"] = float(np.mean(rw_labels == res.labels))
        # random_walker has no warm path: after a stroke it solves again from scratch.
        row["rw_warm"], _ = best(lambda: random_walker(img, s2), repeat)
    return row


def first_result(image: np.ndarray, scribbles: np.ndarray, pixels: int, peer: bool) -> dict:
    """Time to the first (preview) and the full result of a Session on a big photo.

    As the app does: ``Session(image)`` with its default working resolution, then
    ``update(scribbles, preview=...)``; times from the ``update`` call (the session's build,
    once per image, is reported apart). random_walker's first result is its whole solve, at the
    same working resolution (at 12 MP itself it needs minutes and gigabytes).
    """
    from segapp.resolution import reduce_image, reduce_map
    img, s = resized(image, scribbles, pixels)
    t = time.perf_counter()
    sess = segapp.Session(img)
    build = time.perf_counter() - t
    got: dict = {}
    t = time.perf_counter()
    full = sess.update(s, preview=lambda r: got.setdefault("t", time.perf_counter() - t))
    row = dict(n=s.size, build=build, preview=got.get("t", float("nan")),
               full=time.perf_counter() - t, working=int(np.prod(sess.working_shape)),
               iters=full.diagnostics.iterations)
    if peer:
        small = reduce_image(img, sess.working_shape)
        row["rw"], _ = best(lambda: random_walker(small, reduce_map(s, sess.working_shape)), 1)
    return row


def table(rows: list[dict]) -> str:
    head = (f"{'size':>5} {'pixels':>8} {'k':>2} | {'graph':>6} {'constr':>6} {'amg':>6} "
            f"{'eig':>6} {'it':>3} {'kmeans':>6} {'cold':>6} | {'warm':>6} {'it':>3} "
            f"{'agree':>6} | {'B/px':>5} | {'rw':>6} {'ratio':>6} {'vs rw':>6} | "
            f"{'rw wm':>6} {'ratio':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        rw = r.get("rw")
        lines.append(
            f"{r['size']:>5} {r['n']:>8} {r['k']:>2} | {r['t_graph']:6.3f} "
            f"{r['t_constraints']:6.3f} {r['t_amg_setup']:6.3f} {r['t_eigensolver']:6.3f} "
            f"{r['iters']:>3} {r['t_partition']:6.3f} {r['cold']:6.3f} | {r['warm']:6.3f} "
            f"{r['warm_iters']:>3} {r['warm_agree']:6.1%} | "
            f"{(r['peak'] / r['n'] if 'peak' in r else float('nan')):5.0f} | "
            + (f"{rw:6.3f} {r['cold'] / rw:5.2f}x {r['rw_agree']:6.1%} | "
               f"{r['rw_warm']:6.3f} {r['warm'] / r['rw_warm']:5.2f}x" if rw else f"{'-':>6}"))
    return "\n".join(lines)


def first_result_table(r: dict) -> str:
    rw = (f"; random_walker at the same working resolution {r['rw']:.2f} s "
          f"(preview / rw = {r['preview'] / r['rw']:.2f}x)" if "rw" in r else "")
    return (f"first result on {r['n'] / 1e6:.0f} MP (working resolution {r['working']} px): "
            f"preview after {r['preview']:.2f} s, full result after {r['full']:.2f} s "
            f"({r['iters']} it); session build {r['build']:.2f} s{rw}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    p.add_argument("--labels", nargs="+", type=int, default=[4, 5], choices=[2, 3, 4, 5])
    p.add_argument("--repeat", type=int, default=2, help="best of N timed runs")
    p.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run")
    p.add_argument("--no-peer", action="store_true", help="skip random_walker")
    p.add_argument("--no-first-result", action="store_true",
                   help="skip the time-to-first-result row on a 12 MP photo")
    p.add_argument("--quick", action="store_true", help="44K px, 4 labels, one run")
    a = p.parse_args(argv)
    if a.quick:
        a.sizes, a.labels, a.repeat, a.no_first_result = ["44K"], [4], 1, True
    image = io.read_image(samples.sample_path("coffee"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    print(f"segapp {segapp.__version__}, {os.cpu_count()} CPUs; photo 'coffee' resized; "
          f"times in seconds, best of {a.repeat}")
    segapp.segment(*resized(image, scribbles, 10_000))  # warm up imports and caches
    rows = []
    for size in a.sizes:
        for k in a.labels:
            rows.append(run(size, k, image, scribbles, a.repeat, not a.no_memory, not a.no_peer))
            print(f"  done {size} k={k}", file=sys.stderr, flush=True)
    print(table(rows))
    if not a.no_first_result:
        print(first_result_table(first_result(image, scribbles, 12_000_000, not a.no_peer)))
    print("cold = segapp.segment (graph + constraints + AMG + eigensolver + k-means); warm = "
          "Session.update after one added stroke (agree = its labels vs a cold solve);\n"
          "B/px = tracemalloc peak / pixels; rw = random_walker(mode='cg_mg'); ratio = cold / rw; "
          "vs rw = label agreement with random_walker;\n"
          "rw wm = random_walker after the added stroke (it has no warm path: it solves again); "
          "ratio = warm / rw wm.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
