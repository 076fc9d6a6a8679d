"""The data graphs the methods solve on, side by side.

:mod:`.weighted` holds what every graph method sees (:class:`Graph`: Laplacian, degrees,
shape; :func:`graph_from_adjacency` for any symmetric adjacency); :mod:`.image` builds the
pixel-grid RBF graph of an image (neighbourhood, σ rule, TV pre-filter, FAST-GE §7.3). :mod:`.landmark`
holds the landmark (sparse-coding) graph of the feature methods (Chen & Cai; Liu et al. 2017,
SCACS), on the feature vectors of :mod:`segapp.graphs.features`.
"""

from .image import image_graph
from .weighted import Graph, graph_from_adjacency, laplacian

__all__ = ["Graph", "graph_from_adjacency", "image_graph", "laplacian"]
