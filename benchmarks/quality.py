"""Interactive-segmentation quality benchmark: segapp FAST-GE against its peers.

Usage::

    python benchmarks/quality.py [--data DIR] [--dataset bsds|grabcut|all] [--methods ...]
                                 [--max-strokes 20] [--scale 0.5] [--quick] [--out DIR]

``--methods`` takes method names (:mod:`benchmarks.peers`) and group names, mixed:
``default`` (:data:`benchmarks.peers.ALL_METHODS`: the FAST-GE variants, ncut and the peers;
what runs without ``--methods``), ``family`` (segapp's related methods ``landmark``,
``ensemble``, ``scacs``, ``ccskl``, ``scpc``; left out of the default run because they take
longer per stroke) and ``all``. E.g. ``--methods family fastge rw_tuned`` compares the family
with FAST-GE and the tuned random walker. A segapp variant whose method the installed segapp
does not register is skipped with a printed note.

Protocol (see :mod:`benchmarks.robot` for the simulated annotator):

1. every image (and its ground truth, nearest-neighbour) is resized by ``--scale`` (0.5 by
   default: 240×160 for BSDS, the size of the FAST-GE paper's Patras example, to keep the
   full run within tens of minutes on two cores; ``--scale 1`` for full resolution);
2. for every method the robot (same seed for every method, so the first round is identical)
   draws one stroke per ground-truth region, the method segments, and the robot then adds one
   corrective stroke at a time in the largest wrongly-labelled component, up to
   ``--max-strokes`` strokes in all (it stops early when nothing is wrong);
3. after every segmentation the IoU is recorded: foreground IoU over non-void pixels for
   GrabCut, mean IoU over regions for BSDS.

``--robot both`` (strokes protocol) also runs, for every segapp variant, the "where to paint
next" robot (issue 22): the same first round, then each stroke in the method's least-confident
area (``Segmentation.confidence``; :meth:`benchmarks.robot.Robot.where_unsure`), chosen without
the ground truth, which only names the label painted there; its rows are ``NAME+unsure``,
beside the oracle robot's ``NAME``.

A method that raises is counted as a failure for that stroke: the previous labels stand (the
user keeps seeing the last good result; IoU 0 when the first round fails) and the robot goes on.

Summary conventions: ``IoU@n`` is the IoU after ``max(n, k)`` strokes (the first round alone
has k strokes) and the last IoU is carried forward after the robot stops; NoC@t is the
number of strokes needed to reach IoU t, ``max-strokes`` when never reached (the count of such
images is given as "never"); time is the mean wall time of one segmentation call (for segapp
sessions the first call includes the graph and AMG set-up).

Outputs in ``--out`` (default ``benchmarks/out``): ``quality_<dataset>.md`` (the table),
``per_stroke.csv`` (image, method, stroke index, IoU, time, ...), ``curves_<dataset>.png``
(matplotlib, optional) and ``summary.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
from threadpoolctl import threadpool_limits

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `segapp` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import peers  # noqa: E402
from benchmarks.robot import (CLICK_RADIUS, Robot, binary_iou, mean_iou, next_click,  # noqa: E402
                              noc, paint)

REPO = Path(__file__).resolve().parents[1]
DATASETS = {"bsds": "bsds-dev", "grabcut": "grabcut-dev"}
#: Beta grid of the random-walker tuning (skimage's default is 130).
RW_BETA_GRID = (30.0, 130.0, 500.0, 2000.0, 8000.0)
THRESHOLDS = (0.85, 0.90)
#: An edit "breaks" the result when the IoU falls by more than this (5 points).
DROP = 0.05


@dataclass
class Sample:
    """One evaluation image: float RGB in [0, 1], region map 0..k-1, valid (scored) pixels."""

    id: str
    image: np.ndarray
    gt: np.ndarray
    valid: np.ndarray | None
    binary: bool

    @property
    def k(self) -> int:
        return int(len(np.unique(self.gt if self.valid is None else self.gt[self.valid])))

    def score(self, labels: np.ndarray) -> float:
        if self.binary:
            return binary_iou(labels, self.gt, self.valid)
        return mean_iou(labels, self.gt, self.valid)


def find_data(arg: str | None) -> Path | None:
    """``--data`` if given, else ``../shared/data`` from the repo root, else /work/shared/data."""
    if arg:
        return Path(arg)
    for cand in (REPO.parent / "shared" / "data", Path("/work/shared/data")):
        if cand.is_dir():
            return cand
    return None


def _read_rgb(path: Path) -> np.ndarray:
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0


def _read_map(path: Path) -> np.ndarray:
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im)


def _resize(image: np.ndarray, gt: np.ndarray, valid: np.ndarray | None, scale: float = 1.0,
            max_side: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    h, w = gt.shape
    f = scale
    if max_side:
        f = min(f, max_side / max(h, w))
    if f >= 1.0:
        return image, gt, valid
    from skimage.transform import resize
    shape = (max(2, round(h * f)), max(2, round(w * f)))
    img = resize(image, shape + image.shape[2:], anti_aliasing=True).astype(np.float32)
    near = dict(order=0, anti_aliasing=False, preserve_range=True)
    g = resize(gt, shape, **near).astype(gt.dtype)
    v = None if valid is None else resize(valid, shape, **near).astype(bool)
    return np.clip(img, 0, 1), g, v


def load(data: Path, dataset: str, scale: float = 1.0, max_side: int | None = None,
         limit: int | None = None, every: int = 1) -> Iterator[Sample]:
    """Yield the samples of ``bsds`` or ``grabcut`` from the shared-data layout.

    ``every`` keeps every n-th image of the index (a subset spanning all k for screening),
    ``limit`` then the first ``limit`` of those.
    """
    root = data / DATASETS[dataset]
    index = json.loads((root / "index.json").read_text())
    for entry in index[::every][:limit]:
        img = _read_rgb(root / entry["image"])
        if dataset == "bsds":
            gt, valid = _read_map(root / entry["gt"]).astype(np.int32), None
        else:
            m = _read_map(root / entry["mask"])
            gt, valid = (m == 1).astype(np.int32), m != 255
        img, gt, valid = _resize(img, gt, valid, scale, max_side)
        yield Sample(str(entry["id"]), img, gt, valid, dataset == "grabcut")


# -- one image, one method -------------------------------------------------------------------
def run_interactive(sample: Sample, labeller: Callable[[np.ndarray], np.ndarray],
                    max_strokes: int = 20, first_round_only: bool = False,
                    seed: int = 0, robot_rule: str = "error") -> list[dict]:
    """Robot loop on one image; one record per segmentation call.

    ``robot_rule``: ``"error"`` (the oracle robot: each corrective stroke in the largest
    wrongly labelled component) or ``"unsure"`` (the "where to paint next" robot: each stroke
    in the method's least-confident area, :meth:`benchmarks.robot.Robot.where_unsure`; the
    labeller must leave the last result's confidence map in its ``confidence`` attribute,
    as :func:`confidence_session` does).

    Returns
    -------
    list of dict
        ``strokes`` (strokes so far), ``iou``, ``time`` (s), ``failed`` (bool), ``error``
        (exception text), ``kind`` ("initial"/"corrective").
    """
    robot = Robot(seed=seed)
    first = robot.first_round(sample.gt, sample.valid)
    scribbles = np.zeros(sample.gt.shape, np.int32)
    for s in first:
        scribbles = paint(scribbles, s)
    n = len(first)
    pred = np.zeros(sample.gt.shape, np.int32)  # "nothing segmented": IoU 0 if round 1 fails
    records = []
    kind = "initial"
    while True:
        t = time.perf_counter()
        failed, error = False, ""
        try:
            pred = np.asarray(labeller(scribbles))
        except Exception as exc:  # any method failure is data, never a crash
            failed, error = True, f"{type(exc).__name__}: {exc}"[:200]
        elapsed = time.perf_counter() - t
        records.append(dict(strokes=n, iou=sample.score(pred), time=elapsed, failed=failed,
                            error=error, kind=kind))
        if first_round_only or n >= max_strokes:
            break
        if robot_rule == "unsure":
            conf = getattr(labeller, "confidence", None)
            stroke = (None if conf is None or failed else
                      robot.where_unsure(sample.gt, conf, scribbles, sample.valid))
        else:
            stroke = robot.corrective(sample.gt, pred, scribbles, sample.valid)
        if stroke is None:  # nothing left to correct (or, unsure robot: sure everywhere)
            break
        scribbles = paint(scribbles, stroke)
        n += 1
        kind = stroke.kind
    return records


def confidence_session(image: np.ndarray, method: str = "fastge",
                       **options) -> Callable[[np.ndarray], np.ndarray]:
    """A segapp Session labeller (as :mod:`benchmarks.peers`' sessions) that keeps the last
    result's ``confidence`` map in its ``confidence`` attribute (None if the method has none)."""
    import segapp
    state: dict = {}

    def run(scribbles: np.ndarray) -> np.ndarray:
        if "sess" not in state:
            state["sess"] = segapp.Session(image, method=method, **options)
        res = state["sess"].update(scribbles)
        run.confidence = res.confidence
        return np.asarray(res.labels)
    run.confidence = None
    return run


def run_clicks(sample: Sample, labeller: Callable[[np.ndarray], np.ndarray],
               max_clicks: int = 20, radius: int = CLICK_RADIUS,
               stop_at: float | None = max(THRESHOLDS), rule: str = "area") -> list[dict]:
    """The standard click protocol (:func:`benchmarks.robot.next_click`, ``rule``) on a binary
    sample.

    Before the first click the prediction is all background. While the seeds hold one label
    only (after the first, positive click) the answer is that label everywhere, without
    calling the method (kind ``"one-label"``): every compared method needs both labels, and a
    one-label seed set has only that answer. The run stops after ``max_clicks`` clicks, when
    nothing is wrong, or once the IoU reaches ``stop_at`` (the largest NoC threshold: later
    clicks cannot change NoC@85/90; None runs on).

    Returns
    -------
    list of dict
        As :func:`run_interactive`, ``strokes`` counting clicks and ``kind`` one of
        ``"one-label"``, ``"positive"``, ``"negative"``.
    """
    if not sample.binary:
        raise ValueError("the click protocol is binary (object vs background)")
    seeds = np.zeros(sample.gt.shape, np.int32)
    pred = np.ones(sample.gt.shape, np.int32)  # all background before the first click
    records = []
    for n in range(1, max_clicks + 1):
        click = next_click(sample.gt, pred, seeds, sample.valid, radius, rule)
        if click is None:
            break
        seeds = paint(seeds, click)
        failed, error, kind = False, "", click.kind
        t = time.perf_counter()
        if len(np.unique(seeds[seeds > 0])) < 2:
            pred, kind = np.full(seeds.shape, click.label, np.int32), "one-label"
        else:
            try:
                pred = np.asarray(labeller(seeds))
            except Exception as exc:  # as in run_interactive: the previous labels stand
                failed, error = True, f"{type(exc).__name__}: {exc}"[:200]
        records.append(dict(strokes=n, iou=sample.score(pred), time=time.perf_counter() - t,
                            failed=failed, error=error, kind=kind))
        if stop_at is not None and records[-1]["iou"] >= stop_at:
            break
    return records


def drops(records: list[dict], threshold: float = DROP) -> tuple[int, int]:
    """Corrective edits after which the IoU fell by more than ``threshold``: (drops, edits).

    Every answer of the method after its first one (the first round of strokes; for clicks,
    the first answer with both labels) is an edit, compared with the answer just before it.
    """
    answered = [r for r in sorted(records, key=lambda r: r["strokes"])
                if r.get("kind") != "one-label"]
    steps = [a["iou"] - b["iou"] for a, b in zip(answered, answered[1:])]
    return int(sum(d > threshold for d in steps)), len(steps)


def curve(records: list[dict], max_strokes: int) -> np.ndarray:
    """IoU after n = 1..max_strokes strokes: IoU after max(n, k), carried forward."""
    out = np.full(max_strokes, np.nan)
    by_n = {r["strokes"]: r["iou"] for r in records}
    last = np.nan
    first = min(by_n)
    for n in range(1, max_strokes + 1):
        if n in by_n:
            last = by_n[n]
        elif n < first:
            last = by_n[first]
        out[n - 1] = last
    return out


# -- summary ---------------------------------------------------------------------------------
def summarise(rows: list[dict], max_strokes: int) -> dict[str, dict]:
    """Per-method summary of one dataset's per-stroke rows."""
    by_method: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        by_method.setdefault(r["method"], {}).setdefault(r["image"], []).append(r)
    out = {}
    for method, images in by_method.items():
        first, at5, at10, times, fails = [], [], [], [], 0
        n_drops = n_edits = 0
        nocs = {t: [] for t in THRESHOLDS}
        for recs in images.values():
            recs = sorted(recs, key=lambda r: r["strokes"])
            c = curve(recs, max_strokes)
            first.append(recs[0]["iou"])
            at5.append(c[min(5, max_strokes) - 1])
            at10.append(c[min(10, max_strokes) - 1])
            times += [r["time"] for r in recs]
            fails += sum(bool(r["failed"]) for r in recs)
            d, e = drops(recs)
            n_drops, n_edits = n_drops + d, n_edits + e
            for t in THRESHOLDS:
                nocs[t].append(noc([r["iou"] for r in recs], t, max_strokes,
                                   first=recs[0]["strokes"]))
        s = dict(images=len(images), first=float(np.mean(first)), at5=float(np.mean(at5)),
                 at10=float(np.mean(at10)), time=float(np.mean(times)),
                 calls=len(times), failures=fails, drops=n_drops, edits=n_edits,
                 drop_share=n_drops / n_edits if n_edits else 0.0)
        for t in THRESHOLDS:
            key = f"noc{round(t * 100)}"
            s[key] = float(np.mean([v for v, _ in nocs[t]]))
            s[key + "_never"] = int(sum(not ok for _, ok in nocs[t]))
        out[method] = s
    return out


def table(summary: dict[str, dict], max_strokes: int, protocol: str = "strokes") -> str:
    """Markdown table of :func:`summarise` (for clicks: NoC, drops and time only)."""
    unit = "stroke" if protocol == "strokes" else "click"
    cols = ["method"]
    if protocol == "strokes":
        cols += ["IoU 1st round", "IoU@5", "IoU@10"]
    cols += ["NoC@85 (never)", "NoC@90 (never)", f"drops > {DROP * 100:g} pts",
             f"s / {unit}", "failures"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for m, s in summary.items():
        row = [m]
        if protocol == "strokes":
            row += [f"{s['first']:.3f}", f"{s['at5']:.3f}", f"{s['at10']:.3f}"]
        row += [f"{s['noc85']:.2f} ({s['noc85_never']}/{s['images']})",
                f"{s['noc90']:.2f} ({s['noc90_never']}/{s['images']})",
                f"{s['drop_share']:.1%} ({s['drops']}/{s['edits']})",
                f"{s['time']:.3f}", f"{s['failures']}/{s['calls']}"]
        lines.append("| " + " | ".join(row) + " |")
    if protocol == "strokes":
        lines.append(f"\nNoC capped at {max_strokes}; IoU@n = IoU after max(n, k) strokes; "
                     f"drops = corrective strokes after which the IoU fell by more than "
                     f"{DROP * 100:g} points (share of all corrective strokes).")
    else:
        lines.append(f"\nStandard click protocol (radius-{CLICK_RADIUS} discs at the centre of "
                     f"the largest error region); NoC capped at {max_strokes}; drops = clicks "
                     f"after which the IoU fell by more than {DROP * 100:g} points.")
    return "\n".join(lines)


def plot_curves(rows: list[dict], dataset: str, max_strokes: int, path: Path) -> bool:
    """Mean IoU vs strokes, one line per method; False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return False
    by: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        by.setdefault(r["method"], {}).setdefault(r["image"], []).append(r)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    x = np.arange(1, max_strokes + 1)
    for m, images in by.items():
        cs = np.array([curve(sorted(v, key=lambda r: r["strokes"]), max_strokes)
                       for v in images.values()])
        ax.plot(x, np.nanmean(cs, axis=0), marker=".", label=m)
    ax.set_xlabel("strokes")
    ax.set_ylabel("mean IoU" if dataset == "grabcut" else "mean of per-image mIoU")
    ax.set_title(f"{dataset}: IoU vs number of strokes")
    ax.set_xticks(x)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def tune_rw_beta(samples: list[Sample], grid: tuple[float, ...] = RW_BETA_GRID,
                 log: Callable[[str], None] = print) -> float:
    """Beta maximising the mean first-round IoU of random_walker on ``samples``."""
    scores = {}
    for beta in grid:
        vals = []
        for smp in samples:
            rec = run_interactive(
                smp, lambda s, img=smp.image, b=beta: peers.random_walker_labels(img, s, b),
                first_round_only=True)
            vals.append(rec[0]["iou"])
        scores[beta] = float(np.mean(vals))
    best = max(grid, key=lambda b: scores[b])
    log("  rw beta tuning (mean first-round IoU): "
        + ", ".join(f"{b:g}: {v:.3f}" for b, v in scores.items()) + f" -> beta={best:g}")
    return best


def _run_dataset(args: argparse.Namespace, ds: str, data: Path, out: Path, limit: int | None,
                 max_side: int | None, clicks: bool, all_rows: list[dict],
                 summaries: dict[str, dict], notes: dict[str, str]) -> None:
    """Every requested method on one dataset; tables written, rows appended to ``all_rows``."""
    if not (data / DATASETS[ds] / "index.json").is_file():
        print(f"note: {ds} skipped: {data / DATASETS[ds]} has no index.json")
        return
    samples = list(load(data, ds, args.scale, max_side, limit, args.every))
    print(f"\n== {ds}: {len(samples)} images, "
          f"{samples[0].image.shape[1]}×{samples[0].image.shape[0]} (first) ==")
    beta = args.rw_beta
    if {"rw_tuned", "rw_tuned_tv"} & set(args.methods) and beta is None:
        beta = tune_rw_beta(samples, RW_BETA_GRID[:2] if args.quick else RW_BETA_GRID)
        notes[f"{ds}_rw_beta"] = f"{beta:g}"
    methods = peers.registry(args.methods, rw_beta=beta, segapp_mode=args.segapp_mode)
    rows: list[dict] = []
    for name, method in methods.items():
        if method.binary_only and not all(s.binary for s in samples):
            print(f"note: {name} skipped on {ds} (binary only)")
            continue
        t0 = time.perf_counter()
        for smp in samples:
            if clicks:
                recs = run_clicks(smp, method.start(smp.image),
                                  3 if args.quick else args.max_strokes,
                                  rule=args.click_rule)
            else:
                recs = run_interactive(smp, method.start(smp.image), args.max_strokes,
                                       first_round_only=args.quick, seed=args.seed)
            for r in recs:
                rows.append(dict(dataset=ds, image=smp.id, method=name, **r))
        # A one-line summary at once: a long run that is stopped early still leaves its figures.
        m = summarise([r for r in rows if r["method"] == name], args.max_strokes)[name]
        print(f"  {name:12s} done in {time.perf_counter() - t0:7.1f} s: NoC@85 "
              f"{m['noc85']:.2f}, NoC@90 {m['noc90']:.2f} ({m['noc90_never']} never), drops "
              f"{m['drops']}/{m['edits']}", flush=True)
    if args.robot == "both" and not clicks:
        # The "where to paint next" robot beside the oracle (issue 22): segapp variants only,
        # as a row "<name>+unsure"; the first round is the same strokes.
        for name in methods:
            if name not in peers.SEGAPP_VARIANTS:
                continue
            method, opts, _ = peers.SEGAPP_VARIANTS[name]
            pre = peers.PREFILTERS.get(name)
            t0 = time.perf_counter()
            for smp in samples:
                image = pre(smp.image) if pre is not None else smp.image
                recs = run_interactive(smp, confidence_session(image, method, **opts),
                                       args.max_strokes, first_round_only=args.quick,
                                       seed=args.seed, robot_rule="unsure")
                for r in recs:
                    rows.append(dict(dataset=ds, image=smp.id, method=f"{name}+unsure", **r))
            m = summarise([r for r in rows if r["method"] == f"{name}+unsure"],
                          args.max_strokes)[f"{name}+unsure"]
            print(f"  {name + '+unsure':12s} done in {time.perf_counter() - t0:7.1f} s: NoC@85 "
                  f"{m['noc85']:.2f}, NoC@90 {m['noc90']:.2f} ({m['noc90_never']} never), "
                  f"drops {m['drops']}/{m['edits']}", flush=True)
    summaries[ds] = summarise(rows, args.max_strokes)
    text = table(summaries[ds], args.max_strokes, args.protocol)
    desc = "\n".join(f"- `{m.name}`: {m.description}" for m in methods.values())
    stem = f"{'clicks' if clicks else 'quality'}_{ds}"
    (out / f"{stem}.md").write_text(f"## {ds}\n\n{text}\n\n{desc}\n")
    print(f"\n## {ds} ({args.protocol})\n\n{text}")
    # Click runs stop at NoC@90, so their per-click curves would be carried-forward values.
    if not clicks:
        if plot_curves(rows, ds, args.max_strokes, out / f"curves_{ds}.png"):
            print(f"curves: {out / f'curves_{ds}.png'}")
        else:
            print("note: matplotlib not importable, no curves (optional extra)")
    all_rows += rows


# -- command line ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="data directory (default: ../shared/data from the repo)")
    ap.add_argument("--dataset", choices=("bsds", "grabcut", "all"), default="all")
    ap.add_argument("--methods", nargs="+", default=list(peers.ALL_METHODS),
                    help=f"methods or groups ({', '.join(peers.METHOD_GROUPS)}); default: "
                         f"{' '.join(peers.ALL_METHODS)}; family: "
                         f"{' '.join(peers.FAMILY_METHODS)}")
    ap.add_argument("--max-strokes", type=int, default=20)
    ap.add_argument("--protocol", choices=("strokes", "clicks"), default="strokes",
                    help="the stroke robot (default) or the standard click protocol of the "
                         "literature (binary: GrabCut only; full resolution by default)")
    ap.add_argument("--click-rule", choices=("area", "depth"), default="area",
                    help="clicks: largest error component by area (Xu et al. 2016) or by "
                         "inscribed disc (the f-BRS / RITM evaluation clicker)")
    ap.add_argument("--robot", choices=("error", "both"), default="error",
                    help="strokes: the oracle robot only (largest error), or also the 'where "
                         "to paint next' robot (least-confident area, no ground truth needed "
                         "to choose it) for segapp variants, as rows NAME+unsure")
    ap.add_argument("--scale", type=float,
                    help="image resize factor (<= 1); default 0.5 for strokes, 1 for clicks")
    ap.add_argument("--limit", type=int, help="use the first N images of each dataset")
    ap.add_argument("--every", type=int, default=1,
                    help="use every N-th image of each dataset (a subset spanning all k)")
    ap.add_argument("--rw-beta", type=float,
                    help="beta of rw_tuned (default: tuned per dataset on the first round)")
    ap.add_argument("--segapp-mode", choices=("session", "segment"), default="session",
                    help="one warm-started segapp Session per image (as in the app) or a "
                         "fresh segapp.segment per stroke")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--blas-threads", type=int, default=1,
                    help="BLAS threads for every method (0 = the library default); on the "
                         "shared 2-core machine random_walker ran 3-4x slower with OpenBLAS's "
                         "default threads than with one")
    ap.add_argument("--quick", action="store_true",
                    help="2 small images per dataset, first round only (CI smoke test)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    args = ap.parse_args(argv)
    args.methods = peers.expand_methods(args.methods)
    clicks = args.protocol == "clicks"
    if args.scale is None:
        args.scale = 1.0 if clicks else 0.5

    data = find_data(args.data)
    if data is None or not data.is_dir():
        print(f"error: data directory not found ({args.data or '../shared/data'}); "
              "pass --data DIR", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    datasets = ["bsds", "grabcut"] if args.dataset == "all" else [args.dataset]
    if clicks:
        if "bsds" in datasets:
            print("note: bsds skipped: the click protocol is binary (object vs background)")
        datasets = [d for d in datasets if d != "bsds"]
    limit, max_side = args.limit, None
    if args.quick:
        limit, max_side = min(limit or 2, 2), 96
    t_all = time.perf_counter()
    print(f"data: {data}  protocol: {args.protocol}  scale: {args.scale}  "
          f"max {'clicks' if clicks else 'strokes'}: {args.max_strokes}"
          f"{'  (quick: first round only)' if args.quick else ''}")

    all_rows: list[dict] = []
    summaries: dict[str, dict] = {}
    notes: dict[str, str] = {}
    # threadpoolctl only limits the BLAS libraries already loaded: scipy ships its own OpenBLAS,
    # loaded by scipy.linalg (random_walker, pyamg), so load it before limiting.
    import scipy.linalg  # noqa: F401
    with (threadpool_limits(limits=args.blas_threads, user_api="blas") if args.blas_threads > 0
          else nullcontext()):
        for ds in datasets:
            _run_dataset(args, ds, data, out, limit, max_side, clicks, all_rows, summaries,
                         notes)

    fields = ["dataset", "image", "method", "strokes", "kind", "iou", "time", "failed", "error"]
    csv_path = out / ("per_click.csv" if clicks else "per_stroke.csv")
    with open(csv_path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for r in all_rows:
            w.writerow({k: (f"{r[k]:.5f}" if isinstance(r[k], float) else r[k]) for k in fields})
    total = time.perf_counter() - t_all
    (out / ("summary_clicks.json" if clicks else "summary.json")).write_text(json.dumps(
        dict(summaries=summaries, notes=notes, seconds=total, scale=args.scale,
             protocol=args.protocol, click_rule=args.click_rule if clicks else None,
             max_strokes=args.max_strokes, quick=args.quick), indent=1))
    print(f"\nper-{args.protocol[:-1]} CSV: {csv_path}\ntotal time: {total:.1f} s"
          + (" (" + ", ".join(f"{k}={v}" for k, v in notes.items()) + ")" if notes else ""))
    return 0 if all_rows else 1


if __name__ == "__main__":
    sys.exit(main())
