"""Time the landmark methods at the edges of their declared option ranges (issue 23).

Each case runs ``segapp.segment`` on the coffee photo area-averaged to 0.25 MP in its own
process (killed after ``--timeout`` seconds) and prints wall and CPU seconds; the ranges in
``segapp/methods/landmark_base.py`` and ``segapp/methods/ensemble.py`` are what stays under a minute of CPU
(docs/methods.md, "Bounded work"). CPU seconds because the shared machine's load makes wall
times 2–4× longer. Usage: ``python benchmarks/ranges.py [--timeout 240] [CASE ...]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from typing import Any

import numpy as np

#: (method, options, stroke kind, number of labels)
CASES: list[tuple[str, dict[str, Any], str, int]] = [
    ("landmark", {}, "line", 3),
    ("landmark", {"n_landmarks": 2000, "stroke_landmarks": 1000}, "line", 3),
    ("scacs", {"n_landmarks": 2000}, "line", 3),
    ("scpc", {"n_landmarks": 5000}, "line", 3),
    ("ensemble", {"n_partitions": 16}, "line", 3),
    ("ensemble", {"n_partitions": 8, "n_landmarks": 2000}, "line", 3),
    ("ensemble", {"sigma_scale": 0.01}, "line", 3),
    ("ensemble", {}, "pixel", 3),
    ("landmark", {"sigma_scale": 0.01}, "pixel", 50),
    ("ensemble", {}, "line", 50),
]


def scene(kind: str, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """The 0.25 MP coffee photo and ``n_labels`` strokes (20-px lines or single pixels)."""
    from segapp import io, samples
    from segapp.inputs.resolution import reduce_image, working_shape
    img = io.read_image(samples.sample_path("coffee"))
    img = reduce_image(img, working_shape(img.shape[:2], 250_000))
    H, W = img.shape[:2]
    s = np.zeros((H, W), np.int64)
    rng = np.random.default_rng(0)
    for i, (y, x) in enumerate(zip(rng.integers(5, H - 5, n_labels),
                                   rng.integers(5, W - 5, n_labels))):   # lines may be cut
        if kind == "pixel":
            s[y, x] = i + 1
        else:
            s[y, x:x + 20] = i + 1
    return img, s


def _run(queue: Any, method: str, options: dict[str, Any], kind: str, n_labels: int) -> None:
    import segapp
    img, s = scene(kind, n_labels)
    wall, cpu = time.perf_counter(), time.process_time()
    segapp.segment(img, s, method=method, **options)
    queue.put((time.perf_counter() - wall, time.process_time() - cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", type=int, help="indices into CASES (default all)")
    parser.add_argument("--timeout", type=float, default=240.0)
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    for i in args.cases or range(len(CASES)):
        method, options, kind, n_labels = CASES[i]
        queue = ctx.Queue()
        proc = ctx.Process(target=_run, args=(queue, method, options, kind, n_labels))
        proc.start()
        proc.join(args.timeout)
        if proc.is_alive():
            proc.kill()
            proc.join()
            result = f"over {args.timeout:.0f} s"
        elif queue.empty():
            result = f"failed (exit {proc.exitcode})"
        else:
            wall, cpu = queue.get()
            result = f"wall {wall:6.1f} s  CPU {cpu:6.1f} s"
        print(f"{i:2d} {method:9s} {str(options):45s} {kind:5s} {n_labels:3d} labels  {result}",
              flush=True)


if __name__ == "__main__":
    main()
