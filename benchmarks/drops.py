"""Why a corrective stroke makes FAST-GE's result worse: the drops of the quality benchmark, explained.

Usage::

    python benchmarks/drops.py [--data DIR] [--dataset bsds|grabcut] [--every N] [--scale 0.5]
                               [--fresh]

Replays the quality benchmark's robot (:mod:`benchmarks.quality`, same seed, same strokes) with
one default ``segapp.Session`` per image, as the benchmark does (``--fresh``: with
``stable_refinement=False``, every answer from the strokes alone). For every corrective stroke
after which the IoU falls by more than 5 points (:data:`benchmarks.quality.DROP`) it prints

- the share of pixels whose label changed, the share that went to the new stroke's label, and
  the share of changed pixels in a changed region touching the new stroke (a *leak* of the new
  label through the region it was painted in, versus a flip far from it);
- FAST-GE's own objective for the new strokes — the generalized ratio cut
  ``Σ_a cut_G(S_a) / cut_H(S_a)`` over the labels' regions ``S_a`` (§4.6; for two labels the
  quantity the Cheeger sweep minimises; :func:`segapp.partition.ratio_cut`), ``G = G_D + Ĝ_ML``, ``H = K/n + Ĝ_CL`` — of the new
  result and of the previous result with the new stroke painted in. If the previous result
  scored lower, the solve/partition missed a better cut and damping the partition towards it
  would be a repair; if the new result scores lower, the drop is what FAST-GE's objective asks
  for on that graph, and no partition step can remove it without overriding the objective.

The last line counts the drops, the edits, and how many drops had the previous result
better in the objective.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import ndimage as ndi

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import segapp  # noqa: E402
from benchmarks.quality import DROP, find_data, load  # noqa: E402
from benchmarks.robot import Robot, paint  # noqa: E402
from segapp.strokes.constraints import build_constraints  # noqa: E402
from segapp.methods.fastge import FastGE  # noqa: E402
from segapp.partition import ratio_cut  # noqa: E402
from segapp.solve.pencil import Pencil  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--dataset", choices=("bsds", "grabcut"), default="grabcut")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--scale", type=float, default=0.5)
    ap.add_argument("--max-strokes", type=int, default=20)
    ap.add_argument("--fresh", action="store_true",
                    help="sessions with stable_refinement=False (history-free answers)")
    args = ap.parse_args(argv)
    data = find_data(args.data)
    if data is None:
        print("no data directory (--data)")
        return 2
    n_drops = n_edits = prev_better = 0
    for smp in load(data, args.dataset, args.scale, every=args.every):
        robot = Robot(seed=0)
        scribbles = np.zeros(smp.gt.shape, np.int32)
        first = robot.first_round(smp.gt, smp.valid)
        for s in first:
            scribbles = paint(scribbles, s)
        n = len(first)
        session = segapp.Session(smp.image, stable_refinement=not args.fresh)
        graph = FastGE.from_image(smp.image).graph   # the same default graph, for the objective
        prev = None
        while True:
            labels = session.update(scribbles).labels
            iou = smp.score(labels)
            if prev is not None:
                n_edits += 1
                if prev[1] - iou > DROP:
                    n_drops += 1
                    new = (scribbles > 0) & (prev[2] == 0)
                    changed = labels != prev[0]
                    label = int(scribbles[new][0])
                    comp, _ = ndi.label(changed)
                    touch = np.unique(comp[ndi.binary_dilation(new, iterations=2) & changed])
                    leak = np.isin(comp, touch[touch > 0]).sum() / max(changed.sum(), 1)
                    cons = build_constraints(scribbles, graph.degrees)
                    pencil = Pencil.from_constraints(graph.laplacian, graph.degrees, cons)
                    before = prev[0].copy()
                    before[scribbles > 0] = scribbles[scribbles > 0]
                    ids = np.asarray(cons.label_ids)
                    r_new = ratio_cut(np.searchsorted(ids, labels.ravel()), pencil, cons)
                    r_old = ratio_cut(np.searchsorted(ids, before.ravel()), pencil, cons)
                    prev_better += r_old < r_new
                    print(f"{smp.id} k={smp.k} stroke {n}: IoU {prev[1]:.3f} -> {iou:.3f}; "
                          f"label {label}: changed {changed.mean():.1%} of the pixels, "
                          f"{np.mean(changed & (labels == label)):.1%} to the new label, "
                          f"{leak:.0%} of the change touching the stroke; objective new "
                          f"{r_new:.3g} vs previous {r_old:.3g} ({r_old / r_new:.1f}×)",
                          flush=True)
            prev = (labels, iou, scribbles.copy())
            if n >= args.max_strokes:
                break
            stroke = robot.corrective(smp.gt, labels, scribbles, smp.valid)
            if stroke is None:
                break
            scribbles = paint(scribbles, stroke)
            n += 1
    print(f"drops {n_drops}/{n_edits} ({n_drops / max(n_edits, 1):.1%}); the previous result "
          f"scored better in FAST-GE's objective in {prev_better} of them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
