"""Large-image benchmark: the landmark methods against FAST-GE's working copy and random_walker.

The landmark (sparse-coding) methods are segapp's route to very large images: they keep
O(r) numbers per pixel and solve a p×p eigenproblem, so :class:`segapp.Session` runs them at
full resolution (``full_resolution = True``), while FAST-GE is run on an area-averaged working
copy of at most ``max_pixels`` (0.5 MP) pixels and its labels are brought back by nearest
neighbour. This benchmark measures both routes on the same upscaled photo and strokes.

Protocol
--------
Image and ground truth
    One BSDS500 scene of the shared evaluation data (``--image``, default ``16004``: 481×321,
    k = 5 human regions) is upscaled to each size of ``--sizes`` (default about 0.25, 1, 3
    and 12 MP, aspect ratio kept: 12 MP is 4243×2828) with
    :func:`skimage.transform.resize` (bilinear, no anti-aliasing; with anti-aliasing when a
    size is below the original). Its ground truth is upscaled by nearest neighbour (the same
    index map as the strokes). Upscaling adds no detail: the large images are smoother than
    a real 12 MP photo of the scene would be.
Strokes
    :class:`benchmarks.robot.Robot` (seed ``--seed``) draws its first round (one stroke per
    region, 5 px wide) on the original 481×321 ground truth, exactly as
    :mod:`benchmarks.quality` does; the second stroke is the robot's corrective stroke against
    the result of ``segapp.segment`` (FAST-GE, defaults) at the original size. Both stroke maps
    are scaled to every size by nearest neighbour (the same index map as the ground truth), so
    every size sees the same strokes, scaled (about 44 px wide at 12 MP), and every method the
    same strokes.
Measurement
    Every (method, size) runs in a fresh Python subprocess: it loads the prepared arrays
    (float32 image, int32 strokes and ground truth), runs a tiny warm-up segmentation (imports,
    caches), records its resident size as the baseline, then

    * **first**: wall time of ``Session(image, method=m, max_pixels=--max-pixels)`` plus the
      first ``update(strokes)`` — what a user waits for after opening the photo and painting
      the first strokes (graph / landmarks, coding, AMG set-up, solve, k-means, and for
      FAST-GE the reduction to the working copy and the transfer back);
    * **second**: wall time of the next ``update`` with the corrective stroke added (warm: the
      session keeps its graph / landmark coding and previous vectors);
    * **peak**: the process's peak resident size at the end (whole process: interpreter,
      libraries, input arrays included), as MB and bytes per pixel, and **Δ B/px**: the peak
      above the baseline per pixel — what the method itself adds. The peak is ``VmHWM`` of
      ``/proc/self/status``, not ``getrusage(RUSAGE_SELF).ru_maxrss``: on Linux a process
      started by fork + exec inherits in ``ru_maxrss`` its parent's resident size at the fork
      (measured: a worker of a 400 MB parent reports 418 MB, its ``VmHWM`` 14 MB), so
      ``ru_maxrss`` is only right when the worker outgrows the benchmark's own process. It is
      kept in the CSV (``ru_maxrss_mb``) for comparison;
    * **IoU1**, **IoU2**: mean IoU over ground-truth regions after the first and the second
      update (:func:`benchmarks.robot.mean_iou`, as :mod:`benchmarks.quality` scores BSDS).

    Methods: ``fastge`` and every registered method whose class has ``full_resolution =
    True`` plus ``landmark``, ``ensemble`` and ``scacs`` (``ensemble`` declares
    ``full_resolution = False``: it runs on the working copy like FAST-GE; the ``work`` column
    shows the pixels each method really solved on). The peer is scikit-image's
    ``random_walker(mode='cg_mg')`` (default beta, colour; as :mod:`benchmarks.peers` calls it)
    on the same image and strokes: first = one call with the first strokes, second = a fresh
    call with both (it has no warm start); ``ratio`` = a method's first / random_walker's first
    at the same size. A run that exceeds ``--timeout`` (random_walker: ``--rw-timeout``,
    default 300 s) is killed and reported; random_walker is not tried at larger sizes after a
    timeout. Each worker's address space is capped at ``--mem-limit`` GB.
Agreement at 250K
    For ``--agree-images`` BSDS dev images (evenly spaced in the index, default 6), each
    upscaled to ``--agree-size`` (250K) pixels with the robot's first-round strokes (scaled as
    above): the fraction of pixels where each landmark method's labels equal FAST-GE's at full
    resolution (``max_pixels=None``) on the same strokes; mean and minimum over the images, and
    the mean IoU of both against the ground truth.

Usage::

    python benchmarks/large.py                   # 0.25/1/3/12 MP + agreement, ~15 min on 2 cores
    python benchmarks/large.py --sizes 250K 1M --methods fastge landmark
    python benchmarks/large.py --quick           # smoke run: 40K px, fastge + landmark + rw

Outputs in ``--out`` (default ``benchmarks/out``): ``large.csv`` (one row per size and
method), ``large_agreement.csv`` (one row per image and method) and ``large.md`` (both tables).
Absolute times on a shared machine are noisy (the 1-minute load average is recorded per run):
the size sweep took 9 min at load ≈ 1.5 and 35 min at load 3-7 (agreement: 8 min at load 3),
where the landmark methods slowed down 3-8× (their dense p×p algebra runs on every BLAS thread,
which oversubscribed cores punish; FAST-GE limits itself to one).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import quality  # noqa: E402
from benchmarks.robot import Robot, mean_iou, paint  # noqa: E402

DEFAULT_SIZES = ("250K", "1M", "3M", "12M")
DEFAULT_IMAGE = "16004"
#: Methods measured whether or not their class says full_resolution (if registered).
LANDMARK_METHODS = ("landmark", "ensemble", "scacs")
PEER = "rw"


# -- sizes, methods --------------------------------------------------------------------------
def parse_size(token: str) -> int:
    """``"250K"`` → 250000, ``"1.1M"`` → 1100000, ``"40000"`` → 40000."""
    t = str(token).strip().upper()
    mult = {"K": 1_000, "M": 1_000_000}.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mult > 1 else t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {token!r}: use e.g. 250K, 3M, 40000")
    if value < 64:
        raise argparse.ArgumentTypeError(f"size {token!r} is too small")
    return int(round(value))


def size_label(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.3g}M"
    return f"{n / 1e3:.3g}K"


def landmark_family() -> list[str]:
    """Registered methods meant for large images: landmark, ensemble, scacs, and any method
    whose class has ``full_resolution = True`` (in registry order)."""
    from segapp.methods import REGISTRY
    return [name for name, cls in REGISTRY.items()
            if name != "fastge" and (name in LANDMARK_METHODS
                                     or getattr(cls, "full_resolution", False))]


def scaled_shape(shape: tuple[int, int], pixels: int) -> tuple[int, int]:
    H, W = shape
    f = np.sqrt(pixels / (H * W))
    return max(2, round(H * f)), max(2, round(W * f))


def nearest(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resampling of a label map (the index map shared by strokes and gt)."""
    H, W = values.shape
    h, w = shape
    yi = np.minimum((np.arange(h) * H) // h, H - 1)
    xi = np.minimum((np.arange(w) * W) // w, W - 1)
    return values[yi[:, None], xi[None, :]]


def resize_image(image: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    from skimage.transform import resize
    down = shape[0] * shape[1] < image.shape[0] * image.shape[1]
    out = resize(image, tuple(shape) + image.shape[2:], order=1, anti_aliasing=down)
    return np.clip(out, 0, 1).astype(np.float32)


# -- the case: image, ground truth, strokes ----------------------------------------------------
def load_sample(data: Path, image_id: str | None) -> quality.Sample:
    """The BSDS dev sample ``image_id`` at its original size (the first one if None/absent)."""
    samples = list(quality.load(data, "bsds"))
    if not samples:
        raise SystemExit(f"error: no BSDS images in {data}")
    for s in samples:
        if s.id == image_id:
            return s
    if image_id not in (None, DEFAULT_IMAGE):
        raise SystemExit(f"error: image {image_id!r} not in {data / 'bsds-dev'}")
    return samples[0]


def first_strokes(gt: np.ndarray, seed: int) -> np.ndarray:
    """The robot's first round (one stroke per region) as a stroke map."""
    s = np.zeros(gt.shape, np.int32)
    for stroke in Robot(seed=seed).first_round(gt):
        s = paint(s, stroke)
    return s


def native_strokes(sample: quality.Sample, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """First-round strokes and those plus one corrective stroke, at the original size.

    The corrective stroke is the robot's answer to FAST-GE's result at the original size; if
    that result is already perfect, a stroke in the middle of the largest region is used.
    """
    import segapp
    robot = Robot(seed=seed)
    s1 = np.zeros(sample.gt.shape, np.int32)
    for stroke in robot.first_round(sample.gt):
        s1 = paint(s1, stroke)
    pred = segapp.segment(sample.image, s1).labels
    stroke = robot.corrective(sample.gt, pred, s1)
    how = "robot's corrective stroke against FAST-GE at the original size"
    if stroke is None:
        big = int(np.argmax(np.bincount(sample.gt.ravel())))
        stroke = robot.stroke_in((sample.gt == big) & (s1 == 0), big + 1, robot.corrective_length,
                                 "corrective")
        how = "FAST-GE perfect at the original size: a stroke inside the largest region"
    return s1, paint(s1, stroke), how


def prepare_case(sample: quality.Sample, s1: np.ndarray, s2: np.ndarray, pixels: int,
                 directory: Path) -> tuple[int, int]:
    """Write image.npy, gt.npy, s1.npy, s2.npy at ``pixels``; returns the shape."""
    shape = scaled_shape(sample.gt.shape, pixels)
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "image.npy", resize_image(sample.image, shape))
    np.save(directory / "gt.npy", nearest(sample.gt, shape).astype(np.int32))
    np.save(directory / "s1.npy", nearest(s1, shape).astype(np.int32))
    np.save(directory / "s2.npy", nearest(s2, shape).astype(np.int32))
    return shape


# -- worker (one method, one size, one fresh process) ----------------------------------------
def _maxrss() -> int:
    """``getrusage(RUSAGE_SELF).ru_maxrss`` in bytes (Linux reports KiB, macOS bytes)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(r) * (1 if sys.platform == "darwin" else 1024)


def _status(key: str) -> int | None:
    """A ``/proc/self/status`` memory field (``VmHWM``, ``VmRSS``) in bytes; None if absent."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_rss() -> int:
    """Peak resident set size of this process's own address space, in bytes.

    ``VmHWM`` where /proc exists: on Linux ``ru_maxrss`` of a process started by fork + exec
    is at least the parent's resident size at the fork (the kernel carries the old address
    space's high-water mark over exec), so a worker of a 400 MB parent reports ≥ 400 MB
    however little it uses. Elsewhere ``ru_maxrss``.
    """
    hwm = _status("VmHWM")
    return _maxrss() if hwm is None else hwm


def current_rss() -> int:
    rss = _status("VmRSS")
    return _maxrss() if rss is None else rss


def random_walker(image: np.ndarray, scribbles: np.ndarray) -> np.ndarray:
    from benchmarks.peers import random_walker_labels
    return random_walker_labels(image, scribbles)


def method_options(method: str, options: dict) -> dict:
    """The subset of ``options`` that segapp method ``method`` accepts."""
    from segapp.methods import option_names
    names = option_names(method)
    return {k: v for k, v in options.items() if k in names}


def parse_option(token: str) -> tuple[str, object]:
    """``NAME=VALUE`` with VALUE read as JSON when it parses (numbers, true, null), else text."""
    name, sep, value = token.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"bad option {token!r}: use NAME=VALUE")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def worker(method: str, case: Path, max_pixels: int | None, mem_limit_gb: float,
           options: dict | None = None) -> dict:
    """Measure ``method`` on the case in ``case``; a dict of results (see module notes)."""
    opts = {} if method == PEER else method_options(method, options or {})
    if mem_limit_gb > 0:
        lim = int(mem_limit_gb * 2 ** 30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    import segapp
    image = np.load(case / "image.npy")
    gt = np.load(case / "gt.npy")
    s1 = np.load(case / "s1.npy")
    s2 = np.load(case / "s2.npy")
    # warm-up: imports, kernels, caches (a 48×64 two-band image)
    tiny = np.zeros((48, 64, 3), np.float32)
    tiny[:, 32:] = 0.8
    ts = np.zeros((48, 64), np.int32)
    ts[24, 4:12], ts[24, 44:52] = 1, 2
    if method == PEER:
        random_walker(tiny, ts)
    else:
        segapp.segment(tiny, ts, method=method, **opts)
    base = current_rss()
    load = os.getloadavg()[0]
    row: dict = dict(method=method, pixels=int(gt.size), height=gt.shape[0], width=gt.shape[1],
                     k=int(len(np.unique(gt))), load=load)
    if method == PEER:
        t = time.perf_counter()
        l1 = random_walker(image, s1)
        row["first"] = time.perf_counter() - t
        t = time.perf_counter()
        l2 = random_walker(image, s2)
        row["second"] = time.perf_counter() - t
        row["work"] = int(gt.size)
        row["stages"] = {}
    else:
        t = time.perf_counter()
        sess = segapp.Session(image, method=method, max_pixels=max_pixels, **opts)
        r1 = sess.update(s1)
        row["first"] = time.perf_counter() - t
        l1 = np.asarray(r1.labels)
        row["stages"] = {k: round(float(v), 4) for k, v in r1.timings.items()}
        t = time.perf_counter()
        r2 = sess.update(s2)
        row["second"] = time.perf_counter() - t
        l2 = np.asarray(r2.labels)
        row["work"] = int(np.prod(sess.working_shape))
    row["peak"] = peak_rss()
    row["ru_maxrss"] = _maxrss()
    row["base"] = base
    row["iou1"] = mean_iou(l1, gt)
    row["iou2"] = mean_iou(l2, gt)
    return row


def run_worker(method: str, case: Path, max_pixels: int | None, mem_limit_gb: float,
               timeout: float, options: dict | None = None) -> dict:
    """Run :func:`worker` in a fresh interpreter; ``status`` is "ok", "timeout" or "error"."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", method, "--case", str(case),
           "--max-pixels", str(max_pixels or 0), "--mem-limit", str(mem_limit_gb),
           "--options-json", json.dumps(options or {})]
    t = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(method=method, status="timeout",
                    note=f"killed after {time.perf_counter() - t:.0f} s (timeout {timeout:g} s)")
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return {**json.loads(line[7:]), "status": "ok", "note": ""}
    err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return dict(method=method, status="error", note=f"exit {proc.returncode}: {err[:160]}")


# -- agreement with FAST-GE at one size ------------------------------------------------------
def agreement(data: Path, methods: list[str], n_images: int, pixels: int, seed: int,
              options: dict | None = None, log=print) -> list[dict]:
    """Label agreement of each method with full-resolution FAST-GE (module notes)."""
    import segapp
    samples = list(quality.load(data, "bsds"))
    pick = sorted(set(np.linspace(0, len(samples) - 1, min(n_images, len(samples)))
                      .round().astype(int).tolist()))
    rows = []
    for i in pick:
        smp = samples[i]
        shape = scaled_shape(smp.gt.shape, pixels)
        img = resize_image(smp.image, shape)
        gt = nearest(smp.gt, shape)
        s = nearest(first_strokes(smp.gt, seed), shape)
        t = time.perf_counter()
        ref = np.asarray(segapp.segment(img, s, max_pixels=None,
                                        **method_options("fastge", options or {})).labels)
        t_ref = time.perf_counter() - t
        iou_ref = mean_iou(ref, gt)
        for m in methods:
            t = time.perf_counter()
            lab = np.asarray(segapp.segment(img, s, method=m,
                                            **method_options(m, options or {})).labels)
            rows.append(dict(image=smp.id, k=smp.k, pixels=int(gt.size), method=m,
                             agree=float(np.mean(lab == ref)), iou=mean_iou(lab, gt),
                             iou_fastge=iou_ref, time=time.perf_counter() - t,
                             time_fastge=t_ref))
        log(f"  agreement {smp.id} (k={smp.k}, {shape[1]}×{shape[0]}): "
            + ", ".join(f"{r['method']} {r['agree']:.1%}" for r in rows[-len(methods):]))
    return rows


# -- tables ----------------------------------------------------------------------------------
SIZE_FIELDS = ["size", "pixels", "height", "width", "k", "method", "status", "work", "first",
               "second", "ratio", "peak_mb", "bytes_per_px", "delta_bytes_per_px", "iou1", "iou2",
               "load", "ru_maxrss_mb", "stages", "note"]


def finish_rows(rows: list[dict]) -> None:
    """Derived columns: ratio vs random_walker at the same size, memory per pixel."""
    rw = {r["size"]: r["first"] for r in rows if r["method"] == PEER and r["status"] == "ok"}
    for r in rows:
        if r["status"] != "ok":
            continue
        r["peak_mb"] = r["peak"] / 2 ** 20
        r["ru_maxrss_mb"] = r["ru_maxrss"] / 2 ** 20
        r["bytes_per_px"] = r["peak"] / r["pixels"]
        r["delta_bytes_per_px"] = (r["peak"] - r["base"]) / r["pixels"]
        r["ratio"] = r["first"] / rw[r["size"]] if r["size"] in rw else None


def size_table(rows: list[dict]) -> str:
    head = (f"{'size':>5} {'pixels':>9} {'method':>9} {'work':>9} | {'first':>7} "
            f"{'second':>7} {'ratio':>6} | {'peak MB':>7} {'B/px':>6} {'ΔB/px':>6} | "
            f"{'IoU1':>5} {'IoU2':>5} | {'load':>4}")
    lines = [head, "-" * len(head)]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"{r['size']:>5} {r.get('pixels', 0):>9} {r['method']:>9} "
                         f"{'':>9} | {r['status']}: {r['note']}")
            continue
        ratio = f"{r['ratio']:5.2f}x" if r.get("ratio") else f"{'-':>6}"
        lines.append(
            f"{r['size']:>5} {r['pixels']:>9} {r['method']:>9} {r['work']:>9} | "
            f"{r['first']:7.2f} {r['second']:7.2f} {ratio} | {r['peak_mb']:7.0f} "
            f"{r['bytes_per_px']:6.0f} {r['delta_bytes_per_px']:6.0f} | {r['iou1']:.3f} "
            f"{r['iou2']:.3f} | {r['load']:4.1f}")
    return "\n".join(lines)


def agreement_table(rows: list[dict]) -> str:
    head = (f"{'method':>9} {'images':>6} | {'agree mean':>10} {'min':>6} | "
            f"{'IoU':>5} {'IoU fastge':>10} | {'s/call':>6} {'fastge':>6}")
    lines = [head, "-" * len(head)]
    for m in dict.fromkeys(r["method"] for r in rows):
        rs = [r for r in rows if r["method"] == m]
        a = np.array([r["agree"] for r in rs])
        lines.append(
            f"{m:>9} {len(rs):>6} | {a.mean():10.1%} {a.min():6.1%} | "
            f"{np.mean([r['iou'] for r in rs]):.3f} {np.mean([r['iou_fastge'] for r in rs]):10.3f}"
            f" | {np.mean([r['time'] for r in rs]):6.2f} "
            f"{np.mean([r['time_fastge'] for r in rs]):6.2f}")
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict], fields: list[str]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.5g}" if isinstance(v, float) else
                            json.dumps(v) if isinstance(v, dict) else
                            "" if v is None else v)
                        for k, v in ((f, r.get(f)) for f in fields)})


# -- command line ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", help="data directory (default: ../shared/data from the repo)")
    ap.add_argument("--image", default=DEFAULT_IMAGE, help="BSDS dev image id of the size sweep")
    ap.add_argument("--sizes", nargs="+", type=parse_size,
                    help=f"pixel counts (default {' '.join(DEFAULT_SIZES)}; --quick 40K)")
    ap.add_argument("--methods", nargs="+",
                    help="segapp methods (default: fastge and the landmark family)")
    ap.add_argument("--no-peer", action="store_true", help="skip random_walker")
    ap.add_argument("--max-pixels", type=int, default=None,
                    help="Session working-copy limit (default segapp's, 500000; 0 = none)")
    ap.add_argument("--timeout", type=float, default=900.0, help="s per segapp worker")
    ap.add_argument("--rw-timeout", type=float, default=300.0, help="s per random_walker worker")
    ap.add_argument("--mem-limit", type=float, default=16.0,
                    help="address-space cap per worker in GB (0 = none)")
    ap.add_argument("--agree-size", type=parse_size, help="default 250K (--quick 40K)")
    ap.add_argument("--agree-images", type=int, help="default 6 (--quick 2); 0 = skip")
    ap.add_argument("--seed", type=int, default=0, help="robot seed")
    ap.add_argument("--option", action="append", type=parse_option, default=[],
                    metavar="NAME=VALUE",
                    help="segapp option, given to every method that accepts it (repeatable), "
                         "e.g. --option n_landmarks=500")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: one 40K size, fastge + landmark, 2 agreement images")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--options-json", default="{}", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.worker:  # internal: one measurement in this fresh process
        row = worker(a.worker, Path(a.case), a.max_pixels or None, a.mem_limit,
                     json.loads(a.options_json))
        print("RESULT " + json.dumps(row), flush=True)
        return 0

    import segapp
    from segapp.inputs.resolution import DEFAULT_MAX_PIXELS
    max_pixels = DEFAULT_MAX_PIXELS if a.max_pixels is None else (a.max_pixels or None)
    family = landmark_family()
    if a.quick:  # explicit options win
        a.sizes = a.sizes or [40_000]
        a.agree_size = a.agree_size or 40_000
        a.agree_images = 2 if a.agree_images is None else a.agree_images
        a.methods = a.methods or ["fastge", "landmark"]
        if a.max_pixels is None:
            max_pixels = 20_000  # so the working-copy route of FAST-GE is exercised too
    a.sizes = a.sizes or [parse_size(s) for s in DEFAULT_SIZES]
    a.agree_size = a.agree_size or 250_000
    a.agree_images = 6 if a.agree_images is None else a.agree_images
    methods = a.methods or ["fastge"] + family
    unknown = [m for m in methods if m not in segapp.methods.REGISTRY]
    for m in unknown:
        print(f"note: {m} skipped: not a registered segapp method "
              f"({', '.join(segapp.methods.REGISTRY)})")
    methods = [m for m in methods if m not in unknown]
    data = quality.find_data(a.data)
    if data is None or not (data / "bsds-dev" / "index.json").is_file():
        print(f"error: BSDS dev data not found ({a.data or '../shared/data'}); pass --data DIR",
              file=sys.stderr)
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()

    sample = load_sample(data, a.image)
    s1, s2, how = native_strokes(sample, a.seed)
    H, W = sample.gt.shape
    print(f"segapp {segapp.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"BSDS {sample.id} ({W}×{H}, k={sample.k}) upscaled bilinearly, ground truth and "
          f"strokes by nearest neighbour;\nstrokes: robot first round (seed {a.seed}, "
          f"{len(np.unique(s1)) - 1} strokes) + {how}; FAST-GE working copy "
          f"max_pixels={max_pixels}; times in seconds, one run each")
    options = dict(a.option)
    for m in methods:
        cls = segapp.methods.REGISTRY[m]
        print(f"  {m}: full_resolution={getattr(cls, 'full_resolution', False)}, "
              f"options {method_options(m, options) or 'default'}")
    unused = set(options) - set().union(*(segapp.methods.option_names(m) for m in methods))
    if unused:
        print(f"error: no method takes option(s) {', '.join(sorted(unused))}", file=sys.stderr)
        return 2

    rows: list[dict] = []
    rw_stop: str | None = None
    with tempfile.TemporaryDirectory(prefix="segapp_large_") as tmp:
        for n in sorted(a.sizes):
            case = Path(tmp) / f"case_{n}"
            h, w = prepare_case(sample, s1, s2, n, case)
            label = size_label(h * w)
            todo = methods + ([] if a.no_peer else [PEER])
            for m in todo:
                if m == PEER and rw_stop:
                    rows.append(dict(size=label, pixels=h * w, method=m, status="skipped",
                                     note=rw_stop))
                    print(f"  note: {PEER} skipped at {label}: {rw_stop}", flush=True)
                    continue
                r = run_worker(m, case, max_pixels, a.mem_limit,
                               a.rw_timeout if m == PEER else a.timeout, options)
                r.update(size=label)
                r.setdefault("pixels", h * w)
                rows.append(r)
                if m == PEER and r["status"] == "timeout":
                    rw_stop = f"timed out at {label} ({r['note']})"
                msg = (f"first {r['first']:.2f} s, second {r['second']:.2f} s, "
                       f"IoU {r['iou1']:.3f}/{r['iou2']:.3f}, peak {r['peak'] / 2**20:.0f} MB"
                       if r["status"] == "ok" else f"{r['status']}: {r['note']}")
                print(f"  {label:>5} {m:9s} {msg}", file=sys.stderr, flush=True)
            for f in case.iterdir():
                f.unlink()
    finish_rows(rows)
    text = size_table(rows)
    print("\n" + text)
    legend = (
        "first = Session(image) + first update (s); second = the next update with one corrective "
        "stroke (warm; rw: a fresh call);\nwork = pixels the method solved on (FAST-GE and "
        "ensemble: the working copy); ratio = first / rw first; peak = peak RSS (VmHWM) of\n"
        "the worker process (interpreter and input arrays included), B/px = peak / pixels, ΔB/px = "
        "(peak - rss before the session) / pixels;\nIoU1/IoU2 = mean IoU over ground-truth "
        "regions after the first / second update; load = 1-min load average at the start.")
    print(legend)
    write_csv(out / "large.csv", rows, SIZE_FIELDS)

    agree_rows: list[dict] = []
    agree_methods = [m for m in methods if m != "fastge"]
    if a.agree_images > 0 and agree_methods:
        print(f"\nagreement with FAST-GE (full resolution) at {size_label(a.agree_size)}, "
              f"first-round robot strokes:", flush=True)
        agree_rows = agreement(data, agree_methods, a.agree_images, a.agree_size, a.seed,
                               options)
        atext = agreement_table(agree_rows)
        print("\n" + atext)
        print("agree = fraction of pixels with FAST-GE's label (max_pixels=None); IoU = mean IoU "
              "vs ground truth; s/call = segapp.segment wall time.")
        write_csv(out / "large_agreement.csv", agree_rows,
                  ["image", "k", "pixels", "method", "agree", "iou", "iou_fastge", "time",
                   "time_fastge"])
    total = time.perf_counter() - t_all
    md = [f"# Large images ({time.strftime('%Y-%m-%d')}, {total:.0f} s)\n",
          f"BSDS {sample.id} ({W}×{H}, k={sample.k}), strokes: robot first round + {how}; "
          f"max_pixels={max_pixels}; options {options or 'default'}.\n", "```", text, "```", "", legend.replace("\n", " ")]
    if agree_rows:
        md += ["", f"## Agreement with full-resolution FAST-GE at {size_label(a.agree_size)}",
               "", "```", agreement_table(agree_rows), "```"]
    (out / "large.md").write_text("\n".join(md) + "\n")
    print(f"\n{out / 'large.csv'}, {out / 'large.md'}; total time {total:.0f} s")
    return 0 if rows and all(r["status"] in ("ok", "skipped", "timeout") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
