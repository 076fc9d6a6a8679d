"""Where FAST-GE's first two-label cut loses on object/background photos (issue 22 item 2).

The robot's first round (one stroke in the object, one in the background) on each GrabCut
photo, at full resolution through ``segapp.Session`` as in the app. For the embedding vector
``x`` that FAST-GE's Cheeger sweep (§4.6) rounds, the object IoU of

- ``answer``: the labels returned (after the sweep, re-rounding and clamping);
- ``sweep``:  the prefix of ``x``'s order with the least FAST-GE ratio (FAST-GE's own sweep,
  ``colour_weight = 0``);
- ``colour``: the prefix the sweep picks with its colour term (``colour_weight``, default
  :data:`segapp.partition.COLOUR_WEIGHT`; :mod:`segapp.partition.colour_model`);
- ``oracle``: the best prefix of the same order against the ground truth — what the
  eigenvector holds — with its ratio as a multiple of the sweep's least ratio;
- ``ncut``:   the least plain normalized-cut ratio among the prefixes that separate the strokes;
- ``potentials``: the strokes' harmonic potentials read from the embedding, each pixel to the
  larger one (a random walker on FAST-GE's graph).

    python benchmarks/first_cut.py [--limit N] [--colour-weights W ...] [IMAGE ...]

``--colour-weights`` adds a column ``w=W`` per weight (the IoU the sweep gives with it) and
counts, per weight, the photos more than 0.1 IoU worse or better than FAST-GE's sweep.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quality  # noqa: E402  (same folder)
import robot  # noqa: E402

import segapp  # noqa: E402
import segapp.partition.rounding as rounding  # noqa: E402
from segapp.partition import COLOUR_WEIGHT, embedding_potentials, sweep_ratios  # noqa: E402


def _iou(side: np.ndarray, gt: np.ndarray) -> float:
    return float(np.sum(side & gt) / max(np.sum(side | gt), 1))


def analyse(sample: quality.Sample, weights: tuple[float, ...] = ()) -> dict[str, float]:
    seen: dict = {}
    sweep_cut = rounding.sweep_cut

    def spy(x, pencil, cons, **kw):            # what the sweep is given
        seen.update(x=x, pencil=pencil, cons=cons, colours=kw.get("colours"))
        return sweep_cut(x, pencil, cons, **kw)

    first = robot.Robot(seed=0).first_round(sample.gt, sample.valid)
    scribbles = np.zeros(sample.gt.shape, np.int32)
    for stroke in first:
        scribbles = robot.paint(scribbles, stroke)
    rounding.sweep_cut = spy
    try:
        result = segapp.Session(sample.image).update(scribbles)
    finally:
        rounding.sweep_cut = sweep_cut
    x, pencil, cons = seen["x"], seen["pencil"], seen["cons"]
    n, gt = x.size, sample.gt.ravel() == 1
    obj = next(s.label for s in first if sample.gt[tuple(s.centre)] == 1)
    a = list(cons.label_ids).index(obj)
    ratio, order = sweep_ratios(x, pencil, cons)
    # IoU of every prefix taken as the object's side (the object's strokes are on one end)
    low = np.mean(x[cons.sets[a]]) < np.mean(x[cons.sets[1 - a]])
    g = gt[order].astype(np.int64)
    inter = np.cumsum(g)[: n - 1] if low else gt.sum() - np.cumsum(g)[: n - 1]
    size = np.arange(1, n) if low else n - np.arange(1, n)
    ious = inter / (size + gt.sum() - inter)
    best, top = int(np.argmin(ratio)), int(np.argmax(ious))
    # the plain normalized cut among the prefixes that separate the strokes
    plain, order_d = sweep_ratios(x, pencil, None)
    pos = np.empty(n, np.int64)
    pos[order_d] = np.arange(n)
    separates = np.zeros(n - 1, bool)
    p0, p1 = pos[cons.sets[0]], pos[cons.sets[1]]
    for one, other in ((p0, p1), (p1, p0)):
        lo, hi = one.max() + 1, other.min()
        if lo <= hi:
            separates[max(lo, 1) - 1:min(hi, n - 1)] = True
    cut = int(np.argmin(np.where(separates, plain, np.inf)))
    prefix = np.zeros(n, bool)
    prefix[order_d[: cut + 1]] = True
    side = prefix if prefix[cons.sets[a]].mean() >= 0.5 else ~prefix
    potentials = embedding_potentials(x[:, None], cons.sets).argmax(1) == a

    def with_colour(w: float) -> float:
        mask = sweep_cut(x, pencil, cons, colours=seen["colours"], colour_weight=w)
        return _iou(mask if mask[cons.sets[a]].mean() >= 0.5 else ~mask, gt)

    extra = {f"w={w:g}": with_colour(w) for w in weights}
    return dict(answer=sample.score(np.asarray(result.labels)), sweep=float(ious[best]),
                colour=with_colour(COLOUR_WEIGHT), **extra,
                oracle=float(ious[top]), oracle_ratio=float(ratio[top] / ratio[best]),
                ncut=_iou(side, gt), potentials=_iou(potentials, gt))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="*")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--colour-weights", type=float, nargs="*", default=())
    args = parser.parse_args(argv)
    samples = quality.load(quality.find_data(None), "grabcut", 1.0)
    samples = [s for s in samples if not args.images or s.id in args.images][: args.limit]
    cols = ("answer", "sweep", "colour", "oracle", "oracle_ratio", "ncut", "potentials",
            *(f"w={w:g}" for w in args.colour_weights))
    print(f"{'image':10} " + " ".join(f"{c:>12}" for c in cols))
    rows = []
    for sample in samples:
        r = analyse(sample, tuple(args.colour_weights))
        rows.append(r)
        print(f"{sample.id:10} " + " ".join(f"{r[c]:12.3f}" for c in cols), flush=True)
    print(f"{'mean':10} " + " ".join(f"{np.mean([r[c] for r in rows]):12.3f}" for c in cols))
    sweep = np.array([r["sweep"] for r in rows])
    for c in ("colour", *(f"w={w:g}" for w in args.colour_weights)):
        v = np.array([r[c] for r in rows])
        print(f"{c:>8}: {np.sum(v < sweep - 0.1)} photos more than 0.1 worse than the sweep, "
              f"{np.sum(v > sweep + 0.1)} more than 0.1 better")
    return 0


if __name__ == "__main__":
    sys.exit(main())
