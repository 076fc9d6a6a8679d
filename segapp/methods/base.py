"""The one shell every segmentation / clustering method stands on: :class:`Method`.

A method object is built once per data set and then answers :meth:`Method.update` for every
edit of the constraints, keeping whatever it can reuse (graphs, landmarks, multigrid
hierarchies, previous eigenvectors). Two families fill it in:
:class:`segapp.methods.graph_method.GraphMethod` (FAST-GE, normalized cut, CCSKL: a weighted
graph) and :class:`segapp.methods.landmark_base.FeatureMethod` (landmark FAST-GE, ensemble,
SCACS, SC-PC: feature vectors).

Data comes in one of two forms:

- an image, ``(H, W)`` or ``(H, W, 3)`` float in [0, 1] — :meth:`Method.from_image`;
- a weighted graph (symmetric sparse adjacency ``W``, n × n) and/or a feature matrix
  ``(n, f)`` — :meth:`Method.from_data`. Graph methods need ``graph``; landmark methods need
  ``features``. A method given only what it cannot use raises
  :class:`~segapp.errors.InvalidInputError`.

Constraints are a *label map* with the data's shape — ``(H, W)`` for an image, ``(n,)``
otherwise — with 0 = unlabelled and 1..k = the user's label ids (scikit-image's
``random_walker`` convention). Two vertices with the same label are must-linked, two with
different labels cannot-linked. The result is a :class:`~segapp.result.Segmentation` whose
``labels`` have the same shape and carry the user's label ids, and whose ``eigenvectors``
(shape ``(*shape, m)``) hold whatever embedding the method has, so the app can show it.

Options and settings
--------------------
A class *declares* its options (``cls.options``, :class:`~segapp.options.Option` s; ``defaults``
derived); an instance holds the *values in effect* (``self.settings``, a read-only
:class:`~segapp.options.Settings`), checked once when the method is made. An update's solve
options are checked alone (:meth:`Settings.with_solve`); a :class:`segapp.Session` checks its
options once and hands the settings of each update to :meth:`Method.run`.

One update
----------
:meth:`Method.update` is a template: *validate* (the update's solve options, then the checks
between options, :meth:`_check`) → *strokes* (one reader, :func:`segapp.strokes.reading.read_strokes`)
→ *solve* (:meth:`_solve`, the family's) → *result* (:meth:`_result`: stroke agreement, painted
pixels clamped to their label, the :class:`Segmentation`). Partitioning is part of
:meth:`_solve`: every constrained method re-solves with one more vector (FAST-GE, landmark
FAST-GE), a stiffer must-link (SCACS) or another basis (CCSKL) when the partition loses a
label's strokes, so the two steps loop together; each family keeps its partition in one
function (:func:`segapp.partition.rounding.round_eigenvectors`,
:meth:`~segapp.methods.landmark_base.LandmarkMethod._partition`).

Cancellation
------------
``cancel`` is any cancel-like value (None, a callable returning True, an object with
``is_set()`` such as :class:`threading.Event`, a :class:`~segapp.cancel.CancelToken`); the
public entries (:meth:`update`, :meth:`prepare_next` via the Session) turn it into a token once
and everything below polls that token.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from ..blas import one_blas_thread
from ..cancel import CancelLike, CancelToken
from ..errors import SolverError
from ..inputs.checks import check_label_map
from ..options import RULES, Option, Rule, Settings, check_rules, defaults, rules_for
from ..partition import clamp_strokes, stroke_agreement
from ..result import Segmentation
from ..strokes.reading import Strokes, read_strokes


class Method(ABC):
    """Options, the ``update`` template and the next-edit hooks of every method (module notes).

    Subclasses (through a family) set ``name``, ``description``, ``constrained``, ``options``
    and implement the constructors and :meth:`_solve`.
    """

    name: ClassVar[str] = ""          #: registry key, used by ``--method`` and the app
    description: ClassVar[str] = ""   #: one line for ``segapp methods``
    constrained: ClassVar[bool] = True  #: False for the unconstrained baseline
    options: ClassVar[tuple[Option, ...]] = ()  #: the option declarations
    defaults: ClassVar[dict[str, Any]] = {}     #: ``{name: default}``, derived from ``options``
    #: The rules between its options (:data:`segapp.options.RULES`), derived from ``options``.
    rules: ClassVar[tuple[Rule, ...]] = ()
    #: Session works at full resolution (no reduced working copy): the landmark methods.
    full_resolution: ClassVar[bool] = False
    #: Whether :meth:`prepare_next` has work (a Session then runs it after each answer).
    prepares: ClassVar[bool] = False

    settings: Settings   #: the option values in effect (this update's, once it ran)
    shape: tuple[int, ...]  #: the data's shape: ``(H, W)`` or ``(n,)``
    n: int  #: number of vertices / points

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.defaults = defaults(cls.options)
        cls.rules = rules_for(cls.options)

    # -- options ---------------------------------------------------------------------------
    @classmethod
    def resolve(cls, options: dict[str, Any]) -> Settings:
        """The settings of ``options``: every name and value checked, once, before any work."""
        settings = Settings.resolve(cls.options, options, cls.name)
        cls._check(settings)
        return settings

    @classmethod
    def updated(cls, settings: Settings, solve_options: dict[str, Any]) -> Settings:
        """``settings`` with an update's solve options: only those checked (then the checks
        between options, if any changed)."""
        new = settings.with_solve(solve_options)
        if new is not settings:
            cls._check(new)
        return new

    @classmethod
    def _check(cls, settings: Settings) -> None:
        """The rules between options (each option checks itself)."""
        check_rules(cls.rules, settings)

    def _settle(self, settings: Settings) -> None:
        """Keep the settings the method was made with (each update starts from them); the
        rules on the data's size are checked now that it is known (``self.n``)."""
        check_rules(self.rules, settings, n=self.n)
        self._made_with = settings
        self.settings = settings
        self.timings: dict[str, float] = {}

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_image(cls, image: np.ndarray, **options: Any) -> "Method":
        """The method on an image (the family builds its graph or features)."""
        return cls.from_settings(image, cls.resolve(options))

    @classmethod
    @abstractmethod
    def from_settings(cls, image: np.ndarray, settings: Settings) -> "Method":
        """The method on an image with settings already checked (:meth:`resolve`)."""

    @classmethod
    @abstractmethod
    def from_data(cls, *, graph: Any = None, features: np.ndarray | None = None,
                  **options: Any) -> "Method":
        """The method on a graph and/or feature vectors (module notes)."""

    # -- one update ------------------------------------------------------------------------
    def update(self, scribbles: np.ndarray, *, cancel: CancelLike = None,
               confidence: np.ndarray | None = None, **solve_options: Any) -> Segmentation:
        """Segment with the given strokes.

        ``solve_options`` (solve-stage options of ``options``) apply to this update only;
        ``cancel`` (module notes) stops it with :class:`~segapp.errors.Cancelled`;
        ``confidence`` (per pixel in [0, 1]) makes the strokes soft.
        """
        settings = self.updated(self._made_with, solve_options)
        return self.run(check_label_map(scribbles, self.shape), CancelToken.of(cancel),
                        confidence, settings)

    def run(self, scribbles: np.ndarray, cancel: CancelToken, confidence: np.ndarray | None,
            settings: Settings) -> Segmentation:
        """:meth:`update` with its settings checked, its token made and its scribbles
        checked (a Session's call: :func:`~segapp.inputs.checks.check_label_map`).

        On one BLAS thread: the dense work is tall-skinny (n × m with m ≤ 20) or p × p, where
        a second OpenBLAS thread only adds synchronisation; measured at 250K px on 2 cores,
        FAST-GE took 2.5 s with one thread vs 5.7 s with two while another process kept a core
        busy (~25% slower on an idle machine), and landmark FAST-GE on the Four-Moons data 3.9 s
        vs 31 s with OpenBLAS's default threads (``benchmarks/synthetic.py``).
        """
        with one_blas_thread():
            return self.answer(self._read_strokes(scribbles, confidence), cancel, settings)

    def answer(self, strokes: Strokes, cancel: CancelToken, settings: Settings) -> Segmentation:
        """:meth:`run` with the strokes read (an ensemble's base partitions share its own)."""
        check_rules(self.rules, settings, k=strokes.k, n=self.n)
        self.settings = settings
        timings: dict[str, float] = {}
        return self._result(strokes, self._solve(strokes, cancel, timings), timings)

    def _read_strokes(self, scribbles: np.ndarray, confidence: np.ndarray | None) -> Strokes:
        """The strokes of this edit (a method that ignores confidence overrides this)."""
        return read_strokes(scribbles, self.n, confidence)

    @abstractmethod
    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Segmentation:
        """The method's work for one edit (solve and partition; module notes): a
        :class:`Segmentation` as the method's own partition gave it — flat ``(n,)`` labels
        and ``(n, m)`` embedding, painted pixels not yet clamped, ``stroke_agreement`` if the
        method measured it — which :meth:`_result` finishes."""

    def _result(self, strokes: Strokes, found: Segmentation,
                timings: dict[str, float]) -> Segmentation:
        """``found`` finished in place: stroke agreement (before the clamp), painted pixels
        clamped, the data's shape, the timings and the method's name."""
        wide = np.asarray(found.eigenvectors)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):  # checked below
            embedding = wide.reshape(*self.shape, -1).astype(np.float32, copy=False)
        eigenvalues = np.asarray(found.eigenvalues, float)
        # A graph whose weights are near the floating-point limits has D-normalised
        # eigenvectors beyond float32's range: ncut on W × 1e-300 returned them non-finite,
        # silently (issue 30); on W × 1e150 they underflowed to zeros.
        flat = embedding.reshape(-1, embedding.shape[-1])
        if not (np.all(np.isfinite(embedding)) and np.all(np.isfinite(eigenvalues))):
            raise SolverError(f"{self.name}: the eigenvectors have non-finite values (a graph "
                              "or features near the limits of floating point? rescale them)",
                              found.diagnostics)
        if np.any(~flat.any(axis=0) & wide.reshape(flat.shape).any(axis=0)):
            raise SolverError(f"{self.name}: the eigenvectors are too small to keep (a graph "
                              "whose weights are near the limits of floating point? rescale "
                              "it)", found.diagnostics)
        if found.stroke_agreement is None:
            agreement = stroke_agreement(strokes.codes(found.labels), strokes.sets)
            found.stroke_agreement = dict(zip(strokes.label_ids, agreement.tolist()))
        labels = clamp_strokes(found.labels, strokes.sets, strokes.label_ids)
        found.labels = labels.reshape(self.shape)
        found.eigenvectors = embedding
        found.eigenvalues = eigenvalues
        found.timings, found.method = timings, self.name
        return found

    # -- work for the next edit (methods with ``prepares``) --------------------------------
    def prepare_next(self, cancel: CancelToken) -> None:
        """Work for the next edit, after this one's answer (nothing by default)."""

    def prepares_alongside(self) -> bool:
        """Whether the next edit's solve may run while :meth:`prepare_next` still does."""
        return False

    def prepared(self) -> bool:
        """Whether the next edit is answered from prepared work (no preview is worth it)."""
        return False


def n_vectors(requested: int | None, k: int) -> int:
    """Eigenvectors for k labels: ``requested`` (the ``n_vectors`` option) or k − 1.

    Fewer than k − 1 vectors cannot separate k labels, and more than k bring in the bulk of
    the spectrum: anything else breaks the option's rule (:data:`segapp.options.RULES`), an
    :class:`~segapp.errors.InvalidInputError` (:meth:`Method.answer` checks it first).
    """
    check_rules((r for r in RULES if r.names == ("n_vectors",)), {"n_vectors": requested}, k=k)
    return k - 1 if requested is None else requested
