r"""What a folder's finished images taught: per-label colour models carried to the next photo.

A person annotating a folder of similar photos paints the same sky, road and grass again on
every image. ilastik and Labkit answer that by training once and applying to the folder; here
the training is the work already done: every finished image's answer (its label map, the
strokes that made it) fits one colour model per label, and the next image opens with the
answer those models suggest (:func:`suggest`), which the person accepts or corrects.

The maths
---------
**Learning** (:meth:`LearntAppearance.learn`). For a finished image with answer ``y`` and
CIE Lab colours ``c_i``, each label ``a`` of the answer gets a Gaussian mixture
``p_m(c | a)`` (:mod:`segapp.appearance.mixture`, K ≤ 5, the image's noise on the covariance
floor) fitted to its pixels with weights

.. math:: w_i = [y_i = a]\,\big(1 + [i \text{ painted}]\big)\,
          \big[\operatorname{dist}(i, \{j : y_j \ne a\}) > B\big],

painted pixels counting double (the person said so) and pixels within ``B`` =
:data:`BOUNDARY` px of another label left out (mixed colours across an edge; the answer is
least sure there). Colours are quantised once (:class:`~segapp.appearance.ColourPalette`), so
the fit costs the image's distinct colour bins, not its pixels.

**Carrying** (:meth:`LearntAppearance.models`). The folder's model of label ``a`` is the
mixture of the per-image mixtures of the last :data:`MAX_IMAGES` finished images that have
it, each image weighing the same:

.. math:: p(c \mid a) = \frac{1}{M_a} \sum_{m=1}^{M_a} p_m(c \mid a),

so the memory and the time of a suggestion are bounded (at most ``5 · MAX_IMAGES``
components per label) however many images are done.

**Suggesting** (:func:`suggest`). The new image's pixels get the posteriors of equal label
priors, ``P_a(i) = p(c_i | a) / Σ_b p(c_i | b)`` (:func:`~segapp.appearance.label_posteriors`),
which are regularised by the image's own graph ``G_D`` (``L = D − W``,
:func:`segapp.graphs.image_graph`, FAST-GE's graph) as Grady's random walker with priors
(Grady, "Multilabel random walker image segmentation using prior models", CVPR 2005):

.. math:: (L + γ D)\, X = γ D P, \qquad X_{S_a} = e_a \ \text{on the painted pixels } S_a,

each column a Dirichlet problem whose painted pixels are fixed to their label. ``X`` is a
smoothed probability (rows sum to 1); the suggestion is ``argmax_a X_a`` and its confidence
``max_a X_a``. ``γ = 1 / smoothing``: a pixel's answer averages its posteriors over about
``√smoothing`` pixels along edges of similar colour and not across strong edges. Measured on
``benchmarks/carry.py`` (CHANGELOG.md). Labels with no model are never suggested; a painted
label always keeps its painted pixels.

These are the graph's harmonic potentials with a prior, ``(L_FF + γD_F) X_F = γ D_F P_F −
L_FS X_S``, which FAST-GE's appearance term solves too: the solve goes through
:meth:`segapp.solve.GraphSolver.potentials` (``shift`` γ, ``prior`` P). For γ ≥
:data:`segapp.solve.harmonic.JACOBI_SHIFT` (smoothing ≤ 100) it is block conjugate gradients
with a Jacobi preconditioner, started from P: ``L + γD`` is diagonally dominant, the
preconditioned matrix's condition number at most ``(2 + γ)/γ``, so it needs O(√smoothing)
sparse products and no set-up (a factor would cost more than the whole solve).

A photo of more than ``max_pixels`` pixels is suggested on the working copy every method
segments (:mod:`segapp.inputs.resolution`: the image area-averaged, the strokes reduced so that
every painted label keeps a pixel, the answer brought back by nearest neighbour); the
strokes' own colours are learnt at full resolution, as the finished images' are.

Files
-----
:meth:`LearntAppearance.save` writes a small JSON (``segapp-appearance``, version 1: the
per-image mixtures, a few kB per image) atomically; :meth:`LearntAppearance.read` refuses a
file that is not one with :class:`~segapp.errors.InvalidInputError`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import ndimage as ndi

from ..cancel import CancelLike, CancelToken
from ..errors import InvalidInputError
from ..inputs.resolution import (DEFAULT_MAX_PIXELS, nearest, reduce_image, reduce_map,
                                 working_shape)
from .mixture import Mixture
from .models import COMPONENTS, ColourPalette, fit_label_models, label_posteriors

__all__ = ["LearntAppearance", "Suggestion", "suggest", "APPEARANCE_FILE", "FORMAT",
           "MAX_IMAGES", "SMOOTHING"]

FORMAT, VERSION = "segapp-appearance", 1
#: Where a folder keeps it (beside ``labels.json``, :mod:`segapp.editing.project`).
APPEARANCE_FILE = "appearance.json"
#: Finished images a label's folder model is made of (the most recent ones).
MAX_IMAGES = 12
#: Pixels this close to another label are not learnt from (px).
BOUNDARY = 2
#: Default ``smoothing`` of :func:`suggest` (1/γ; 0: per-pixel posteriors).
SMOOTHING = 10.0
#: The name the strokes of the image being suggested are learnt under.
HERE = "\0this image"
#: A larger image is suggested on a working copy of at most this many pixels (the session's).
WORKING_PIXELS = DEFAULT_MAX_PIXELS
#: Relative residual of the suggestion's CG solves (where the direct solver does not serve).
CG_TOL = 1e-3


def _colours(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from ..partition.colour_model import colour_noise, lab_colours

    lab = lab_colours(np.asarray(image))
    return lab, colour_noise(lab)


@dataclass
class LearntAppearance:
    """Per-image, per-label colour mixtures of a folder's finished images (module doc).

    ``images`` maps an image's name to ``{label id: (pixels learnt from, mixture)}``, in the
    order the images were learnt (a re-learnt image moves to the end).
    """

    images: dict[str, dict[int, tuple[float, Mixture]]] = field(default_factory=dict)

    # -- learning --------------------------------------------------------------------------
    def learn(self, name: str, image: np.ndarray, answer: np.ndarray,
              scribbles: np.ndarray | None = None) -> None:
        """Learn (again) from image ``name``: its pixels in [0, 1] (H, W[, 3]), its answer
        (H, W) label ids (0: none) and the strokes painted on it (0 = unpainted). An image of
        more than :data:`WORKING_PIXELS` pixels is learnt from every f-th pixel of each f × f
        block."""
        answer = np.asarray(answer)
        img = np.asarray(image)
        if answer.shape != img.shape[:2]:
            raise InvalidInputError(f"{name}: the answer is {answer.shape} but the image is "
                                    f"{img.shape[:2]}")
        f = int(np.ceil(np.sqrt(answer.size / WORKING_PIXELS)))
        if f > 1:  # a sample of every f-th pixel of each f × f block: bounded time, memory
            img, answer = img[::f, ::f], answer[::f, ::f]
            scribbles = None if scribbles is None else np.asarray(scribbles)[::f, ::f]
        lab, noise = _colours(img)
        ids = [int(i) for i in np.unique(answer) if i > 0]
        if not ids:
            self.forget(name)
            return
        pal = ColourPalette.of(lab)
        weights = np.zeros((pal.n, len(ids)), np.float64)
        painted = (np.zeros(answer.shape, bool) if scribbles is None
                   else np.asarray(scribbles) > 0)
        for a, ident in enumerate(ids):
            mine = answer == ident
            inner = ndi.distance_transform_edt(mine) > BOUNDARY
            inner |= mine & painted  # a painted pixel is sure, near an edge too
            w = inner * (1.0 + painted)
            weights[:, a] = w.ravel()
        fitted = fit_label_models(pal, pal.bin_sums(weights), COMPONENTS, noise=noise)
        learnt = {ident: (float(weights[:, a].sum()), m) for a, (ident, m)
                  in enumerate(zip(ids, fitted)) if m is not None}
        self.images.pop(name, None)
        if learnt:
            self.images[name] = learnt

    def forget(self, name: str) -> None:
        self.images.pop(name, None)

    # -- what is carried -------------------------------------------------------------------
    @property
    def label_ids(self) -> list[int]:
        return sorted({i for models in self.images.values() for i in models})

    def sources(self, label_id: int) -> list[str]:
        """The images label ``label_id``'s model is made of (at most :data:`MAX_IMAGES`)."""
        return [n for n, models in self.images.items() if label_id in models][-MAX_IMAGES:]

    def model(self, label_id: int) -> Mixture | None:
        """The folder's mixture of ``label_id`` (the module doc's average), or None."""
        parts = [self.images[n][label_id][1] for n in self.sources(label_id)]
        if not parts:
            return None
        return Mixture(np.concatenate([m.weights for m in parts]) / len(parts),
                       np.concatenate([m.means for m in parts]),
                       np.concatenate([m.covariances for m in parts]))

    def models(self, label_ids: list[int]) -> list[Mixture | None]:
        return [self.model(i) for i in label_ids]

    def posteriors(self, palette: ColourPalette, label_ids: list[int]) -> np.ndarray:
        """(n, k): each pixel's posterior of the labels ``label_ids`` under their folder
        models (a label without one: 0; none has one: uniform)."""
        return label_posteriors(palette, self.models(label_ids))

    # -- files -----------------------------------------------------------------------------
    def to_json(self) -> str:
        def mix(m: Mixture) -> dict[str, Any]:
            return {"weights": m.weights.tolist(), "means": m.means.tolist(),
                    "covariances": m.covariances.tolist()}

        doc = {"format": FORMAT, "version": VERSION,
               "images": [{"name": n, "labels": [{"id": i, "pixels": p, **mix(m)}
                                                 for i, (p, m) in models.items()]}
                          for n, models in self.images.items()]}
        return json.dumps(doc, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str = "appearance") -> "LearntAppearance":
        """Parse :meth:`to_json`'s text; InvalidInputError naming ``where`` if it is not."""
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise ValueError(f"not a {FORMAT} file")
            if doc.get("version") != VERSION:
                raise ValueError(f"version {doc.get('version')!r}, this segapp reads {VERSION}")
            images: dict[str, dict[int, tuple[float, Mixture]]] = {}
            for entry in doc["images"]:
                models = {}
                for lab in entry["labels"]:
                    m = Mixture(np.asarray(lab["weights"], np.float64),
                                np.asarray(lab["means"], np.float64),
                                np.asarray(lab["covariances"], np.float64))
                    _check(m)
                    models[int(lab["id"])] = (float(lab["pixels"]), m)
                images[str(entry["name"])] = models
        except (ValueError, TypeError, KeyError, AttributeError, np.linalg.LinAlgError) as exc:
            raise InvalidInputError(f"{where}: not a readable learnt appearance: "
                                    f"{exc}") from None
        return cls(images)

    @classmethod
    def read(cls, path: str | os.PathLike) -> "LearntAppearance":
        """The learnt appearance saved at ``path``.

        Raises
        ------
        InvalidInputError
            The file cannot be read or is not a ``segapp-appearance`` file.
        """
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"{path}: cannot read the learnt appearance: "
                                    f"{getattr(exc, 'strerror', None) or exc}") from None
        return cls.from_json(text, str(path))

    def save(self, path: str | os.PathLike) -> None:
        """Write it atomically (:func:`segapp.io.write_text_atomic`)."""
        from ..io import write_text_atomic

        write_text_atomic(path, self.to_json())


def _check(m: Mixture) -> None:
    """A mixture read from a file: shapes that agree, finite, positive-definite covariances."""
    K = m.weights.shape[0]
    c = m.means.shape[1] if m.means.ndim == 2 else -1
    if (m.weights.ndim != 1 or K == 0 or m.means.shape != (K, c) or c not in (1, 3)
            or m.covariances.shape != (K, c, c)):
        raise ValueError("a mixture's weights, means and covariances do not agree")
    if not (np.all(np.isfinite(m.weights)) and np.all(m.weights >= 0) and m.weights.sum() > 0
            and np.all(np.isfinite(m.means)) and np.all(np.isfinite(m.covariances))):
        raise ValueError("a mixture has a value that is not a finite number")
    np.linalg.cholesky(m.covariances)  # LinAlgError if one is not positive definite


# -- the suggestion ------------------------------------------------------------------------
@dataclass(frozen=True)
class Suggestion:
    """A suggested answer: ``labels`` (H, W) label ids, ``confidence`` (H, W) in [1/k, 1],
    ``probabilities`` (h, w, k) the smoothed ``X`` of the module doc over ``label_ids`` (of
    the working copy for a large image)."""

    labels: np.ndarray
    confidence: np.ndarray
    probabilities: np.ndarray
    label_ids: tuple[int, ...]
    images: int  # finished images it was learnt from


def suggest(image: np.ndarray, learnt: LearntAppearance, scribbles: np.ndarray | None = None,
            smoothing: float = SMOOTHING, graph: Any = None,
            max_pixels: int | None = WORKING_PIXELS, cancel: CancelLike = None) -> Suggestion:
    """The answer the folder's models suggest for ``image`` (module doc), with the painted
    pixels of ``scribbles`` (label ids, 0 = unpainted) fixed to their labels.

    A painted label without a model is suggested only where it was painted and where the
    graph carries it; ``graph`` (a :class:`segapp.graphs.Graph` of the image) is built with
    FAST-GE's defaults if not given. An image of more than ``max_pixels`` pixels is suggested
    on the working copy the rest of segapp segments (:mod:`segapp.inputs.resolution`: the
    image area-averaged, every painted label kept on the reduced strokes) and the answer
    brought back by nearest neighbour, the painted pixels set to their labels again.
    ``cancel`` (a :class:`~segapp.cancel.CancelToken`, callable or Event) stops it with
    :class:`~segapp.errors.Cancelled`; the token's progress hears its stages.

    Raises
    ------
    InvalidInputError
        Nothing learnt yet, or strokes of another size than the image.
    """
    token = CancelToken.of(cancel)
    img = np.asarray(image)
    shape = img.shape[:2]
    painted = np.zeros(shape, np.int64) if scribbles is None else np.asarray(scribbles)
    if painted.shape != shape:
        raise InvalidInputError(f"strokes {painted.shape} do not match the image {shape}")
    if not learnt.images:
        raise InvalidInputError("nothing learnt yet: finish an image of the folder first")
    ids = sorted(set(learnt.label_ids) | {int(i) for i in np.unique(painted) if i > 0})
    if painted.any():
        # what is painted here is the truth about this photo: its colours join the
        # folder's models as one more finished image (a new light, a label not seen before),
        # learnt at full resolution as the finished images were (a working copy's averaged
        # colours would make its model sharper than theirs)
        token.progress("suggestion: the strokes' colours")
        learnt = LearntAppearance(dict(learnt.images))
        learnt.learn(HERE, img, painted, painted)
    small = shape if graph is not None or not max_pixels else working_shape(shape, max_pixels)
    if small != shape:
        token.progress("suggestion: working copy")
        X = _smoothed(reduce_image(img, small), learnt, reduce_map(painted, small), ids,
                      smoothing, None, token)
    else:
        X = _smoothed(img, learnt, painted, ids, smoothing, graph, token)
    labels = np.asarray(ids, np.int32)[np.argmax(X, 1)].reshape(small)
    conf = X.max(1).reshape(small)
    if small != shape:
        mine = painted > 0
        labels, conf = nearest(labels, shape), nearest(conf, shape)
        labels[mine] = painted[mine]
        conf[mine] = 1.0
    return Suggestion(labels, conf, X.reshape(*small, len(ids)), tuple(ids),
                      len(learnt.images))


def _smoothed(img: np.ndarray, learnt: LearntAppearance, painted: np.ndarray, ids: list[int],
              smoothing: float, graph: Any, token: CancelToken) -> np.ndarray:
    """``X`` (n, k) of the module doc on ``img`` with its strokes ``painted`` fixed."""
    token.progress("suggestion: colour posteriors")
    lab, _noise = _colours(img)
    P = learnt.posteriors(ColourPalette.of(lab), ids)
    flat = painted.ravel()
    if smoothing <= 0:
        P[flat > 0] = np.eye(len(ids))[np.searchsorted(ids, flat[flat > 0])]
        return P
    if graph is None:
        from ..graphs import image_graph

        token.progress("suggestion: pixel graph")
        graph = image_graph(img)
    token.progress("suggestion: smoothing")
    return _random_walker_with_priors(graph, P, [np.flatnonzero(flat == i) for i in ids],
                                      1.0 / smoothing, token)


def _random_walker_with_priors(graph: Any, P: np.ndarray, sets: list[np.ndarray],
                               gamma: float, cancel: CancelToken) -> np.ndarray:
    """``X`` of ``(L + γD) X = γ D P`` with ``X = e_a`` on label a's painted pixels ``sets[a]``:
    the graph's harmonic potentials with a prior (:meth:`segapp.solve.GraphSolver.potentials`,
    shift γ), rows clipped to [0, 1] and summing to 1 (the iterative path's rounding)."""
    from ..solve import GraphSolver

    X = GraphSolver.of(graph).potentials(sets, shift=gamma, prior=P, tol=CG_TOL,
                                         cancel=cancel)
    np.clip(X, 0.0, 1.0, out=X)
    X /= np.maximum(X.sum(1, keepdims=True), 1e-12)
    return X
