"""Every method with many painted pixels: time and peak memory (issue 32, item 4).

The scene of the issue: the bundled coffee photo (600 × 400 = 240K px, solved at full size),
its five-label scribbles, and one fill — the largest connected region of label 1 in FAST-GE's
answer to those scribbles, painted label 1 as the app's fill tool does (121,544 more painted
pixels; 124,994 in all). Each method runs in a fresh process (``spawn``) with its defaults;
the table gives wall and CPU seconds of ``segapp.segment`` and the process's peak resident
memory (VmHWM, which includes the ~0.15 GB of Python, numpy and scipy), with the bundled
scribbles alone (3,540 painted pixels) beside the same with the fill, and the ratio of each
method's time to scikit-image's ``random_walker`` (``mode='cg_mg'``) on the same strokes in the
same run. The machine is shared: compare within a run and read the load average printed.

Usage: ``python benchmarks/painted.py [--methods fastge scpc ...] [--scenes fill bundled]
[--timeout 600]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
import warnings
from typing import Any

import numpy as np

METHODS = ("fastge", "ncut", "landmark", "ensemble", "scacs", "ccskl", "scpc")


def scene(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The coffee photo and its scribbles: ``"bundled"``, or ``"fill"`` (module notes)."""
    import scipy.ndimage as ndi

    import segapp
    from segapp import io, samples
    img = io.read_image(samples.sample_path("coffee"))
    s = io.read_scribbles(samples.sample_scribbles_path("coffee")).astype(np.int64)
    if kind == "fill":
        # the issue's fill: label 1's region of FAST-GE's answer without the colour models
        # (with them the table's region holds 63K pixels, not the 123K)
        answer = segapp.segment(img, s, appearance=0).labels
        comp, _ = ndi.label(answer == 1)
        biggest = 1 + int(np.argmax(np.bincount(comp.ravel())[1:]))
        s[(comp == biggest) & (s == 0)] = 1          # a fill adds, never overwrites
    return img, s


def _peak_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _run(queue: Any, method: str, kind: str) -> None:
    import segapp
    img, s = scene(kind)
    wall, cpu = time.perf_counter(), time.process_time()
    if method == "random_walker":
        from skimage.segmentation import random_walker
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            random_walker(img, s, mode="cg_mg", channel_axis=-1)
        stages = ""
    else:
        res = segapp.segment(img, s, method=method, max_pixels=None)
        stages = ", ".join(f"{k} {v:.1f}" for k, v in res.timings.items() if v >= 0.5)
    queue.put((time.perf_counter() - wall, time.process_time() - cpu, _peak_mb(),
               int((s > 0).sum()), stages))


def measure(method: str, kind: str, timeout: float) -> tuple | str:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_run, args=(queue, method, kind))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return f"over {timeout:.0f} s"
    if queue.empty():
        return f"failed (exit {proc.exitcode})"
    return queue.get()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", default=list(METHODS))
    parser.add_argument("--scenes", nargs="*", default=["bundled", "fill"])
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    print(f"load average at start: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'method':13s} {'scene':8s} {'painted':>8s} {'wall s':>7s} {'CPU s':>7s} "
          f"{'peak GB':>8s} {'/ r.w.':>7s}  stages ≥ 0.5 s")
    for kind in args.scenes:
        rw = measure("random_walker", kind, args.timeout)
        rows = [("random_walker", rw)] + [(m, measure(m, kind, args.timeout))
                                          for m in args.methods]
        for method, got in rows:
            if isinstance(got, str):
                print(f"{method:13s} {kind:8s} {'':>8s} {got}", flush=True)
                continue
            wall, cpu, peak, painted, stages = got
            ratio = wall / rw[0] if not isinstance(rw, str) else float("nan")
            print(f"{method:13s} {kind:8s} {painted:8d} {wall:7.1f} {cpu:7.1f} "
                  f"{peak / 1024:8.2f} {ratio:7.1f}  {stages}", flush=True)
    print(f"load average at end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
