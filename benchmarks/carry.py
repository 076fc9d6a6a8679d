"""Carry what was learnt to the next photo: strokes needed on images 2…n of a folder of
similar photos, with and without the suggestion of the images already done.

Each "folder" is a short sequence made from one dev photo with ground truth (read from
``../shared/data``, never copied): ``--frames`` crops of 80% of each side panning from the
top-left to the bottom-right corner, each with its own gain (±4% brightness), as the frames
of a slow camera pan. The stroke robot of :mod:`benchmarks.robot` then annotates the frames
in order, as a person would a folder:

- image 1: FAST-GE alone (one stroke per region, then corrective strokes);
- images 2…n, **without carry**: the same;
- images 2…n, **with carry**: the image opens with the suggestion of the frames finished
  before it (:func:`segapp.appearance.carry.suggest`, strokes = 0); each corrective stroke
  then refines it: while fewer than two labels are painted the suggestion is solved again
  with the strokes fixed, from two labels on FAST-GE solves with the folder's models
  seeding its colour models (option ``carry``). Each finished frame (its last answer and
  strokes) is learnt before the next one opens (:meth:`LearntAppearance.learn`).

A frame stops at ``--max-strokes`` or once its IoU reaches 90%. The table gives NoC@85 /
NoC@90 (strokes to reach 85 / 90% IoU, ``max`` if never) and the first answer's IoU (for
carry: the suggestion, before any stroke; without: after the first round), averaged over
folders, per frame position; a last part compares random_walker's strokes on image 1.

Run (default: 2 BSDS-dev photos with 3 and 4 regions and 1 GrabCut-dev photo, 4 frames
each, ``--refine accept rounds``; 151 s at load average 6–7 on 2 cores)::

    python benchmarks/carry.py
    python benchmarks/carry.py --refine rounds fastge cover   # how strokes refine it
    python benchmarks/carry.py --smoothing 0 10 100   # the suggestion's smoothing scan
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quality import DATASETS, Sample, _read_map, _read_rgb, find_data  # noqa: E402
from benchmarks.robot import Robot, noc, paint  # noqa: E402

THRESHOLDS = (0.85, 0.90)
#: Default photos: BSDS-dev ids with 3–6 regions and GrabCut-dev photos (every 2nd/4th).
BSDS_IDS = ("156054", "100007")
GRABCUT_EVERY = 4
GRABCUT_COUNT = 1
#: How a carried suggestion is refined by strokes (the ``--refine`` choices).
REFINES = {"rounds": "carry: the suggestion, else one stroke per region and FAST-GE seeded "
                     "by the folder's models",
           "accept": "carry: the suggestion, else one stroke per region and FAST-GE alone",
           "cover": "carry: suggestion refined by strokes, FAST-GE once every label shown "
                    "is painted",
           "suggest": "carry: suggestion refined by strokes (random walker with the folder's "
                      "priors) only",
           "fastge": "carry: suggestion, FAST-GE with carried models from two labels"}


def frames(sample: Sample, n: int, share: float = 0.8) -> list[Sample]:
    """``n`` crops of ``share`` of each side along the diagonal, gains 1, 1.04, 0.96, …"""
    h, w = sample.gt.shape
    ch, cw = int(h * share), int(w * share)
    out = []
    for f in range(n):
        t = f / max(n - 1, 1)
        y, x = round(t * (h - ch)), round(t * (w - cw))
        gain = 1.0 + 0.04 * ((-1) ** f) * (f > 0)
        img = np.clip(sample.image[y:y + ch, x:x + cw] * gain, 0, 1).astype(np.float32)
        valid = None if sample.valid is None else sample.valid[y:y + ch, x:x + cw]
        out.append(Sample(f"{sample.id}#{f + 1}", img, sample.gt[y:y + ch, x:x + cw], valid,
                          sample.binary))
    return out


def load_photos(data: Path, bsds: tuple[str, ...], grabcut: int) -> list[Sample]:
    photos = []
    root = data / DATASETS["bsds"]
    index = {str(e["id"]): e for e in json.loads((root / "index.json").read_text())}
    for i in bsds:
        e = index[i]
        photos.append(Sample(i, _read_rgb(root / e["image"]),
                             _read_map(root / e["gt"]).astype(np.int32), None, False))
    root = data / DATASETS["grabcut"]
    for e in json.loads((root / "index.json").read_text())[::GRABCUT_EVERY][:grabcut]:
        m = _read_map(root / e["mask"])
        photos.append(Sample(str(e["id"]), _read_rgb(root / e["image"]),
                             (m == 1).astype(np.int32), m != 255, True))
    return photos


def annotate(sample: Sample, max_strokes: int, carry: Path | None, smoothing: float,
             learnt, refine: str = "fastge") -> tuple[list[float], np.ndarray, np.ndarray]:
    """The robot on one frame: IoU after each stroke count (index 0 = the suggestion with
    carry, else the first round), the last answer and the strokes."""
    import segapp
    from segapp.appearance.carry import suggest

    robot = Robot(seed=0)
    scribbles = np.zeros(sample.gt.shape, np.int32)
    options = {"carry": str(carry)} if carry is not None and refine != "accept" else {}
    session = segapp.Session(sample.image, method="fastge", **options)
    ious: list[float] = []
    if carry is not None:
        pred = suggest(sample.image, learnt, smoothing=smoothing).labels
        ious.append(sample.score(pred))
        n = 0
    if carry is not None and refine in ("rounds", "accept") and ious[-1] < THRESHOLDS[-1]:
        # not good enough to accept: paint as on any image, FAST-GE seeded by the folder
        for s in robot.first_round(sample.gt, sample.valid):
            scribbles = paint(scribbles, s)
        k = int(len(np.unique(scribbles[scribbles > 0])))
        pred = np.asarray(session.update(scribbles).labels)
        ious += [np.nan] * (k - 1) + [sample.score(pred)]
        n = k
    elif carry is None:
        for s in robot.first_round(sample.gt, sample.valid):
            scribbles = paint(scribbles, s)
        n = int(len(np.unique(scribbles[scribbles > 0])))
        pred = np.asarray(session.update(scribbles).labels)
        ious.append(sample.score(pred))
    while n < max_strokes and ious[-1] < THRESHOLDS[-1]:
        stroke = robot.corrective(sample.gt, pred, scribbles, sample.valid)
        if stroke is None:
            break
        scribbles = paint(scribbles, stroke)
        n += 1
        painted = set(np.unique(scribbles[scribbles > 0]).tolist())
        shown = set(np.unique(pred[pred > 0]).tolist())
        if refine not in ("rounds", "accept") and (refine == "suggest" or len(painted) < 2
                                   or (refine == "cover" and shown - painted)):
            pred = suggest(sample.image, learnt, scribbles, smoothing=smoothing).labels
        else:
            pred = np.asarray(session.update(scribbles).labels)
        ious.append(sample.score(pred))
    session.close()
    return ious, pred, scribbles


def strokes_to(ious: list[float], threshold: float, first: int, max_strokes: int) -> int:
    return noc(ious, threshold, max_strokes, first=first)[0]


def run(photos: list[Sample], n_frames: int, max_strokes: int, smoothing: float,
        out: Path, refines: tuple[str, ...] = ("cover",)) -> list[dict]:
    from segapp.appearance.carry import LearntAppearance

    rows = []
    for photo in photos:
        seq = frames(photo, n_frames)
        learnt = LearntAppearance()
        path = out / f"{photo.id}.appearance.json"
        for f, frame in enumerate(seq):
            k = frame.k
            for mode in (("plain",) if f == 0 else ("plain",) + tuple(refines)):
                t = time.perf_counter()
                carry = path if mode != "plain" else None
                ious, pred, scribbles = annotate(frame, max_strokes, carry, smoothing, learnt,
                                                 mode)
                first = 0 if mode != "plain" else k
                rows.append(dict(photo=photo.id, frame=f + 1, mode=mode, k=k,
                                 first_iou=ious[0], seconds=time.perf_counter() - t,
                                 **{f"noc{round(th * 100)}": strokes_to(ious, th, first,
                                                                        max_strokes)
                                    for th in THRESHOLDS}))
                if mode == ("plain" if f == 0 else refines[0]):
                    keep = (pred, scribbles)
            learnt.learn(frame.id, frame.image, keep[0], keep[1])
            learnt.save(path)
            print(f"  {photo.id} frame {f + 1}: " + ", ".join(
                f"{r['mode']} NoC@90 {r['noc90']} first {r['first_iou']:.3f}"
                for r in rows if r["photo"] == photo.id and r["frame"] == f + 1), flush=True)
    return rows


def table(rows: list[dict], max_strokes: int) -> str:
    lines = [f"| images | strokes, mode | NoC@85 | NoC@90 | first answer IoU | never 90% "
             f"(of {max_strokes}) | s per image |", "|---|---|---|---|---|---|---|"]
    groups = [("image 1", "no carry (FAST-GE)", lambda r: r["frame"] == 1),
              ("images 2…n", "no carry (FAST-GE)",
               lambda r: r["frame"] > 1 and r["mode"] == "plain")]
    groups += [("images 2…n", REFINES[m], lambda r, m=m: r["frame"] > 1 and r["mode"] == m)
               for m in REFINES if any(r["mode"] == m for r in rows)]
    for where, mode, keep in groups:
        sel = [r for r in rows if keep(r)]
        if not sel:
            continue
        never = sum(r["noc90"] >= max_strokes for r in sel)
        lines.append(f"| {where} ({len(sel)}) | {mode} | "
                     f"{np.mean([r['noc85'] for r in sel]):.2f} | "
                     f"{np.mean([r['noc90'] for r in sel]):.2f} | "
                     f"{np.mean([r['first_iou'] for r in sel]):.3f} | {never} | "
                     f"{np.mean([r['seconds'] for r in sel]):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="the shared data folder (default ../shared/data)")
    ap.add_argument("--frames", type=int, default=4)
    ap.add_argument("--max-strokes", type=int, default=20)
    ap.add_argument("--bsds", nargs="*", default=list(BSDS_IDS), help="BSDS-dev ids")
    ap.add_argument("--grabcut", type=int, default=GRABCUT_COUNT, help="GrabCut-dev photos")
    ap.add_argument("--smoothing", type=float, nargs="+", default=None,
                    help="the suggestion's smoothing (1/γ); several: a scan")
    ap.add_argument("--refine", nargs="+", default=["accept", "rounds"], choices=tuple(REFINES),
                    help="how strokes refine the suggestion (several: compared)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    data = find_data(args.data)
    if data is None:
        print("no data: pass --data", file=sys.stderr)
        return 2
    from segapp.appearance.carry import SMOOTHING

    photos = load_photos(data, tuple(args.bsds), args.grabcut)
    import os
    print(f"{len(photos)} photos × {args.frames} frames; load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    with threadpool_limits(args.threads), tempfile.TemporaryDirectory() as tmp:
        for smoothing in args.smoothing or [SMOOTHING]:
            t = time.perf_counter()
            rows = run(photos, args.frames, args.max_strokes, smoothing, Path(tmp),
                       tuple(args.refine))
            print(f"\nsmoothing {smoothing:g} ({time.perf_counter() - t:.0f} s, load average "
                  f"{os.getloadavg()[0]:.2f})")
            print(table(rows, args.max_strokes), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
