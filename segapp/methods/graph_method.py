"""The graph family of :class:`segapp.methods.base.Method` (FAST-GE, normalized cut, CCSKL).

An image becomes the pixel graph of :func:`segapp.graphs.image.image_graph` (the options in
:data:`GRAPH_OPTIONS` shape it); any other data comes as a symmetric adjacency matrix
(:func:`segapp.graphs.weighted.graph_from_adjacency`). The graph is built once per data set;
the method object then answers every edit of the strokes.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..ahead import Ahead
from ..errors import InvalidInputError
from ..graphs import Graph, graph_from_adjacency, image_graph
from ..graphs.image import DEFAULT_DENOISE, DEFAULT_SIGMA_SCALE, SIGMA_FLOOR, graph_offsets
from ..options import Option, Settings
from ..partition import ImageColours
from ..solve import analysis_ahead
from .base import Method

#: Options that shape the image graph (:func:`segapp.graphs.image.image_graph`); every graph method
#: has them. Bounds: radius ≤ 4 (48 neighbours). Larger radii cost memory (radius 100 took
#: 1.1 GB on a 64×64 image) and, above 3, LOBPCG iterations: FAST-GE on the coffee sample
#: (240K px) took 6.4 s / 15 iterations at 8-connectivity, 7.0 s / 9 at radius 3, 64 s / 145
#: at 4 and 107 s / 173 at 5 (peak RSS 0.43, 0.55, 0.69, 0.99 GB). σ is in colour units
#: (0..1): σ = 10 already makes every weight ~1, and 8-bit units (σ = 30) are refused.
GRAPH_OPTIONS: tuple[Option, ...] = (
    Option("connectivity", int, 8, "pixel neighbourhood of the graph (unless radius is given)",
           "setup", choices=(4, 8)),
    Option("radius", float, None, "join all pixels within this distance instead (2: 12 "
           "neighbours, 3: 28, 4: 48; above 3 a solve takes several times longer)", "setup",
           low=1.0, high=4.0, none_ok=True, none_means="use connectivity"),
    Option("sigma", float, None, "RBF width in colour units (colours in 0..1)", "setup",
           low=SIGMA_FLOOR, high=10.0, none_ok=True, none_means="data-driven"),
    Option("sigma_scale", float, DEFAULT_SIGMA_SCALE, "multiplier of the data-driven sigma "
           "(mean colour distance of neighbouring pixels)", "setup", low=0.01, high=100.0),
    Option("color", bool, True, "graph on colour differences (false: grey values, as the paper)",
           "setup"),
    Option("denoise", float, DEFAULT_DENOISE, "total-variation denoising of the colours before "
           "the graph, weight in units of the image's estimated noise (0: off)", "setup",
           low=0.0, high=10.0),
)
GRAPH_OPTION_NAMES = frozenset(o.name for o in GRAPH_OPTIONS)


class GraphMethod(Method):
    """A method on a weighted graph: image graph / adjacency construction, set-up timings.

    Subclasses set ``name``, ``description``, ``constrained``, ``options`` (the
    :class:`~segapp.options.Option` declarations, :data:`GRAPH_OPTIONS` first) and implement
    :meth:`Method._solve`.
    """

    options: ClassVar[tuple[Option, ...]] = GRAPH_OPTIONS
    #: Whether :meth:`from_settings` computes the image's colours (:attr:`colours`) in a
    #: thread beside the graph: for a method whose every first edit reads them.
    colours_ahead: ClassVar[bool] = False

    @classmethod
    def from_colours(cls, colours: ImageColours) -> Any:
        """What the method makes of the image's colours once per image, computed with them
        (beside the graph where :attr:`colours_ahead`) and kept in :attr:`colours_made`;
        None here."""
        return None

    @classmethod
    def _colour_work(cls, image: np.ndarray) -> tuple[ImageColours, Any]:
        colours = ImageColours.of_image(image)
        return colours, cls.from_colours(colours)

    @classmethod
    def from_settings(cls, image: np.ndarray, settings: Settings) -> "GraphMethod":
        """Build the image graph (graph options of :func:`segapp.graphs.image.image_graph`), then the method."""
        t = time.perf_counter()
        # Per-image work that needs no weight or stroke, begun beside the graph's build.
        colours = Ahead(cls._colour_work, image) if cls.colours_ahead else None
        shape = image.shape[:2]
        analysis = (analysis_ahead(shape, graph_offsets(shape, settings["connectivity"],
                                                        settings["radius"]))
                    if cls.direct_ahead(settings) else None)
        graph = image_graph(image, **{o.name: settings[o.name] for o in GRAPH_OPTIONS})
        elapsed = time.perf_counter() - t
        method = cls(graph, settings=settings)
        method._image = image  # its colours are read when first needed (colours)
        method._colours_ahead = colours
        if analysis is not None:
            method.solver.analyse_ahead(analysis)
        method.timings = {"graph": elapsed, **method.timings}
        return method

    @classmethod
    def direct_ahead(cls, settings: Settings) -> bool:
        """Whether :meth:`from_settings` starts the direct solver's analysis of the pixel grid
        beside the graph (:func:`segapp.solve.analysis_ahead`): for a method whose solves
        take the direct solver's factor with these settings (it has a ``solver``,
        :class:`~segapp.solve.GraphSolver`)."""
        return False

    @property
    def colours(self) -> ImageColours | None:
        """The pixels' colours (CIE Lab) and their noise when the method was built from an
        image, else None; kept for every edit. Computed beside the graph where the first
        edit reads them (:attr:`colours_ahead`: 35–60 ms at 0.5 MP off its path), with what
        the method makes of them (:meth:`from_colours`), else when first read."""
        if self._colours is None and self._image is not None:
            ahead, self._colours_ahead = self._colours_ahead, None
            self._colours, self._colours_made = (ahead.result() if ahead is not None
                                                 else self._colour_work(self._image))
        return self._colours

    @property
    def colours_made(self) -> Any:
        """:meth:`from_colours` of :attr:`colours` (None without an image)."""
        self.colours
        return self._colours_made

    @classmethod
    def from_data(cls, *, graph: sp.spmatrix | None = None, features: np.ndarray | None = None,
                  **options: Any) -> "GraphMethod":
        """The method on any weighted graph (``features`` are not used by graph methods)."""
        if graph is None:
            raise InvalidInputError(f"method {cls.name!r} needs a graph (adjacency matrix)")
        shaping = sorted(GRAPH_OPTION_NAMES & set(options))
        if shaping:
            raise InvalidInputError(f"{', '.join(shaping)}: image-graph option(s), not used "
                                    "when the graph is given")
        settings = cls.resolve(options)
        t = time.perf_counter()
        g = graph_from_adjacency(graph)
        elapsed = time.perf_counter() - t
        method = cls(g, settings=settings)
        method.timings = {"graph": elapsed, **method.timings}
        return method

    def __init__(self, graph: Graph, settings: Settings | None = None, **options: Any) -> None:
        """On a built graph; ``settings`` already checked (:meth:`Method.resolve`), or
        ``options`` checked here."""
        self.graph = graph
        self._image: np.ndarray | None = None
        self._colours: ImageColours | None = None
        self._colours_made: Any = None
        self._colours_ahead: Ahead | None = None
        self.shape = graph.shape
        self.n = graph.n
        self._settle(type(self).resolve(options) if settings is None else settings)

