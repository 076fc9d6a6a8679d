"""segapp: interactive image segmentation by constrained spectral clustering (FAST-GE & relatives).

>>> import segapp
>>> result = segapp.segment(image, scribbles)          # doctest: +SKIP
>>> session = segapp.Session(image); session.update(scribbles)   # doctest: +SKIP
"""

from .errors import Cancelled, InvalidInputError, SegappError, SolverError
from .methods import available_methods
from .result import Segmentation
from .session import Session, cluster, segment

__version__ = "0.1.0"
__all__ = ["segment", "cluster", "Session", "Segmentation", "available_methods", "SegappError",
           "InvalidInputError", "SolverError", "Cancelled", "__version__"]
