"""Cancellation latency: how long a FAST-GE solve runs on after its cancel flag is set.

The app cancels the running solve whenever a newer edit arrives, so the latency is how late a
new stroke's solve can start. For each size, one :class:`segapp.Session` (graph built once)
times a solve, then starts ``--trials`` solves in a worker thread and sets a
``threading.Event`` at a random moment of each (uniform over the solve's duration); the
latency is the time from ``set()`` to :class:`segapp.Cancelled` reaching the caller. Both
linear solvers are measured (``direct``: CHOLMOD's factor where installed, ``iterative``: CG
with the multigrid hierarchy), each for the cold edit (``warm_start=False``: a new factor or
hierarchy) and the warm edit (the previous one updated).

Run ``python benchmarks/cancel.py`` (about a minute); ``--sizes 250K``.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import segapp  # noqa: E402
from segapp import io, samples  # noqa: E402
from speed import SIZES, extra_stroke, resized  # noqa: E402


def latencies(sess: segapp.Session, edits: list[np.ndarray], trials: int,
              rng: np.random.Generator) -> tuple[float, list[float]]:
    """Duration of one solve of the edit sequence's last step, and the cancel latencies."""
    for s in edits[:-1]:
        sess.update(s)
    t = time.perf_counter()
    sess.update(edits[-1])
    duration = time.perf_counter() - t
    out = []
    for _ in range(trials):
        for s in edits[:-1]:
            sess.update(s)
        event = threading.Event()
        done: dict[str, float] = {}

        def solve() -> None:
            try:
                sess.update(edits[-1], cancel=event)
            except segapp.Cancelled:
                done["t"] = time.perf_counter()

        worker = threading.Thread(target=solve)
        worker.start()
        time.sleep(rng.uniform(0, duration))
        t_set = time.perf_counter()
        event.set()
        worker.join()
        if "t" in done:                      # else the solve finished before the flag
            out.append(done["t"] - t_set)
    return duration, out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["250K", "1.1M"], choices=list(SIZES))
    p.add_argument("--labels", type=int, default=5, choices=[2, 3, 4, 5])
    p.add_argument("--trials", type=int, default=12)
    a = p.parse_args(argv)
    image = io.read_image(samples.sample_path("coffee"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    scribbles[scribbles > a.labels] = 0
    rng = np.random.default_rng(0)
    print(f"{'size':>5} {'path':>9} {'edit':>5} | {'solve s':>7} {'cancelled':>9} | "
          f"{'median ms':>9} {'max ms':>7}")
    for size in a.sizes:
        img, s = resized(image, scribbles, SIZES[size])
        s2 = extra_stroke(s)
        for path in ("direct", "iterative"):
            for edit, warm in (("cold", False), ("warm", True)):
                sess = segapp.Session(img, max_pixels=None, warm_start=warm,
                                      linear_solver="auto" if path == "direct" else path)
                duration, lat = latencies(sess, [s, s2], a.trials, rng)
                ms = np.array(lat) * 1e3
                print(f"{size:>5} {path:>9} {edit:>5} | {duration:7.2f} "
                      f"{len(lat):>4} / {a.trials:<2} | {np.median(ms):9.0f} {ms.max():7.0f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
