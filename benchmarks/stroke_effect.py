"""What each corrective stroke of the quality benchmark does, and where the error left after
the last one lies.

Usage::

    python benchmarks/stroke_effect.py [--data DIR] [--dataset bsds|grabcut] [--images ID ...]
                                       [--method fastge|fastge@OPTION=V,...] [--scale 1]
                                       [--max-strokes 20] [--seed 0]

Replays :mod:`benchmarks.quality`'s stroke robot (same seed, same strokes, one warm
``segapp.Session`` per image, as the benchmark runs it). For every corrective stroke it
measures, against the answer before it:

- *fixed*: the share of the stroke's target (the largest wrongly labelled component, where
  the robot painted) that the new answer labels right;
- *broken*: the pixels the answer had right and the new one has wrong; *far*: the share of
  them more than :data:`FAR` px from the target; *to stroke's label*: the share of them
  the new answer gives the stroke's label (its label leaking) rather than a third one;

and after the last stroke: the mean IoU, and the share of the wrong pixels within
:data:`NEAR_BOUNDARY` px of a ground-truth boundary. ``--snap`` adds what a local colour
snap of the answer's boundaries would give (each pixel within 1 px of a boundary to the
adjacent label whose mean CIE Lab colour in a 5 × 5 window, band excluded, is nearest): a
test of whether the remaining error near the boundaries is a colour edge missed.

One row per image, then the totals (strokes pooled). A stroke that fixes its whole target
and breaks nothing is the ideal the robot's NoC counts on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import ndimage as ndi
from skimage.segmentation import find_boundaries

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import peers  # noqa: E402
from benchmarks.quality import find_data, load  # noqa: E402
from benchmarks.robot import Robot, largest_error_component, paint  # noqa: E402

#: A broken pixel farther than this from the stroke's target counts as "far" (px).
FAR = 15
#: An error pixel within this distance of a ground-truth boundary counts as "at a boundary".
NEAR_BOUNDARY = 2


def boundary(labels: np.ndarray) -> np.ndarray:
    """Pixels with a 4-neighbour of another label (both sides of every boundary)."""
    return find_boundaries(labels, connectivity=1, mode="thick")


def colour_snap(pred: np.ndarray, image: np.ndarray, painted: np.ndarray,
                win: int = 5) -> np.ndarray:
    """``pred`` with each unpainted pixel on a boundary given to the adjacent label whose mean
    Lab colour in a ``win`` × ``win`` window (boundary pixels left out) is nearest."""
    from skimage.color import rgb2lab
    lab = rgb2lab(image)
    band = boundary(pred) & ~painted
    best, out = np.full(pred.shape, np.inf), pred.copy()
    for a in np.unique(pred):
        m = ((pred == a) & ~band).astype(float)
        count = ndi.uniform_filter(m, win)
        mean = np.stack([ndi.uniform_filter(m * lab[..., c], win) for c in range(3)], -1)
        d = ((lab - mean / np.maximum(count, 1e-12)[..., None]) ** 2).sum(-1)
        take = band & (count > 1e-6) & (d < best)
        best[take], out[take] = d[take], a
    return out


def replay(sample, labeller, max_strokes: int, seed: int, snap: bool) -> dict:
    """One image: the robot's strokes, each corrective stroke measured (module doc)."""
    robot = Robot(seed=seed)
    scribbles = np.zeros(sample.gt.shape, np.int32)
    for s in robot.first_round(sample.gt, sample.valid):
        scribbles = paint(scribbles, s)
    n, gt = sample.k, sample.gt + 1
    valid = np.ones(gt.shape, bool) if sample.valid is None else sample.valid
    pred = np.asarray(labeller(scribbles))
    strokes = []
    while n < max_strokes:
        target = largest_error_component(sample.gt, pred, scribbles, sample.valid)
        stroke = robot.corrective(sample.gt, pred, scribbles, sample.valid)
        if target is None or stroke is None:
            break
        scribbles, n = paint(scribbles, stroke), n + 1
        new = np.asarray(labeller(scribbles))
        region, mask = target
        broken = (pred == gt) & (new != gt) & valid
        far = ndi.distance_transform_edt(~mask) > FAR
        strokes.append((mask.sum(), float(np.mean(new[mask] == gt[mask])), broken.sum(),
                        (broken & far).sum(), (broken & (new == region + 1)).sum()))
        pred = new
    wrong = (pred != gt) & valid
    near = ndi.distance_transform_edt(~boundary(gt)) <= NEAR_BOUNDARY
    out = dict(id=sample.id, k=sample.k, strokes=np.array(strokes, float).reshape(-1, 5),
               iou=sample.score(pred),
               at_boundary=float((wrong & near).sum() / max(wrong.sum(), 1)))
    if snap:
        out["snapped"] = sample.score(colour_snap(pred, sample.image, scribbles > 0))
    return out


def _row(name: str, st: np.ndarray, extra: str) -> str:
    if not len(st):
        return f"| {name} | 0 | – | – | – | – | – | {extra} |"
    size, fixed, broken, far, own = st.T
    b = max(broken.sum(), 1)
    return (f"| {name} | {len(st)} | {fixed.mean():.2f} | {(size * fixed).sum() / size.sum():.2f} "
            f"| {broken.mean():.0f} | {far.sum() / b:.2f} | {own.sum() / b:.2f} | {extra} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--dataset", choices=("bsds", "grabcut"), default="bsds")
    ap.add_argument("--images", nargs="+", default=None, help="image ids (default: all)")
    ap.add_argument("--method", default="fastge",
                    help="a segapp variant of benchmarks/quality.py (fastge, fastge@texture=0.5)")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--max-strokes", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--snap", action="store_true", help="add the local colour snap's IoU")
    args = ap.parse_args(argv)
    data = find_data(args.data)
    if data is None:
        print("segapp: error: no evaluation data (--data DIR)", file=sys.stderr)
        return 2
    method = peers.registry([args.method])[args.method]
    samples = [s for s in load(data, args.dataset, args.scale)
               if args.images is None or s.id in args.images]
    head = "IoU after | wrong px within 2 px of a true boundary" + (" | snapped IoU" if args.snap
                                                                  else "")
    print(f"| image (k) | corrective strokes | fixed | fixed, px-weighted | broken px / stroke "
          f"| broken far (> {FAR} px) | broken to the stroke's label | {head} |")
    print("|---" * (9 + args.snap) + "|")
    pooled = []
    for smp in samples:
        r = replay(smp, method.start(smp.image), args.max_strokes, args.seed, args.snap)
        pooled.append(r["strokes"])
        extra = f"{r['iou']:.3f} | {r['at_boundary']:.2f}"
        if args.snap:
            extra += f" | {r['snapped']:.3f}"
        print(_row(f"{r['id']} ({r['k']})", r["strokes"], extra), flush=True)
    print(_row("all", np.vstack(pooled) if pooled else np.zeros((0, 5)),
               " | ".join(["–"] * (2 + args.snap))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
