"""The one interface every segmentation / clustering method implements.

A method object is built once per data set and then answers :meth:`Method.update` for every
edit of the constraints, keeping whatever it can reuse (graphs, landmarks, multigrid
hierarchies, previous eigenvectors).

Data comes in one of two forms:

- an image, ``(H, W)`` or ``(H, W, 3)`` float in [0, 1] — :meth:`Method.from_image`;
- a weighted graph (symmetric sparse adjacency ``W``, n × n) and/or a feature matrix
  ``(n, f)`` — :meth:`Method.from_data`. Graph methods (FAST-GE, normalized cut, CCSKL) need
  ``graph``; landmark methods (landmark FAST-GE, ensemble, SCACS, SC-PC) need ``features``.
  A method given only what it cannot use raises :class:`~segapp.errors.InvalidInputError`.

Constraints are a *label map* with the data's shape — ``(H, W)`` for an image, ``(n,)``
otherwise — with 0 = unlabelled and 1..k = the user's label ids (scikit-image's
``random_walker`` convention). Two vertices with the same label are must-linked, two with
different labels cannot-linked. The result is a :class:`~segapp.result.Segmentation` whose
``labels`` have the same shape and carry the user's label ids, and whose ``eigenvectors``
(shape ``(*shape, m)``) hold whatever embedding the method has, so the app can show it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import numpy as np
import scipy.sparse as sp

from ..cancel import CancelLike
from ..options import Option
from ..result import Segmentation


class Method(Protocol):
    name: ClassVar[str]          #: registry key, used by ``--method`` and the app
    description: ClassVar[str]   #: one line for ``segapp methods``
    constrained: ClassVar[bool]  #: False for the unconstrained baseline
    #: the accepted options (on an instance, ``self.options`` is the dict of values in effect)
    options: ClassVar[tuple[Option, ...]]
    defaults: ClassVar[dict[str, Any]]  #: ``{name: default}``, derived from ``options``

    @classmethod
    def from_image(cls, image: np.ndarray, **options: Any) -> "Method": ...

    @classmethod
    def from_data(cls, *, graph: sp.spmatrix | None = None,
                  features: np.ndarray | None = None, **options: Any) -> "Method": ...

    def update(self, scribbles: np.ndarray, *, cancel: CancelLike = None,
               confidence: np.ndarray | None = None, **solve_options: Any) -> Segmentation: ...
