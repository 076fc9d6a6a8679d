"""Noise sweep: how the image graph copes with sensor noise, on a synthetic three-region image.

Usage::

    python benchmarks/noise.py [--levels 0 0.025 ...] [--seeds 3] [--candidates ...]
                               [--quick] [--out DIR]

Image (:func:`three_regions`)
    240 × 160 px (the size of the quality benchmark's BSDS images), three flat colours: a
    disc of radius 45 px centred at (row 80, column 70) in RGB (0.75, 0.35, 0.35), an
    80 × 75 px rectangle (rows 40–119, columns 140–214) in (0.35, 0.35, 0.75), and the
    background around them in (0.3, 0.3, 0.3); then i.i.d. Gaussian noise of standard deviation
    ``σ_n`` on every channel of every pixel, clipped to [0, 1] (seeded by the trial).
Strokes
    One short stroke per region: :meth:`benchmarks.robot.Robot.first_round` with strokes at
    most 20 px long (radius 2, never touching a boundary), seeded by the trial.
Levels
    ``σ_n`` ∈ {0, 0.025, 0.05, 0.075, 25/255, 0.125, 35/255, 0.15} (25/255 ≈ 0.098 and
    35/255 ≈ 0.137 are issue 10's targets), 3 trials each.
Score
    Share of correctly labelled pixels (strokes name the regions: no matching).

Candidates (graph variants; the maths of the kept one is in :mod:`segapp.graphs.image`)
    ``none``
        segapp's graph before issue 10 (``denoise=0``): RBF affinities of single-pixel colours, σ = 0.4 × the mean
        neighbour colour distance.
    ``gauss0.7``, ``gauss1``
        Gaussian pre-smoothing of the colour planes (σ_s = 0.7 or 1 px; benchmark only).
    ``tv0.5``, ``tv1``, ``tv2``
        Total-variation denoising (Chambolle 2004, scikit-image ``denoise_tv_chambolle``)
        with weight ``c · σ̂``, ``σ̂`` the noise estimate of :func:`segapp.graphs.image.noise_sigma`
        — segapp ``denoise=c`` (``tv1`` is the default graph).
    ``bilateral``
        scikit-image's bilateral filter, colour σ = 2 σ̂, spatial σ = 1 px (benchmark only).
    ``nlm``
        Non-local means (scikit-image, 5 × 5 patches, 13 × 13 search window, ``h = 0.8 σ̂``,
        benchmark only).
    ``patch3``
        Affinities from 3 × 3 patches instead of single pixels: the squared colour difference
        of every neighbour offset is box-filtered over 3 × 3 before the RBF (benchmark only).
    ``patch3-bias``
        The same with the noise's expected contribution removed, ``max(d̄² − 2 c σ̂², 0)`` for
        ``c`` channels, as in non-local means (Buades et al. 2005) (benchmark only).
    ``noise-sigma``
        Single-pixel affinities with σ widened by the noise, ``σ² = σ_rule² + 2 c σ̂²``
        (benchmark only).
    Each is scored with FAST-GE's own partition (k-means on the k − 1 embedding vectors) and
    with an *oracle partition*: every pixel gets the label whose strokes' mean embedding row
    (row-normalised, as k-means sees it) is nearest — what the graph's eigenvectors allow
    when the clustering step makes no mistake.
Peers
    scikit-image ``random_walker`` (``cg_mg``) with the best β of {10, 30, 130, 500, 2000,
    8000} chosen per noise level (an oracle choice in its favour), on the raw image
    (``rw``) and on the same TV-denoised image FAST-GE's default graph sees (``rw_tv``).

Cost (``--cost``)
    The price of the pre-filter in a solve: the bundled ``coffee`` photo resized to 250K and
    1.1M px (as :mod:`benchmarks.speed`), clean and with noise of 25/255; per size the graph
    without pre-filter, the graph with segapp's default pre-filter and a whole default
    ``segapp.segment`` (graph included, full resolution), interleaved, best of ``--repeat``.

Output: a table of mean correct-pixel share per candidate and level on stdout and in
``<out>/noise.md``, one row per call in ``<out>/noise.csv``. ``--quick`` (two levels, one
trial, three candidates) is the smoke test.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from scipy import ndimage as ndi
from threadpoolctl import threadpool_limits

if __package__ in (None, ""):  # run as a script: make `benchmarks` and `segapp` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import peers  # noqa: E402
from benchmarks.robot import Robot, paint  # noqa: E402
from segapp.graphs import image as G  # noqa: E402
from segapp.graphs import Graph, graph_from_adjacency  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LEVELS = (0.0, 0.025, 0.05, 0.075, 25 / 255, 0.125, 35 / 255, 0.15)
COLOURS = ((0.3, 0.3, 0.3), (0.75, 0.35, 0.35), (0.35, 0.35, 0.75))
RW_BETAS = (10.0, 30.0, 130.0, 500.0, 2000.0, 8000.0)
STROKE_LENGTH = 20.0


def three_regions(sigma_n: float, seed: int = 0,
                  shape: tuple[int, int] = (160, 240)) -> tuple[np.ndarray, np.ndarray]:
    """The noisy three-region image (float32 RGB in [0, 1]) and its region map (0, 1, 2)."""
    H, W = shape
    yy, xx = np.mgrid[:H, :W]
    gt = np.zeros(shape, np.int32)
    gt[(yy - H // 2) ** 2 + (xx - 70 * W // 240) ** 2 <= (45 * H // 160) ** 2] = 1
    gt[H // 4:3 * H // 4, 140 * W // 240:215 * W // 240] = 2
    img = np.asarray(COLOURS, np.float32)[gt]
    rng = np.random.default_rng(seed)
    img = img + rng.normal(0.0, sigma_n, img.shape).astype(np.float32)
    return np.clip(img, 0, 1).astype(np.float32), gt


def short_strokes(gt: np.ndarray, seed: int = 0) -> np.ndarray:
    """One robot stroke of at most :data:`STROKE_LENGTH` px per region (label = region + 1)."""
    s = np.zeros(gt.shape, np.int32)
    for st in Robot(seed=seed, max_length=STROKE_LENGTH).first_round(gt):
        s = paint(s, st)
    return s


# -- benchmark-only graph variants -----------------------------------------------------------
def patch_graph(image: np.ndarray, *, patch: int = 3, bias: bool = False,
                noise_sigma_term: bool = False,
                sigma_scale: float = G.DEFAULT_SIGMA_SCALE) -> Graph:
    """8-neighbour RBF graph with patch-averaged distances and/or a noise-widened σ.

    ``d̄²(p, q)`` = mean of ``‖f_{p+t} − f_{q+t}‖²`` over the ``patch × patch`` shifts ``t``
    (a box filter of each offset's squared-difference plane); with ``bias`` the noise's
    expectation ``2 c σ̂²`` is subtracted (floored at 0). σ follows segapp's rule on ``d̄``;
    ``noise_sigma_term`` widens it to ``sqrt(σ² + 2 c σ̂²)``.
    """
    feats = G.image_features(image)
    H, W, c = feats.shape
    s2 = G.noise_sigma(feats) ** 2 if (bias or noise_sigma_term) else 0.0
    idx = np.arange(H * W).reshape(H, W)
    offsets = G.grid_offsets(8)
    planes = []
    for dy, dx in offsets:
        ys, xs, ys2, xs2 = G._offset_slices((H, W), dy, dx)
        diff = feats[ys, xs] - feats[ys2, xs2]
        d2 = np.einsum("ijc,ijc->ij", diff, diff)
        if patch > 1:
            d2 = ndi.uniform_filter(d2, patch, mode="nearest")
        if bias:
            d2 = np.maximum(d2 - 2 * c * s2, 0)
        planes.append((idx[ys, xs].ravel(), idx[ys2, xs2].ravel(), d2.ravel()))
    mean = np.mean(np.sqrt(np.concatenate([p[2] for p in planes])))
    sigma = max(sigma_scale * mean, G.SIGMA_FLOOR)
    if noise_sigma_term:
        sigma = float(np.sqrt(sigma ** 2 + 2 * c * s2))
    rows = np.concatenate([p[0] for p in planes])
    cols = np.concatenate([p[1] for p in planes])
    w = np.maximum(np.exp(-np.concatenate([p[2] for p in planes]) / (2 * sigma ** 2)),
                   G.MIN_WEIGHT)
    A = sp.coo_matrix((w.astype(np.float64), (rows, cols)), shape=(H * W, H * W))
    g = graph_from_adjacency(A + A.T)
    return Graph(g.laplacian, g.degrees, (H, W), sigma, offsets)


@dataclass
class Candidate:
    """A graph variant: segapp options, or a benchmark-only pre-filter / graph builder."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    prefilter: Callable[[np.ndarray], np.ndarray] | None = None
    graph: Callable[[np.ndarray], Graph] | None = None

    def solve(self, image: np.ndarray, scribbles: np.ndarray):
        """FAST-GE's result (labels, embedding) on this candidate's graph."""
        from segapp.methods.fastge import FastGE
        if self.prefilter is not None:
            image = self.prefilter(image)
        if self.graph is not None:
            return FastGE(self.graph(image)).update(scribbles)
        return FastGE.from_image(image, **{"denoise": 0.0, **self.options}).update(scribbles)


CANDIDATES = {c.name: c for c in (
    Candidate("none"),
    Candidate("gauss0.7", prefilter=lambda im: peers.gaussian_prefilter(im, 0.7)),
    Candidate("gauss1", prefilter=peers.gaussian_prefilter),
    Candidate("tv0.5", {"denoise": 0.5}),
    Candidate("tv1", {"denoise": 1.0}),
    Candidate("tv2", {"denoise": 2.0}),
    Candidate("bilateral", prefilter=peers.bilateral_prefilter),
    Candidate("nlm", prefilter=peers.nlm_prefilter),
    Candidate("patch3", graph=patch_graph),
    Candidate("patch3-bias", graph=lambda im: patch_graph(im, bias=True)),
    Candidate("noise-sigma", graph=lambda im: patch_graph(im, patch=1, noise_sigma_term=True)),
)}


def oracle_labels(result, scribbles: np.ndarray) -> np.ndarray:
    """Each pixel → the label whose strokes' mean row-normalised embedding row is nearest."""
    V = np.asarray(result.eigenvectors, np.float64).reshape(-1, result.eigenvectors.shape[-1])
    U = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), np.finfo(float).tiny)
    s = np.asarray(scribbles).ravel()
    ids = np.asarray(result.label_ids)
    centres = np.array([U[s == i].mean(axis=0) for i in ids])
    d = ((U[:, None, :] - centres[None]) ** 2).sum(axis=-1)
    return ids[np.argmin(d, axis=1)].reshape(result.labels.shape)


def _rw_best(image: np.ndarray, scribbles: np.ndarray, gt: np.ndarray,
             betas: tuple[float, ...]) -> tuple[float, float]:
    """Best correct share of random_walker over ``betas`` and the β that gave it."""
    scores = {}
    for b in betas:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lab = peers.random_walker_labels(image, scribbles, b)
        scores[b] = float(np.mean(lab == gt + 1))
    best = max(scores, key=scores.get)
    return scores[best], best


def sweep(levels=LEVELS, seeds: int = 3, candidates: list[str] | None = None,
          betas=RW_BETAS, peers_too: bool = True, log=print) -> list[dict]:
    """One row per (level, trial, method): correct share, time (s) and details."""
    names = list(candidates or CANDIDATES)
    rows = []
    for level in levels:
        for seed in range(seeds):
            image, gt = three_regions(level, seed)
            s = short_strokes(gt, seed)
            for name in names:
                t = time.perf_counter()
                res = CANDIDATES[name].solve(image, s)
                dt = time.perf_counter() - t
                rows.append(dict(level=level, seed=seed, method=name, time=dt,
                                 correct=float(np.mean(res.labels == gt + 1)),
                                 oracle=float(np.mean(oracle_labels(res, s) == gt + 1))))
            if peers_too:
                for name, img in (("rw", image), ("rw_tv", peers.denoised(image))):
                    t = time.perf_counter()
                    score, beta = _rw_best(img, s, gt, betas)
                    rows.append(dict(level=level, seed=seed, method=name, correct=score,
                                     oracle=float("nan"), beta=beta,
                                     time=(time.perf_counter() - t) / len(betas)))
        log(f"  σ_n = {level:.3f} done", flush=True)
    return rows


def table(rows: list[dict]) -> str:
    """Markdown: mean correct share per method (rows) and level (columns); oracle in brackets."""
    levels = sorted({r["level"] for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    head = "| σ_n | " + " | ".join(f"{lv:.3f}" for lv in levels) + " |"
    lines = [head, "|" + "---|" * (len(levels) + 1)]
    for m in methods:
        cells = []
        for lv in levels:
            rs = [r for r in rows if r["method"] == m and r["level"] == lv]
            c = np.mean([r["correct"] for r in rs])
            o = np.mean([r["oracle"] for r in rs])
            cells.append(f"{c:.3f}" + ("" if np.isnan(o) else f" ({o:.3f})"))
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines.append("\nMean share of correctly labelled pixels over the trials; in brackets the "
                 "same graph with the oracle partition; rw / rw_tv: best β per level.")
    return "\n".join(lines)


def cost(repeat: int = 3, sizes=(("250K", 250_000), ("1.1M", 1_100_000)), log=print) -> str:
    """Markdown table: graph build time without / with the default pre-filter vs a solve."""
    import segapp
    from benchmarks.speed import best, resized
    from segapp import io, samples
    image = io.read_image(samples.sample_path("coffee"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    lines = ["| size | noise | σ̂ | graph, no filter (s) | graph, default (s) | filter share "
             "of the solve | segment, default (s) |", "|" + "---|" * 7]
    for label, n in sizes:
        img, s = resized(image, scribbles, n)
        for noise in (0.0, 25 / 255):
            x = np.clip(img + np.random.default_rng(0).normal(0, noise, img.shape), 0, 1)
            x = x.astype(np.float32)
            t_plain = t_def = t_seg = np.inf
            for _ in range(repeat):  # interleaved: the machine's load hits all three alike
                t_plain = min(t_plain, best(lambda: G.image_graph(x, denoise=0.0), 1)[0])
                t_def = min(t_def, best(lambda: G.image_graph(x), 1)[0])
                t_seg = min(t_seg, best(lambda: segapp.segment(x, s, max_pixels=None), 1)[0])
            lines.append(f"| {label} | {noise * 255:.0f}/255 | {G.noise_sigma(x):.4f} "
                         f"| {t_plain:.3f} | {t_def:.3f} | {(t_def - t_plain) / t_seg:.1%} "
                         f"| {t_seg:.2f} |")
            log(lines[-1], flush=True)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=float, nargs="+", default=list(LEVELS))
    ap.add_argument("--seeds", type=int, default=3, help="trials per level")
    ap.add_argument("--candidates", nargs="+", choices=list(CANDIDATES), default=None)
    ap.add_argument("--no-peers", action="store_true", help="skip random_walker")
    ap.add_argument("--quick", action="store_true",
                    help="two levels, one trial, three candidates (smoke test)")
    ap.add_argument("--cost", action="store_true",
                    help="only time the pre-filter against a solve at 250K and 1.1M px")
    ap.add_argument("--repeat", type=int, default=3, help="--cost: best of N")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    args = ap.parse_args(argv)
    if args.cost:
        print(cost(args.repeat))
        return 0
    if args.quick:
        args.levels, args.seeds = [0.0, 25 / 255], 1
        args.candidates = args.candidates or ["none", "tv1", "patch3-bias"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # One BLAS thread, as segapp's solver uses: random_walker ran 3-4x slower with OpenBLAS's
    # default threads on the shared 2-core machine.
    import scipy.linalg  # noqa: F401  (scipy's own OpenBLAS: load it so that it is limited too)
    with threadpool_limits(limits=1, user_api="blas"):
        rows = sweep(args.levels, args.seeds, args.candidates,
                     betas=RW_BETAS[1:3] if args.quick else RW_BETAS,
                     peers_too=not args.no_peers)
    text = table(rows)
    (out / "noise.md").write_text(text + "\n")
    fields = ["level", "seed", "method", "correct", "oracle", "beta", "time"]
    with open(out / "noise.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})
    print(f"\n{text}\n\nrows: {out / 'noise.csv'}  total time: {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
