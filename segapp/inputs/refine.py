r"""Full-resolution edges: the working answer's boundary band solved again on the full grid.

A photo above the working size is segmented on a reduced copy (:mod:`.resolution`), so its
region boundaries are accurate to one coarse pixel and, brought back by nearest neighbour,
run in steps of the reduction factor (5 px at 12 MP). This module refines them.

The maths
---------
FAST-GE's embedding ``V`` (the pencil's eigenvectors, mean-removed and scaled, Fig. 2) is
*harmonic on the unpainted pixels*: the constraint Laplacian ``L_H`` has non-zero rows only
on painted pixels, so ``L_G x = λ L_H x`` reads ``(L_G x)_i = 0`` at every unpainted ``i``;
with the harmonic eigensolver the vectors are combinations of the strokes' random-walker
potentials (:mod:`segapp.solve.harmonic`), constant on each label's strokes. Far from the
region boundaries the working answer is right, and ``V`` is smooth there, so its bilinear
enlargement is a good boundary value. So, with ``U`` a band of full-resolution pixels a few
working pixels wide around the working answer's boundaries (painted pixels excluded) and
``K`` every other pixel:

.. math:: L_{UU}\, x_U = W_{UK}\, y_K ,

``y_K`` the bilinear enlargement of the working ``V`` (on a painted pixel: its label's value
on the strokes), ``L`` the image graph of :func:`segapp.graphs.image.image_graph` *at full
resolution* (same features, neighbourhood and σ rule; :mod:`segapp.graphs.band` builds only
the band's rows). The band's pixels then take the label the method's rounding gives their
row of ``x_U`` — the rounding read back from the working answer as a rule on the embedding
(:mod:`.rounding_rule`: the sweep's threshold for two labels, the clusters' prototypes for
more) — every other pixel keeps the working answer, and every painted pixel its label.

Only methods whose embedding is harmonic off the strokes are refined
(:data:`HARMONIC_METHODS`); and only when the rule gives the working answer back on at least
:data:`MIN_RULE_AGREEMENT` of the working band (else the answer is kept as it was, saying
why in ``Segmentation.refinement``).

Measured with ``benchmarks/edges.py`` (see ``docs/edges.md`` and CHANGELOG.md).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import ndimage as ndi

from ..cancel import NEVER, CancelToken
from ..graphs.band import BandGraph
from ..graphs.image import (TV_ITERATIONS, TV_MIN_WEIGHT, _offset_slices, grid_offsets,
                            image_features, mean_neighbour_distance, noise_sigma, sigma_rule,
                            statistic_rows)
from ..graphs.masked_tv import masked_tv
from ..result import Segmentation
from ..solve.band import BandSolver, two_core_cut
from .resolution import bilinear_at, cell_index, nearest, small_pages
from .rounding_rule import RoundingRule

#: Methods whose embedding is harmonic on the unpainted pixels (module docstring).
HARMONIC_METHODS = frozenset({"fastge"})

#: Half-width of the band, in working pixels, beyond the working pixels that touch another
#: label (so the band is ``2 (BAND_WIDTH + 1)`` working pixels wide across a boundary).
BAND_WIDTH = 1

#: Least share of the working band the rounding rule must give back for the refinement to
#: apply (FAST-GE's answers: 0.99–1.0; a label re-rounded from its potentials can fall below).
MIN_RULE_AGREEMENT = 0.97

#: Margin (full-resolution pixels) of the total-variation pre-filter's domain around the
#: band and its neighbours: the filter's solution near the domain's edge depends on pixels up
#: to a few steps away (its first iterations move information 2 px each).
TV_MARGIN = 6

#: Blocks the noise estimate of a large image is taken on (:func:`_noise`).
NOISE_BLOCKS = 64

#: Rows the σ statistic is taken on (every k-th row's edges; the mean over a million edges
#: of a 12 MP photo is as good as over all, and 0.05 s instead of 0.7 s).
STATISTICS_ROWS = 256


@dataclass
class Refinement:
    """What the refinement did (``Segmentation.refinement``).

    Attributes
    ----------
    applied : bool
        Whether the band was solved and its labels used.
    reason : str
        One line: what was done, or why the working answer was kept.
    band_pixels : int
        Unknown pixels of the band (painted pixels excluded).
    changed_pixels : int
        Pixels whose label differs from the working answer brought back by nearest neighbour.
    rule_agreement : float
        Share of the working band the rounding rule gives back.
    solver : str
        "CHOLMOD (AMD)", "CHOLMOD (AMD, 2 halves)" (the band cut in two: two cores) or
        "SuperLU" (:class:`segapp.solve.band.BandSolver`).
    timings : dict
        Seconds per step: band, features, system, solve (waiting for the analysis, then
        factor and solve), labels in the caller's thread; pattern: building the band's
        pattern in the analysis thread, beside the features.
    """

    applied: bool
    reason: str
    band_pixels: int = 0
    changed_pixels: int = 0
    rule_agreement: float = float("nan")
    solver: str = ""
    timings: dict[str, float] = field(default_factory=dict)


def needs_refinement(result: Segmentation) -> bool:
    """Whether ``result`` is a working-copy answer this module can refine."""
    return (getattr(result, "working_labels", None) is not None
            and result.method in HARMONIC_METHODS and not result.preview
            and getattr(result, "refinement", None) is None
            and result.working_labels.shape != result.shape)


def refine(result: Segmentation, image: np.ndarray, scribbles: np.ndarray,
           settings: Any, cancel: CancelToken = NEVER,
           band_width: int = BAND_WIDTH, noise: float | None = None) -> Segmentation:
    """``result`` (a working-copy answer brought back by :func:`~.resolution.enlarge_result`)
    with its boundary band solved again at full resolution (module docstring).

    Parameters
    ----------
    result : Segmentation
        Carries ``working_labels`` and ``working_eigenvectors`` (the working answer).
    image : ndarray (H, W[, 3]) float in [0, 1]
        The full-resolution image.
    scribbles : ndarray (H, W) int
        The strokes at full resolution (0 = unpainted).
    settings : mapping
        The method's graph options (``connectivity``, ``radius``, ``sigma``,
        ``sigma_scale``, ``color``, ``denoise``).
    cancel : CancelToken
        Polled between the steps.
    band_width : int
        :data:`BAND_WIDTH`.
    noise : float, optional
        :func:`image_noise` of ``image`` with these settings, if known (it depends on the
        image only: a session computes it once; else it is estimated here).

    Returns
    -------
    Segmentation
        A new result (the input is left as it was) with refined ``labels`` and a
        :class:`Refinement` in ``refinement``; ``timings["refine"]`` its seconds.
    """
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    H, W = scribbles.shape
    small = np.asarray(result.working_labels)
    h, w = small.shape
    ids = np.asarray(result.label_ids)
    codes = np.searchsorted(ids, small.ravel())
    Vs = np.asarray(result.working_eigenvectors, np.float64).reshape(h * w, -1)
    k = ids.size

    # 1. the band, from the working answer: cells next to another label, widened
    t = time.perf_counter()
    edge = _label_edges(small)
    cells = ndi.binary_dilation(edge, np.ones((3, 3), bool), iterations=band_width) \
        if band_width > 0 else edge
    if not cells.any():
        return _kept(result, "one region only: nothing to refine", t0)
    painted_small = _painted_cells(scribbles, (h, w))
    unpainted = ~painted_small.ravel()
    sel = cells.ravel() & unpainted
    # cells whose label came from the region around them (FAST-GE's islands) follow no
    # rule of their embedding: left out of the rule, and they keep their label below
    absorbed = result.absorbed
    if absorbed is None:
        rule = RoundingRule.fit(Vs, codes, k, unpainted=unpainted)
    else:
        own = ~absorbed
        rule = RoundingRule.fit(Vs[own], codes[own], k, unpainted=unpainted[own])
        sel &= own
    agreement = rule.agreement(Vs[sel], codes[sel]) if sel.any() else 1.0
    if agreement < MIN_RULE_AGREEMENT:
        return _kept(result, f"the rounding is not a rule of the embedding here "
                     f"({agreement:.1%} of the working band given back)", t0, agreement)
    band = nearest(cells, (H, W))
    band &= scribbles == 0
    unknown = np.flatnonzero(band)
    if unknown.size == 0:
        return _kept(result, "the band is all painted: nothing to refine", t0, agreement)
    timings["band"] = time.perf_counter() - t
    cancel.check()

    # 2. the band's pattern, built and analysed for the factorization in another thread
    #    (numpy's whole-array passes and CHOLMOD release the GIL) while the full-resolution
    #    features around the band and σ are computed in this one
    offsets = grid_offsets(settings["connectivity"], settings["radius"])
    offsets = [(dy, dx) for dy, dx in offsets if dy < H and abs(dx) < W]
    pattern = _Pattern((H, W), offsets, unknown)
    pattern.start()
    t = time.perf_counter()
    reach = max(max(dy, abs(dx)) for dy, dx in offsets) if offsets else 1
    try:
        step = max(1, H // STATISTICS_ROWS)
        feats = band_features(image, settings["color"], settings["denoise"], cells, reach,
                              cancel, noise, statistic_rows((H, W), offsets, step))
        sigma = settings["sigma"]
        if sigma is None:
            sigma = sigma_rule(mean_neighbour_distance(feats, offsets, step),
                               settings["sigma_scale"])
        cancel.check()
    except BaseException:
        # no CHOLMOD call left running behind a cancelled refinement (one at interpreter
        # exit crashed a script: segapp.session); the analysis takes a few tenths of a second
        pattern.join()
        raise
    timings["features"] = time.perf_counter() - t

    # 3. the band's Dirichlet problem
    t = time.perf_counter()
    stroke_values = np.zeros((k, Vs.shape[1]))
    flat_s = scribbles.ravel()
    for a, i in enumerate(ids):
        on = painted_small.ravel() & (codes == a)
        # the embedding is constant on a label's strokes (module docstring)
        stroke_values[a] = Vs[on].mean(axis=0) if on.any() else Vs[codes == a].mean(axis=0)

    def known(idx: np.ndarray) -> np.ndarray:
        y = bilinear_at(Vs.reshape(h, w, -1), (H, W), idx)
        lab = flat_s[idx]
        on = lab > 0
        y[on] = stroke_values[np.searchsorted(ids, lab[on])]
        return y

    graph, solver = pattern.built()
    A, b = graph.system(feats, float(sigma), known)
    timings["system"] = time.perf_counter() - t
    t = time.perf_counter()
    pattern.join()
    timings["pattern"] = pattern.seconds
    x, report = solver.solve(A.data, b, cancel)
    timings["solve"] = time.perf_counter() - t
    cancel.check()

    # 4. labels: the rule in the band, the working answer elsewhere, strokes kept
    t = time.perf_counter()
    labels = result.labels_copy()
    flat = labels.ravel()
    new = ids[rule(x)].astype(flat.dtype)
    if absorbed is not None:
        taken = absorbed[cell_index(*np.divmod(unknown, W), (H, W), (h, w))]
        new[taken] = flat[unknown[taken]]
    changed = int(np.count_nonzero(flat[unknown] != new))
    flat[unknown] = new
    timings["labels"] = time.perf_counter() - t
    out = _copy(result)
    out.labels = labels
    out.timings = {**result.timings, "refine": time.perf_counter() - t0}
    out.refinement = Refinement(
        True, f"boundary band of {unknown.size:,} px solved at full resolution "
        f"({report['solver']})", unknown.size, changed, agreement, report["solver"], timings)
    return out


def image_noise(image: np.ndarray, color: bool) -> float:
    """The noise estimate ``σ̂`` of the graph's full-resolution features (:func:`_noise`),
    which weighs the refinement's total-variation filter: it depends on the image only, so a
    :class:`~segapp.session.Session` computes it once (0.1 s at 12 MP, every edit before)."""
    return _noise(image_features(image, color))


def band_features(image: np.ndarray, color: bool, denoise: float, cells: np.ndarray,
                  reach: int = 1, cancel: CancelToken = NEVER, noise: float | None = None,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """The graph's features at full resolution, total-variation filtered where the band
    (the working cells ``cells`` brought up) needs them, as
    :func:`segapp.graphs.image.denoise_features` filters the whole image: same weight
    ``denoise · σ̂``, ``σ̂`` estimated on the full image (blocks sampled when it is large).
    The filter runs on the pixels the band's rows read (``reach`` px beyond it) widened by
    :data:`TV_MARGIN` px (:func:`tv_domain`), as one domain
    (:func:`segapp.graphs.masked_tv.masked_tv`); elsewhere the features are unfiltered.
    ``noise``: :func:`image_noise`, if known. With ``rows`` (image rows), where it filters,
    only the filter's domain and these rows are filled (the rest of the array is left unset,
    never read by :func:`refine`: the band's rows read the domain, σ's statistic these
    rows), which spares a copy of the whole image (0.1 s and 145 MB at 12 MP)."""
    feats = image_features(image, color)
    if not denoise:
        return feats
    H, W = feats.shape[:2]
    lam = float(denoise) * (_noise(feats) if noise is None else noise)
    if lam < TV_MIN_WEIGHT:
        return feats
    domain = tv_domain(cells, (H, W), reach)
    if rows is None:
        out = np.array(feats, dtype=np.float32, copy=True)
    else:
        out = small_pages(feats.shape, np.float32)   # pages untouched until written
        out[rows] = feats[rows]
    out.reshape(H * W, -1)[domain] = masked_tv(feats, domain, lam, max_iter=TV_ITERATIONS,
                                               cancel=cancel)
    return out


def tv_domain(cells: np.ndarray, shape: tuple[int, int], reach: int) -> np.ndarray:
    """Flat indices of the full-resolution pixels within ``reach + TV_MARGIN`` px of the
    band's working cells ``cells`` (or a little more): the cells widened by as many working
    cells as that distance spans (a cell is at least ``⌊H/h⌋ × ⌊W/w⌋`` px), brought up. On
    the working grid, not the full one: 0.01 s instead of a 12 MP dilation's 0.15 s."""
    (H, W), (h, w) = shape, cells.shape
    cell = max(1, min(H // h, W // w))
    grow = -(-(max(reach, 0) + TV_MARGIN) // cell)
    return np.flatnonzero(nearest(ndi.binary_dilation(cells, np.ones((3, 3), bool),
                                                      iterations=grow), (H, W)))


def _noise(feats: np.ndarray) -> float:
    """:func:`noise_sigma` of the features; on a large image, the median of its estimates
    on :data:`NOISE_BLOCKS` blocks of 128 × 128 px spread over the image (the estimate is
    itself a median: 0.03 s instead of 0.7 s at 12 MP)."""
    H, W = feats.shape[:2]
    n = int(np.sqrt(NOISE_BLOCKS))
    if H * W <= 4 * NOISE_BLOCKS * 128 * 128:
        return noise_sigma(feats)
    ys = np.linspace(0, H - 128, n).astype(int)
    xs = np.linspace(0, W - 128, n).astype(int)
    return float(np.median([noise_sigma(feats[y:y + 128, x:x + 128]) for y in ys for x in xs]))


class _Pattern(threading.Thread):
    """The band's pattern (:class:`BandGraph`, its solver) built, then analysed
    (:meth:`BandSolver.analyse`), in a thread of its own. An error building the pattern is
    raised again by :meth:`built`; one of the analysis is left for :meth:`BandSolver.solve`
    to meet again (it analyses again when it finds none)."""

    def __init__(self, shape: tuple[int, int], offsets: list[tuple[int, int]],
                 unknown: np.ndarray) -> None:
        super().__init__(name="segapp-band-analysis", daemon=True)
        self._args = (shape, offsets, unknown)
        self._ready = threading.Event()
        self._graph: BandGraph | None = None
        self._solver: BandSolver | None = None
        self._error: BaseException | None = None
        #: seconds building the pattern (the analysis: ``solver.seconds``)
        self.seconds = 0.0

    def run(self) -> None:
        t = time.perf_counter()
        try:
            self._graph = BandGraph(*self._args)
            (H, W), offsets, unknown = self._args
            rows = max((abs(dy) for dy, _ in offsets), default=1)
            self._solver = BandSolver(self._graph.indptr, self._graph.indices,
                                      two_core_cut(unknown, W, rows))
        except BaseException as exc:   # noqa: BLE001 — raised again in the caller's thread
            self._error = exc
            return
        finally:
            self.seconds = time.perf_counter() - t
            self._ready.set()
        try:
            self._solver.analyse()
        except Exception:   # noqa: BLE001 — solve() meets it again in the caller's thread
            pass

    def built(self) -> tuple[BandGraph, BandSolver]:
        """The pattern and its solver, once built (the analysis may still run)."""
        self._ready.wait()
        if self._error is not None:
            raise self._error
        assert self._graph is not None and self._solver is not None
        return self._graph, self._solver


def _label_edges(labels: np.ndarray) -> np.ndarray:
    """Pixels with an 8-neighbour of another label."""
    e = np.zeros(labels.shape, bool)
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        ys, xs, ys2, xs2 = _offset_slices(labels.shape, dy, dx)
        d = labels[ys, xs] != labels[ys2, xs2]
        e[ys, xs] |= d
        e[ys2, xs2] |= d
    return e


def _painted_cells(scribbles: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Working cells holding any painted full-resolution pixel (the cells of
    :func:`~.resolution.nearest`: fine ``(y, x)`` in ``(y·h // H, x·w // W)``): an OR over
    each cell row's fine rows, then over each cell's columns (every cell holds at least one
    fine row and column, as h ≤ H and w ≤ W). No index arrays however much is painted:
    0.015 s instead of 0.05 s at 12 MP."""
    H, W = scribbles.shape
    h, w = shape
    first_row = np.searchsorted((np.arange(H) * h) // H, np.arange(h + 1))
    first_col = np.searchsorted((np.arange(W) * w) // W, np.arange(w))
    painted = scribbles != 0
    rows = np.empty((h, W), bool)
    for i in range(h):
        np.any(painted[first_row[i]:first_row[i + 1]], axis=0, out=rows[i])
    return np.logical_or.reduceat(rows, first_col, axis=1)


def _copy(result: Segmentation) -> Segmentation:
    """A shallow copy sharing the lazy fields (eigenvectors, confidence) not yet computed."""
    out = Segmentation.__new__(Segmentation)
    out.__dict__.update({k: v for k, v in result.__dict__.items() if not k.endswith("_lock")})
    return out


def _kept(result: Segmentation, reason: str, t0: float,
          agreement: float = float("nan")) -> Segmentation:
    out = _copy(result)
    out.timings = {**result.timings, "refine": time.perf_counter() - t0}
    out.refinement = Refinement(False, reason, rule_agreement=agreement)
    return out
