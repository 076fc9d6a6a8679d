"""Segmentation methods compared by the quality benchmark.

Every method is a function ``(image, scribbles) -> labels``: ``image`` float in [0, 1],
(H, W, 3) or (H, W); ``scribbles`` int (H, W), 0 = unlabelled, 1..k = label ids; ``labels``
int (H, W) in the scribbles' ids. :func:`registry` wraps them as :class:`Method` objects; a
method may also hold per-image state (segapp's :class:`segapp.Session`, warm-started between
strokes as in the app) through :meth:`Method.start`.

Methods
-------
``fastge``, ``fastge_c4``, ``fastge_grey``
    segapp FAST-GE with default options (8-neighbour colour graph), with ``connectivity=4``,
    with ``color=False``.
``fastge_ratio``
    segapp FAST-GE with ``colour_weight=0``: the two-label sweep on FAST-GE's ratio alone,
    without the colour term of :mod:`segapp.partition.colour_model`.
``fastge_raw``, ``fastge_tv05``, ``fastge_tv2``
    segapp FAST-GE without its total-variation pre-filter (``denoise=0``, the graph before
    issue 10), and with TV weight 0.5 or 2 × the noise estimate instead of 1.
``fastge_gauss1``, ``fastge_nlm``
    segapp FAST-GE without TV on the image pre-filtered by a 1-px Gaussian or by non-local
    means (:data:`PREFILTERS`; the candidates measured against TV, benchmark only).
``fastge_fresh``
    segapp FAST-GE with ``stable_refinement=False``: every answer from the strokes alone, with
    no tie-breaking towards the previous answer (the default until issue 10 item 4).
``fastge_r2``, ``fastge_r3``
    segapp FAST-GE on wider graphs: every pixel joined to all pixels within radius 2 (12
    neighbours) or 3 (28 neighbours), to measure how the graph's reach affects quality.
``ncut``
    segapp's unconstrained normalized cut on the same graph (clusters matched to labels by
    the Hungarian method inside segapp).
``landmark``, ``ensemble``, ``scacs``, ``ccskl``, ``scpc``
    segapp's other methods with their default options (the group ``family``, not in the
    default run): landmark FAST-GE (Liu et al. 2017 §3), its cluster ensemble (§4), SCACS
    (Li et al. 2015), CCSKL (Li & Liu 2009) and SC-PC (2015). A variant whose method this
    segapp does not register is skipped with a note (:func:`probe_segapp`).
``rw``, ``rw_tuned``, ``rw_tuned_tv``
    :func:`skimage.segmentation.random_walker`, ``mode='cg_mg'`` (pyamg), ``beta=130`` and a
    beta chosen on the dev set (:mod:`benchmarks.quality` ``--rw-beta`` / tuning); the last on
    the TV-filtered image segapp's default graph sees (:func:`denoised`), same beta.
``watershed``
    :func:`skimage.segmentation.watershed` of the Sobel gradient magnitude of the grey image
    with the strokes as markers.
``grabcut``
    ``cv2.grabCut`` in mask mode (binary only; optional, needs ``opencv-python-headless``):
    stroke pixels are ``GC_BGD`` (label 1) / ``GC_FGD`` (label 2), every other pixel is
    ``GC_PR_FGD`` if it is closer (Euclidean) to a foreground stroke than to a background
    stroke and ``GC_PR_BGD`` otherwise (a nearest-stroke prior: with an all-``PR_BGD`` start
    the foreground model would only see the stroke pixels); 5 iterations.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import numpy as np
from scipy import ndimage as ndi

Labeller = Callable[[np.ndarray], np.ndarray]

#: scikit-image's default random-walker beta.
RW_DEFAULT_BETA = 130.0


def _grey(image: np.ndarray) -> np.ndarray:
    if image.ndim == 2:
        return image
    from skimage.color import rgb2gray
    return rgb2gray(image)


# -- plain functions -------------------------------------------------------------------------
def random_walker_labels(image: np.ndarray, scribbles: np.ndarray,
                         beta: float = RW_DEFAULT_BETA) -> np.ndarray:
    """scikit-image random walker (``cg_mg``) with the strokes as seeds."""
    from skimage.segmentation import random_walker
    axis = -1 if image.ndim == 3 else None
    with warnings.catch_warnings():
        # "probability range outside [0, 1]" is a tolerance note, not an error.
        warnings.simplefilter("ignore")
        out = random_walker(image, scribbles, beta=beta, mode="cg_mg", channel_axis=axis)
    return np.asarray(out, dtype=np.int32)


def denoised(image: np.ndarray, weight: float | None = None) -> np.ndarray:
    """The image as segapp's default graph sees it after its TV pre-filter (a fair peer input)."""
    from segapp.graphs.image import DEFAULT_DENOISE, denoise_features
    x = image if image.ndim == 3 else image[:, :, None]
    w = DEFAULT_DENOISE if weight is None else weight
    out = np.clip(denoise_features(np.asarray(x, np.float32), w), 0, 1)
    return out if image.ndim == 3 else out[:, :, 0]


def gaussian_prefilter(image: np.ndarray, sigma: float = 1.0) -> np.ndarray:
    """Gaussian smoothing of every channel (σ in pixels): the plain pre-smoothing candidate."""
    s = (sigma, sigma, 0) if image.ndim == 3 else sigma
    return np.clip(ndi.gaussian_filter(image, s), 0, 1).astype(np.float32)


def nlm_prefilter(image: np.ndarray, h: float = 0.8) -> np.ndarray:
    """Non-local means (5×5 patches, 13×13 window, ``h`` in units of the noise estimate)."""
    from skimage.restoration import denoise_nl_means
    from segapp.graphs.image import noise_sigma
    s = max(noise_sigma(image), 1e-4)
    axis = -1 if image.ndim == 3 else None
    return np.clip(denoise_nl_means(image, h=h * s, sigma=s, patch_size=5, patch_distance=6,
                                    fast_mode=True, channel_axis=axis), 0, 1).astype(np.float32)


def bilateral_prefilter(image: np.ndarray, colour: float = 2.0,
                        spatial: float = 1.0) -> np.ndarray:
    """Bilateral filter, colour σ in units of the noise estimate, spatial σ in pixels."""
    from skimage.restoration import denoise_bilateral
    from segapp.graphs.image import noise_sigma
    s = max(noise_sigma(image), 1e-3)
    axis = -1 if image.ndim == 3 else None
    return np.clip(denoise_bilateral(image, sigma_color=colour * s, sigma_spatial=spatial,
                                     channel_axis=axis), 0, 1).astype(np.float32)


#: Image pre-filters of the segapp variants that are not segapp options (benchmark only):
#: a variant sees ``prefilter(image)`` instead of the image.
PREFILTERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fastge_gauss1": gaussian_prefilter,
    "fastge_nlm": nlm_prefilter,
}


def watershed_labels(image: np.ndarray, scribbles: np.ndarray) -> np.ndarray:
    """Marker watershed of the Sobel gradient of the grey image."""
    from skimage.filters import sobel
    from skimage.segmentation import watershed
    return np.asarray(watershed(sobel(_grey(image)), markers=scribbles), dtype=np.int32)


#: ``grabcut_disc``: unpainted pixels within this share of the image's larger side of an object
#: stroke start as "probably object" (the locality prior of issue 31's held-out comparison).
GRABCUT_DISC = 0.25


def grabcut_labels(image: np.ndarray, scribbles: np.ndarray, iterations: int = 5,
                   near: float | None = None) -> np.ndarray:
    """OpenCV GrabCut initialised from the strokes (binary: ids 1 = bg, 2 = fg).

    Unpainted pixels start as probable object when nearer an object stroke than a background
    one (``near`` None), or when within ``near`` × the larger image side of an object stroke.
    OpenCV's k-means start draws from its global generator: it is seeded before every call
    (``cv2.setRNGSeed(0)``), so the same strokes give the same answer (unseeded, the first
    answer on GrabCut-dev varied from 0.574 to 0.623 mean IoU over five seeds).
    """
    import cv2
    ids = np.unique(scribbles[scribbles > 0])
    if not set(ids.tolist()) <= {1, 2}:
        raise ValueError("grabcut is binary: scribbles must use ids 1 (bg) and 2 (fg)")
    d_fg = ndi.distance_transform_edt(scribbles != 2)
    if near is None:
        d_bg = ndi.distance_transform_edt(scribbles != 1)
        probable = d_fg < d_bg
    else:
        probable = d_fg <= near * max(scribbles.shape)
    mask = np.where(probable, cv2.GC_PR_FGD, cv2.GC_PR_BGD).astype(np.uint8)
    mask[scribbles == 1] = cv2.GC_BGD
    mask[scribbles == 2] = cv2.GC_FGD
    rgb = image if image.ndim == 3 else np.repeat(image[:, :, None], 3, axis=2)
    bgr = np.ascontiguousarray((np.clip(rgb, 0, 1) * 255 + 0.5).astype(np.uint8)[:, :, ::-1])
    bgd = np.zeros((1, 65), np.float64)
    fgd = np.zeros((1, 65), np.float64)
    cv2.setRNGSeed(0)
    cv2.grabCut(bgr, mask, None, bgd, fgd, iterations, cv2.GC_INIT_WITH_MASK)
    fg = (mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)
    return np.where(fg, 2, 1).astype(np.int32)


def segapp_labels(image: np.ndarray, scribbles: np.ndarray, method: str = "fastge",
                  **options: Any) -> np.ndarray:
    """One-shot ``segapp.segment`` (a fresh session per call)."""
    import segapp
    return np.asarray(segapp.segment(image, scribbles, method=method, **options).labels)


# -- registry --------------------------------------------------------------------------------
@dataclass
class Method:
    """A compared method.

    Attributes
    ----------
    name : str
        Short name used on the command line and in tables.
    description : str
        One line for the report.
    fn : callable
        ``(image, scribbles) -> labels``.
    binary_only : bool
        Only run on two-label (GrabCut) images.
    session : callable, optional
        ``image -> (scribbles -> labels)``: per-image state kept across strokes.
    prefilter : callable, optional
        ``image -> image`` applied once per image before the method sees it.
    """

    name: str
    description: str
    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    binary_only: bool = False
    session: Callable[[np.ndarray], Labeller] | None = field(default=None, repr=False)
    prefilter: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False)

    def start(self, image: np.ndarray) -> Labeller:
        """Labeller for one image (stateful when the method has a session)."""
        if self.prefilter is not None:
            image = self.prefilter(image)
        if self.session is not None:
            return self.session(image)
        return partial(self.fn, image)


def _segapp_session(image: np.ndarray, method: str, options: dict[str, Any]) -> Labeller:
    """A segapp Session per image: later strokes are warm-started, as in the app.

    The session is created on the first call so that its set-up time (graph, AMG) is charged
    to the first stroke, as in ``segapp.segment``.
    """
    import segapp
    state: dict[str, Any] = {}

    def run(scribbles: np.ndarray) -> np.ndarray:
        if "sess" not in state:
            state["sess"] = segapp.Session(image, method=method, **options)
        return np.asarray(state["sess"].update(scribbles).labels)
    return run


def segapp_available() -> tuple[bool, str]:
    """Whether ``segapp.segment`` can be imported (the engine may not have landed yet)."""
    try:
        import segapp
        segapp.segment  # noqa: B018
    except Exception as exc:  # ImportError, AttributeError, anything half-written
        return False, f"segapp.segment not importable: {type(exc).__name__}: {exc}"
    return True, ""


def probe_segapp(method: str, options: dict[str, Any]) -> str | None:
    """Try a method/options pair on a tiny synthetic image; a note if the engine rejects it."""
    import segapp
    from segapp.errors import InvalidInputError
    img = np.zeros((24, 32, 3), np.float32)
    img[:, 16:] = 0.8
    s = np.zeros((24, 32), np.int32)
    s[12, 3:8] = 1
    s[12, 24:29] = 2
    try:
        segapp.segment(img, s, method=method, **options)
    except (InvalidInputError, TypeError) as exc:
        return f"skipped: segapp rejects method={method!r} {options}: {exc}"
    except Exception as exc:  # a solver hiccup on the probe is not a rejection
        return None if type(exc).__name__ == "SolverError" else f"skipped: {exc!r}"
    return None


def cv2_available() -> tuple[bool, str]:
    try:
        import cv2
        cv2.grabCut  # noqa: B018
    except Exception as exc:
        return False, (f"cv2 not importable ({type(exc).__name__}); install the optional "
                       "extra opencv-python-headless to benchmark GrabCut")
    return True, ""


SEGAPP_VARIANTS: dict[str, tuple[str, dict[str, Any], str]] = {
    "fastge": ("fastge", {}, "segapp FAST-GE, default options"),
    "fastge_c4": ("fastge", {"connectivity": 4}, "segapp FAST-GE, connectivity=4"),
    "fastge_grey": ("fastge", {"color": False}, "segapp FAST-GE, grey graph (color=False)"),
    "fastge_r2": ("fastge", {"radius": 2},
                  "segapp FAST-GE, radius-2 graph (12 neighbours)"),
    "fastge_r3": ("fastge", {"radius": 3},
                  "segapp FAST-GE, radius-3 graph (28 neighbours)"),
    "fastge_fresh": ("fastge", {"stable_refinement": False},
                     "segapp FAST-GE, stable_refinement=False (history-free: no tie-break "
                     "towards the previous answer)"),
    "fastge_ratio": ("fastge", {"colour_weight": 0.0},
                     "segapp FAST-GE, two-label sweep on FAST-GE's ratio alone (no colour term; "
                     "the default before issue 22 item 2)"),
    "fastge_raw": ("fastge", {"denoise": 0.0},
                   "segapp FAST-GE without the TV pre-filter (the graph before issue 10)"),
    "fastge_tv05": ("fastge", {"denoise": 0.5}, "segapp FAST-GE, TV weight 0.5 x noise"),
    "fastge_tv2": ("fastge", {"denoise": 2.0}, "segapp FAST-GE, TV weight 2 x noise"),
    "fastge_gauss1": ("fastge", {"denoise": 0.0},
                      "segapp FAST-GE on a Gaussian-smoothed image (1 px), no TV"),
    "fastge_nlm": ("fastge", {"denoise": 0.0},
                   "segapp FAST-GE on a non-local-means image (h = 0.8 x noise), no TV"),
    "ncut": ("ncut", {}, "segapp unconstrained normalized cut, Hungarian-matched"),
    "landmark": ("landmark", {}, "segapp landmark FAST-GE (Liu et al. 2017 §3), default options"),
    "ensemble": ("ensemble", {},
                 "segapp cluster ensemble of landmark FAST-GE partitions (Liu et al. 2017 §4)"),
    "scacs": ("scacs", {}, "segapp SCACS (Li et al. 2015): constrained ncut, landmark graph"),
    "ccskl": ("ccskl", {}, "segapp CCSKL (Li & Liu 2009): spectral kernel learning"),
    "scpc": ("scpc", {}, "segapp SC-PC (2015): stroke pixels as landmarks"),
}

ALL_METHODS = ("fastge", "fastge_c4", "fastge_grey", "fastge_r2", "fastge_r3", "ncut", "rw", "rw_tuned",
               "watershed", "grabcut", "grabcut_disc")

#: segapp's related methods (landmark and kernel-learning): slower per stroke than FAST-GE on
#: small images, so not in the default run; ``--methods family`` (or ``all``) selects them.
FAMILY_METHODS = ("landmark", "ensemble", "scacs", "ccskl", "scpc")

#: Names that stand for several methods on the command line.
METHOD_GROUPS: dict[str, tuple[str, ...]] = {
    "default": ALL_METHODS,
    "family": FAMILY_METHODS,
    "all": ALL_METHODS + FAMILY_METHODS,
}


def option_variant(name: str) -> tuple[str, dict[str, Any], str]:
    """``METHOD@opt=value,opt=value`` (e.g. ``fastge@appearance=3,appearance_rounds=1``): a
    segapp method with options given on the command line, for scans."""
    import ast

    method, _, spec = name.partition("@")
    opts: dict[str, Any] = {}
    for item in filter(None, spec.split(",")):
        key, _, value = item.partition("=")
        try:
            opts[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            opts[key] = value
    return method, opts, f"segapp {method}, {opts}"


def expand_methods(names: tuple[str, ...] | list[str]) -> list[str]:
    """Method names with group names (:data:`METHOD_GROUPS`) expanded, first occurrence kept."""
    out: list[str] = []
    for name in names:
        for m in METHOD_GROUPS.get(name, (name,)):
            if m not in out:
                out.append(m)
    return out


def registry(names: tuple[str, ...] | list[str] = ALL_METHODS, rw_beta: float | None = None,
             segapp_mode: str = "session",
             log: Callable[[str], None] = print) -> dict[str, Method]:
    """Build the requested methods, skipping (with a printed note) those that cannot run.

    Parameters
    ----------
    names : sequence of str
        Method names (see :data:`ALL_METHODS`, :data:`FAMILY_METHODS`; group names of
        :data:`METHOD_GROUPS` are expanded).
    rw_beta : float, optional
        Beta of ``rw_tuned``; when None ``rw_tuned`` is left out (the caller tunes it first).
    segapp_mode : {"session", "segment"}
        Whether segapp methods keep one warm-started session per image or call
        ``segapp.segment`` afresh for every stroke.
    log : callable
        Where the skip notes go.
    """
    out: dict[str, Method] = {}
    ok_segapp, why_segapp = segapp_available()
    for name in expand_methods(names):
        if name in SEGAPP_VARIANTS or "@" in name:
            if not ok_segapp:
                log(f"note: {name} {why_segapp}")
                continue
            method, opts, desc = SEGAPP_VARIANTS.get(name) or option_variant(name)
            note = probe_segapp(method, opts)
            if note:
                log(f"note: {name} {note}")
                continue
            fn = partial(segapp_labels, method=method, **opts)
            sess = None
            if segapp_mode == "session":
                sess = partial(_segapp_session, method=method, options=opts)
            out[name] = Method(name, desc, fn, session=sess, prefilter=PREFILTERS.get(name))
        elif name == "rw":
            out[name] = Method(name, f"random_walker cg_mg, beta={RW_DEFAULT_BETA:g}",
                               partial(random_walker_labels, beta=RW_DEFAULT_BETA))
        elif name == "rw_tuned":
            if rw_beta is None:
                continue
            out[name] = Method(name, f"random_walker cg_mg, tuned beta={rw_beta:g}",
                               partial(random_walker_labels, beta=rw_beta))
        elif name == "rw_tuned_tv":
            if rw_beta is None:
                continue
            out[name] = Method(name, f"random_walker cg_mg, tuned beta={rw_beta:g}, on the "
                               "TV-filtered image segapp's default graph sees",
                               partial(random_walker_labels, beta=rw_beta), prefilter=denoised)
        elif name == "watershed":
            out[name] = Method(name, "watershed on the Sobel gradient, strokes as markers",
                               watershed_labels)
        elif name == "grabcut":
            ok, why = cv2_available()
            if not ok:
                log(f"note: grabcut skipped: {why}")
                continue
            out[name] = Method(name, "OpenCV grabCut, mask init from strokes, 5 iterations",
                               grabcut_labels, binary_only=True)
        elif name == "grabcut_disc":
            ok, why = cv2_available()
            if not ok:
                log(f"note: grabcut_disc skipped: {why}")
                continue
            out[name] = Method(name, "OpenCV grabCut, unpainted pixels within a quarter of the "
                               "image's larger side of an object stroke start as probable "
                               "object, the rest probable background; 5 iterations",
                               partial(grabcut_labels, near=GRABCUT_DISC), binary_only=True)
        else:
            raise ValueError(f"unknown method {name!r}; choose from "
                             f"{', '.join(METHOD_GROUPS['all'] + tuple(METHOD_GROUPS))}")
    return out

