"""Full-resolution edges: the refined working answer against a full-resolution solve.

Protocol
--------
Images and strokes
    The bundled samples (``--images``, default all four) enlarged with Pillow's LANCZOS to
    ``--sizes`` megapixels (default 2.5 and 12), their bundled scribbles brought to the same
    size by nearest neighbour. Enlarging adds no detail: the large images are smoother than a
    real photo of that size would be.
Measurement (one process, one BLAS thread, as the app's solves)
    * **coarse s**: ``Session(image)`` + ``update(strokes, refine=False)`` — the working
      answer (0.5 MP working copy, or ``--max-pixels``) brought back by nearest neighbour,
      what the app shows first;
    * **refine s**: ``Session.refine`` of that answer (band, features, system, solve,
      labels) — what comes after it, before any export; **refine cpu s** its processor
      seconds (one thread: about what an idle machine's wall clock would show);
    * at sizes up to ``--full-max`` MP, the **full** solve of the same strokes
      (``segment(..., max_pixels=None)``) and the agreement of the coarse and the refined
      labels with it: on the **6-px band** (the pixels on either side of a boundary of
      either mask, widened by 2 px: 6 px across a boundary) and on all pixels (region-level
      differences show there);
    * **steps**: the staircase of the working grid. Of the label boundary's horizontal runs
      (maximal runs of pixels whose label differs from the pixel below), the share shorter
      than the smallest working cell (``floor(H / h)`` px): ~0 for a staircase (its runs are
      whole cells), the most of a boundary that follows the image; and ``on grid``: the
      share of boundary pixel pairs that lie on a working-cell border (1.0 for a staircase,
      about ``h / H`` for a boundary that ignores the grid).
    * **full vs seed 1 / full vs +1 px** (``--spread``): how far the full-resolution solve
      agrees with itself on the 6-px band, given another k-means seed (``seed=1``) or the
      same strokes moved one pixel down and right: the spread of the reference itself;
    * **rw s** (``--peer``): scikit-image's ``random_walker`` (``mode="cg_mg"``) on the same
      image and strokes, and the ratio refine / rw.

The load average is printed beside the table: the machine is shared and absolute times move
with it.

Usage::

    python benchmarks/edges.py                          # 4 images × 2.5 and 12 MP, ~6 min
    python benchmarks/edges.py --images astronaut --sizes 2.5 --peer
    python benchmarks/edges.py --sizes 2.5 --spread     # the full solve against itself
    python benchmarks/edges.py --sizes 2.5 4 --max-pixels 2000000   # the app's largest working size
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from PIL import Image
from scipy import ndimage as ndi
from skimage.segmentation import find_boundaries
from threadpoolctl import threadpool_limits

import segapp
from segapp.inputs.resolution import DEFAULT_MAX_PIXELS
from segapp.samples import list_samples, sample_path, sample_scribbles_path


def load(name: str, megapixels: float) -> tuple[np.ndarray, np.ndarray]:
    """The sample enlarged to ``megapixels`` (LANCZOS) and its scribbles (nearest)."""
    im = Image.open(sample_path(name)).convert("RGB")
    sc = np.asarray(Image.open(sample_scribbles_path(name)))
    if sc.ndim == 3:
        sc = sc[..., 0]
    f = np.sqrt(megapixels * 1e6 / (im.width * im.height))
    W, H = round(im.width * f), round(im.height * f)
    img = np.asarray(im.resize((W, H), Image.LANCZOS), np.float32) / 255
    yi = np.minimum((np.arange(H) * sc.shape[0]) // H, sc.shape[0] - 1)
    xi = np.minimum((np.arange(W) * sc.shape[1]) // W, sc.shape[1] - 1)
    return img, sc[yi[:, None], xi[None, :]].astype(np.int32)


def band6(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The pixels beside a label boundary of ``a`` or ``b`` (both sides), widened by 2 px:
    a band 6 px across each boundary."""
    e = (find_boundaries(a, connectivity=1, mode="thick")
         | find_boundaries(b, connectivity=1, mode="thick"))
    return ndi.distance_transform_edt(~e) <= 2


def steps(labels: np.ndarray, working: tuple[int, int]) -> tuple[float, float]:
    """(share of horizontal boundary runs shorter than a working cell, share of boundary
    pairs on a working-cell border); see the module docstring."""
    H, W = labels.shape
    h = working[0]
    cell = int(np.floor(H / h))
    d = labels[1:] != labels[:-1]                 # (H-1, W): pair (y, y+1) differs
    padded = np.zeros((d.shape[0], W + 2), np.int8)
    padded[:, 1:-1] = d
    change = np.diff(padded, axis=1)
    starts, ends = np.nonzero(change == 1), np.nonzero(change == -1)
    runs = ends[1] - starts[1]
    short = float(np.mean(runs < cell)) if runs.size else float("nan")
    rows = np.minimum((np.arange(H) * h) // H, h - 1)
    border = rows[1:] != rows[:-1]                 # pair (y, y+1) crosses a cell border
    on_grid = float(d[border].sum() / max(d.sum(), 1))
    return short, on_grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", nargs="+", default=list_samples())
    ap.add_argument("--sizes", nargs="+", type=float, default=[2.5, 12.0])
    ap.add_argument("--full-max", type=float, default=4.0,
                    help="compare with a full-resolution solve up to this many MP")
    ap.add_argument("--peer", action="store_true", help="time random_walker too")
    ap.add_argument("--max-pixels", type=int, default=DEFAULT_MAX_PIXELS,
                    help="the working size (default: the Session's)")
    ap.add_argument("--spread", action="store_true",
                    help="also solve at full resolution with seed 1 and with the strokes "
                         "moved 1 px, and give their agreement with the full solve")
    ap.add_argument("--cache", default=None,
                    help="folder keeping the full solves' labels between runs")
    args = ap.parse_args()
    rows = []
    for mp in args.sizes:
        for name in args.images:
            img, s = load(name, mp)
            H, W = s.shape
            with threadpool_limits(limits=1, user_api="blas"):
                t = time.perf_counter()
                sess = segapp.Session(img, max_pixels=args.max_pixels)
                sess.background = False
                coarse = sess.update(s, refine=False)
                t_coarse = time.perf_counter() - t
                t, c = time.perf_counter(), time.process_time()
                fine = sess.refine(coarse, s)
                t_refine, c_refine = time.perf_counter() - t, time.process_time() - c
            done = fine.refinement     # None: solved at full resolution, nothing to refine
            row = {"image": name, "size": f"{W}×{H}", "coarse s": t_coarse,
                   "refine s": t_refine, "refine cpu s": c_refine,
                   "band px": 0 if done is None else done.band_pixels,
                   "solver": "full resolution" if done is None else done.solver or done.reason}
            for tag, res in (("coarse", coarse), ("refined", fine)):
                row[f"{tag} short/grid"] = "%.2f / %.2f" % steps(res.labels, sess.working_shape)
            # its factor and hierarchy go before the full solve (a 4 MP working copy: ~10 GB)
            sess.close()
            del sess
            if mp <= args.full_max:
                path = args.cache and os.path.join(args.cache, f"full_{name}_{mp}.npy")
                if path and os.path.exists(path):
                    full, t_full = np.load(path), float("nan")
                else:
                    t = time.perf_counter()
                    full = segapp.segment(img, s, max_pixels=None).labels
                    t_full = time.perf_counter() - t
                    if path:
                        os.makedirs(args.cache, exist_ok=True)
                        np.save(path, full)
                row["full s"] = t_full
                for tag, res in (("coarse", coarse), ("refined", fine)):
                    B = band6(res.labels, full)
                    row[f"{tag} band"] = float(np.mean(res.labels[B] == full[B]))
                    row[f"{tag} all"] = float(np.mean(res.labels == full))
                if args.spread:
                    shifted = np.zeros_like(s)
                    shifted[1:, 1:] = s[:-1, :-1]
                    for tag, strokes, opts in (("seed 1", s, {"seed": 1}),
                                               ("+1 px", shifted, {})):
                        other = segapp.segment(img, strokes, max_pixels=None, **opts).labels
                        B = band6(other, full)
                        row[f"full vs {tag}"] = float(np.mean(other[B] == full[B]))
            if args.peer:
                from skimage.segmentation import random_walker
                t = time.perf_counter()
                random_walker(img, s, mode="cg_mg", channel_axis=-1)
                row["rw s"] = time.perf_counter() - t
                row["refine/rw"] = t_refine / row["rw s"]
            rows.append(row)
            print(_line(row), flush=True)
    print()
    print(_table(rows))
    print(f"\nload average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} (2 cores)")


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return "–" if np.isnan(v) else (f"{v:.4f}" if v <= 1.0 else f"{v:.2f}")
    if isinstance(v, (int, np.integer)):
        return f"{v:,}"
    return str(v)


def _line(row: dict) -> str:
    return "  ".join(f"{k}={_fmt(v)}" for k, v in row.items())


def _table(rows: list[dict]) -> str:
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    cells = [[_fmt(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) for i, c in enumerate(cols)]
    out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(x.ljust(w) for x, w in zip(line, widths)) for line in cells]
    return "\n".join(out)


if __name__ == "__main__":
    main()
