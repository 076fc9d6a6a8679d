"""Construction shared by the methods that work on a weighted graph (FAST-GE, normalized cut, CCSKL).

An image becomes the pixel graph of :func:`segapp.graph.image_graph` (the options in
:data:`GRAPH_OPTIONS` shape it); any other data comes as a symmetric adjacency matrix
(:func:`segapp.graph.graph_from_adjacency`). The graph is built once per data set; the method
object then answers every edit of the strokes.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from ..graph import Graph, graph_from_adjacency, image_graph

#: Options that shape the image graph (see :func:`segapp.graph.image_graph`).
GRAPH_OPTIONS = ("connectivity", "radius", "sigma", "sigma_scale", "color", "denoise")


def check_choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise InvalidInputError(f"{name} must be one of {', '.join(map(repr, allowed))}; "
                                f"got {value!r}")


class GraphMethod:
    """Options, image graph / adjacency construction and set-up timings of a graph method.

    Subclasses set ``name``, ``description``, ``constrained``, ``defaults`` and implement
    ``update``.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    constrained: ClassVar[bool] = True
    #: Option names with their defaults (graph options are listed separately).
    defaults: ClassVar[dict[str, Any]] = {}
    graph_options: ClassVar[tuple[str, ...]] = GRAPH_OPTIONS

    @classmethod
    def from_image(cls, image: np.ndarray, **options: Any) -> "GraphMethod":
        """Build the image graph (graph options of :func:`segapp.graph.image_graph`), then the method."""
        graph_opts = {k: options.pop(k) for k in cls.graph_options if k in options}
        t = time.perf_counter()
        graph = image_graph(image, **graph_opts)
        elapsed = time.perf_counter() - t
        method = cls(graph, **options)
        method.timings = {"graph": elapsed, **method.timings}
        return method

    @classmethod
    def from_data(cls, *, graph: sp.spmatrix | None = None, features: np.ndarray | None = None,
                  **options: Any) -> "GraphMethod":
        """The method on any weighted graph (``features`` are not used by graph methods)."""
        if graph is None:
            raise InvalidInputError(f"method {cls.name!r} needs a graph (adjacency matrix)")
        t = time.perf_counter()
        g = graph_from_adjacency(graph)
        elapsed = time.perf_counter() - t
        method = cls(g, **options)
        method.timings = {"graph": elapsed, **method.timings}
        return method

    def __init__(self, graph: Graph, **options: Any) -> None:
        self.graph = graph
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            raise InvalidInputError(
                f"unknown option(s) {', '.join(unknown)} for method {self.name!r}; valid: "
                f"{', '.join(sorted(set(self.defaults) | set(self.graph_options)))}")
        self.options = {**self.defaults, **options}
        self.timings: dict[str, float] = {}
        o = self.options
        if "kmeans_restarts" in o and not (isinstance(o["kmeans_restarts"], (int, np.integer))
                                           and o["kmeans_restarts"] >= 0):
            raise InvalidInputError("kmeans_restarts must be a non-negative integer")
