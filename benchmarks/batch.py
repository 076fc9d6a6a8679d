"""Batch throughput: images per minute serially, on a local process pool and on a LocalCluster.

Protocol
--------
Inputs
    :func:`make_pairs` writes ``--images`` (default 20) image/scribble pairs into a temporary
    folder, made from the four bundled samples (``sample_images/*.jpg`` with
    ``*_scribbles.png``) in five variants each: as is, mirrored, a centred 75 % crop, enlarged
    ×1.4 (astronaut then has 0.51 MP, so it is solved on the 0.5 MP working copy) and rotated by
    90°. Images are saved as JPEG (quality 95), scribbles as label-id PNGs transformed with the
    same geometry (strokes reduced so that thin strokes survive). Nothing is committed.
Modes
    ``serial`` (this process, one task after another), ``pool`` (``segapp batch``'s default:
    a ``spawn`` process pool of ``--workers`` processes) and ``dask`` (a ``LocalCluster`` of
    ``--workers`` single-threaded worker processes, as ``--scheduler local``). Each mode
    starts its workers and imports segapp in them first (**start** column, not counted in the
    rate), then runs :func:`segapp.batch.run_batch` on all pairs into a fresh folder (**wall**;
    **task s** is the mean time inside one task — read, segment, write — so that
    wall − task × images / workers is what the executor itself costs).
    Every task pins BLAS to one thread. The modes run interleaved ``--repeat`` times (the
    order rotates) and the table shows medians, so machine load hits all of them alike.
    The label maps of every mode are compared with the serial run's (**identical**).
Per image
    From the serial runs: mean seconds per image and the largest peak resident memory of a
    worker (``VmHWM``) in the pool runs. ``--photo-mp`` (default 12; 0 skips) also segments two
    photo-sized images (coffee and astronaut enlarged to that many megapixels, with their
    strokes) serially in a fresh one-process pool, to measure what a real photo costs: decode,
    reduction to the 0.5 MP working copy, solve, enlargement of the result, PNG encode.
100K estimate
    From those per-image figures: hours and cost of 100 000 images on N one-CPU workers,
    assuming perfect scaling (independent tasks; the per-task overhead of Dask is measured in
    the table) and a price per worker-hour given by ``--price`` (an assumption, not a
    measurement: default 0.05 USD for one vCPU with the memory measured, on demand).

Usage::

    nice python benchmarks/batch.py                  # 20 pairs × 3 modes × 3 repeats + photos
    python benchmarks/batch.py --images 8 --repeat 1 --photo-mp 0     # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

VARIANTS = ("orig", "mirror", "crop75", "up140", "rot90")
MODES = ("serial", "pool", "dask")


# -- inputs ----------------------------------------------------------------------------------
def _resize_pair(image: np.ndarray, strokes: np.ndarray,
                 shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Image (area-averaged or bilinear) and strokes (no stroke lost) at ``shape``."""
    from skimage.transform import resize

    from segapp.inputs.resolution import reduce_map
    H, W = strokes.shape
    h, w = shape
    small = h * w < H * W
    img = resize(image, (h, w) + image.shape[2:], anti_aliasing=small, preserve_range=True)
    if small:
        s = reduce_map(strokes, (h, w))
    else:
        s = strokes[(np.arange(h) * H // h)[:, None], (np.arange(w) * W // w)[None, :]]
    return np.clip(img, 0, 1), s


def variant(image: np.ndarray, strokes: np.ndarray, name: str,
            scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """One of :data:`VARIANTS` of a sample, then scaled by ``scale``."""
    H, W = strokes.shape
    if name == "mirror":
        image, strokes = image[:, ::-1], strokes[:, ::-1]
    elif name == "crop75":
        dy, dx = H // 8, W // 8
        image, strokes = image[dy:H - dy, dx:W - dx], strokes[dy:H - dy, dx:W - dx]
    elif name == "up140":
        image, strokes = _resize_pair(image, strokes, (round(H * 1.4), round(W * 1.4)))
    elif name == "rot90":
        image, strokes = np.rot90(image), np.rot90(strokes)
    elif name != "orig":
        raise ValueError(f"unknown variant {name!r}")
    if scale != 1.0:
        h, w = strokes.shape
        image, strokes = _resize_pair(image, strokes,
                                      (max(8, round(h * scale)), max(8, round(w * scale))))
    return np.ascontiguousarray(image), np.ascontiguousarray(strokes)


def make_pairs(folder: Path, n: int = 20, scale: float = 1.0) -> list[Path]:
    """Write ``n`` pairs ``NAME_VARIANT.jpg`` + ``NAME_VARIANT_scribbles.png`` into ``folder``.

    Pair ``i`` is sample ``i % 4`` in variant ``i // 4 % 5`` (see the module docstring);
    ``scale`` shrinks everything (tests use small images). Returns the image paths.
    """
    from PIL import Image

    from segapp import io
    from segapp.samples import list_samples, sample_path, sample_scribbles_path
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = list_samples()
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    paths = []
    for i in range(n):
        name = names[i % len(names)]
        if name not in cache:
            img = io.read_image(sample_path(name))
            cache[name] = img, io.read_scribbles(sample_scribbles_path(name), img.shape)
        kind = VARIANTS[i // len(names) % len(VARIANTS)]
        stem = f"{name}_{kind}" + (f"_{i // (len(names) * len(VARIANTS))}"
                                   if i >= len(names) * len(VARIANTS) else "")
        image, strokes = variant(*cache[name], kind, scale)
        Image.fromarray(np.round(image * 255).astype(np.uint8)).save(folder / f"{stem}.jpg",
                                                                     quality=95)
        Image.fromarray(strokes.astype(np.uint8)).save(folder / f"{stem}_scribbles.png")
        paths.append(folder / f"{stem}.jpg")
    return paths


def make_photos(folder: Path, megapixels: float) -> None:
    """coffee and astronaut enlarged to ``megapixels`` (strokes scaled with them)."""
    from PIL import Image

    from segapp import io
    from segapp.samples import sample_path, sample_scribbles_path
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("coffee", "astronaut"):
        img = io.read_image(sample_path(name))
        strokes = io.read_scribbles(sample_scribbles_path(name), img.shape)
        f = np.sqrt(megapixels * 1e6 / strokes.size)
        shape = (round(strokes.shape[0] * f), round(strokes.shape[1] * f))
        big, s = _resize_pair(img, strokes, shape)
        Image.fromarray(np.round(big * 255).astype(np.uint8)).save(folder / f"{name}.jpg",
                                                                   quality=95)
        Image.fromarray(s.astype(np.uint8)).save(folder / f"{name}_scribbles.png")


# -- measurement -----------------------------------------------------------------------------
def make_executor(mode: str, workers: int):
    from segapp.batch import DaskExecutor, PoolExecutor, SerialExecutor
    if mode == "serial":
        return SerialExecutor()
    if mode == "pool":
        return PoolExecutor(workers)
    if mode == "dask":
        return DaskExecutor(None, workers=workers)
    raise ValueError(mode)


def run_mode(mode: str, inputs: Path, out: Path, workers: int) -> dict[str, Any]:
    """Start the executor (timed), run the batch (timed); return the figures and rows."""
    from segapp.batch import find_pairs, run_batch
    pairing = find_pairs(inputs)
    t0 = time.perf_counter()
    ex = make_executor(mode, workers)
    try:
        ex.warm_up()
        start = time.perf_counter() - t0
        result = run_batch(pairing, out, executor=ex, progress=False)
    finally:
        ex.close()
    n_ok = result.count("ok")
    task = statistics.mean(float(r["seconds"]) for r in result.rows if r["status"] == "ok")
    return {"mode": mode, "start": start, "wall": result.seconds, "ok": n_ok, "task": task,
            "failed": result.failed, "rate": 60 * n_ok / result.seconds, "rows": result.rows}


def same_labels(a: Path, b: Path) -> bool:
    from PIL import Image
    files = sorted(p.name for p in a.glob("*.png"))
    return bool(files) and files == sorted(p.name for p in b.glob("*.png")) and all(
        np.array_equal(np.asarray(Image.open(a / f)), np.asarray(Image.open(b / f)))
        for f in files)


def photo_cost(folder: Path, out: Path) -> list[dict[str, Any]]:
    """Segment the photo-sized pairs one by one in a fresh one-worker pool (its own VmHWM)."""
    from segapp.batch import PoolExecutor, find_pairs, run_batch
    with PoolExecutor(1) as ex:
        ex.warm_up()
        result = run_batch(find_pairs(folder), out, executor=ex, progress=False)
    return [r for r in result.rows if r["status"] == "ok"]


def estimate(seconds: float, peak_mb: float, price: float,
             workers: tuple[int, ...] = (2, 16, 64, 256), n: int = 100_000) -> str:
    """Hours and cost of ``n`` images on N one-CPU workers at ``seconds`` per image."""
    lines = [f"  {'workers':>7} {'images/min':>11} {'hours':>8} {'cost USD':>9}"]
    for w in workers:
        hours = n * seconds / w / 3600
        lines.append(f"  {w:>7} {60 * w / seconds:>11.0f} {hours:>8.2f} "
                     f"{hours * w * price:>9.2f}")
    return "\n".join(lines) + (f"\n  ({n} images × {seconds:.2f} s, one task per worker CPU "
                               f"with ≥ {peak_mb:.0f} MB, {price} USD per worker-hour)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=20, help="number of pairs (default 20)")
    p.add_argument("--workers", type=int, default=2, help="pool / LocalCluster size (2)")
    p.add_argument("--repeat", type=int, default=3, help="interleaved repeats (3)")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--scale", type=float, default=1.0, help="shrink the pairs (tests)")
    p.add_argument("--photo-mp", type=float, default=12.0,
                   help="also time two photos of this many MP (0 = skip)")
    p.add_argument("--price", type=float, default=0.05,
                   help="assumed USD per one-CPU worker-hour for the estimate (0.05)")
    p.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = p.parse_args(argv)

    import segapp
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in args.modes}
    identical: dict[str, bool] = {m: True for m in args.modes}
    with tempfile.TemporaryDirectory(prefix="segapp-batch-bench-") as tmp:
        root = Path(tmp)
        make_pairs(root / "in", args.images, args.scale)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"segapp {segapp.__version__}; {os.cpu_count()} CPUs, load {load:.1f}; "
              f"{args.images} pairs, {args.workers} workers, {args.repeat} repeats",
              file=sys.stderr)
        for r in range(args.repeat):
            order = args.modes[r % len(args.modes):] + args.modes[:r % len(args.modes)]
            for mode in order:
                out = root / f"out-{mode}-{r}"
                runs[mode].append(run_mode(mode, root / "in", out, args.workers))
                print(f"  repeat {r + 1} {mode}: {runs[mode][-1]['wall']:.1f} s",
                      file=sys.stderr, flush=True)
        ref = root / f"out-{args.modes[0]}-0"
        for mode in args.modes:
            identical[mode] = all(same_labels(ref, root / f"out-{mode}-{r}")
                                  for r in range(args.repeat))
        photos = (photo_cost_run(root, args.photo_mp) if args.photo_mp > 0 else [])

    table = format_table(runs, identical, args.workers)
    print(table)
    rows = [r for run in runs.get("serial", []) for r in run["rows"] if r["status"] == "ok"]
    pool_rows = [r for run in runs.get("pool", []) for r in run["rows"] if r["status"] == "ok"]
    per_image = statistics.mean(float(r["seconds"]) for r in rows) if rows else float("nan")
    peak = max((float(r["worker_peak_mb"]) for r in pool_rows), default=float("nan"))
    print(f"\nper image (serial, {len(rows)} images): mean {per_image:.2f} s; "
          f"pool worker peak memory {peak:.0f} MB")
    report: dict[str, Any] = {"per_image_s": per_image, "worker_peak_mb": peak,
                              "modes": {m: summarise(v) for m, v in runs.items()},
                              "identical": identical}
    if rows:
        print("100K images of this mix:")
        print(estimate(per_image, peak, args.price))
    if photos:
        t = statistics.mean(float(r["seconds"]) for r in photos)
        pk = max(float(r["worker_peak_mb"]) for r in photos)
        for r in photos:
            print(f"photo {Path(r['image']).name} {r['width']}×{r['height']} → working "
                  f"{r['working_width']}×{r['working_height']}: {float(r['seconds']):.2f} s, "
                  f"worker peak {float(r['worker_peak_mb']):.0f} MB")
        print(f"100K photos of {args.photo_mp:g} MP:")
        print(estimate(t, pk, args.price))
        report["photo"] = {"megapixels": args.photo_mp, "per_image_s": t, "peak_mb": pk}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


def photo_cost_run(root: Path, megapixels: float) -> list[dict[str, Any]]:
    make_photos(root / "photos", megapixels)
    rows = photo_cost(root / "photos", root / "out-photos")
    print(f"  photos ({megapixels:g} MP): done", file=sys.stderr, flush=True)
    return rows


def summarise(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in ("start", "wall", "task", "rate")}


def format_table(runs: dict[str, list[dict[str, Any]]], identical: dict[str, bool],
                 workers: int) -> str:
    """Median start-up, wall time and images/minute per mode, and the speed-up over serial."""
    head = (f"{'mode':<22} {'start s':>8} {'wall s':>8} {'task s':>7} {'images/min':>11} "
            f"{'speed-up':>9} {'failed':>7} {'identical':>10}")
    lines = [head, "-" * len(head)]
    base = summarise(runs["serial"])["rate"] if runs.get("serial") else None
    names = {"serial": "serial (1 process)", "pool": f"process pool ({workers})",
             "dask": f"LocalCluster ({workers}×1)"}
    for mode, rs in runs.items():
        s = summarise(rs)
        up = f"{s['rate'] / base:.2f}×" if base else "-"
        lines.append(f"{names[mode]:<22} {s['start']:>8.2f} {s['wall']:>8.1f} "
                     f"{s['task']:>7.2f} {s['rate']:>11.1f} {up:>9} "
                     f"{max(r['failed'] for r in rs):>7} "
                     f"{'yes' if identical[mode] else 'NO':>10}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
