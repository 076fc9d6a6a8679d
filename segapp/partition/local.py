"""Where a corrective stroke gives reason to change the answer: the local move of an edit.

Refinement stability (issue 10, issue 31): after an edit that only adds strokes, the new
answer differs from the previous one (the new strokes painted in) on some connected regions
of the pixel graph. A stroke that contradicts the previous answer — painted on pixels it gave
another label — is a reason to change the regions that touch it; the regions the new answer
changes away from every such stroke (a colour model that a new stroke changed claiming a far
region of its colour, a boundary elsewhere moving to a cut of similar cost) are changed by
the objective alone. The *local move* is the previous answer changed on the first kind only:

.. math:: L_i = \\begin{cases} \\text{new}_i & i \\in C \\text{ for a component } C
          \\text{ of } \\{\\text{new} \\ne \\text{previous}\\} \\cup T \\text{ that meets } T \\\\
          \\text{previous}_i & \\text{otherwise,} \\end{cases}

``T`` the contradicting stroke pixels, components taken in the data graph ``G_D``. It is one
more candidate of the rounding's choice among near-equal cuts
(:func:`~segapp.partition.sweep.sweep_cut`,
:func:`~segapp.partition.kmeans.stable_anchored_kmeans`): kept where it scores within the
rounding's tolerance of the best cut, since it is then the near-best cut closest to the
previous answer.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


def local_move(previous: np.ndarray, new: np.ndarray, contradicting: np.ndarray,
               L: sp.spmatrix) -> np.ndarray:
    """The previous answer changed to ``new`` on the regions that touch a contradicting stroke.

    ``previous`` and ``new`` (n,) are label codes of the same labels (``previous`` with the
    strokes painted in), ``contradicting`` (n,) bool marks the stroke pixels the previous
    answer (before painting) gave another label, ``L`` is the data graph's Laplacian (its
    off-diagonal pattern gives the connectivity). Returns a new array of codes.
    """
    out = np.array(previous, copy=True)
    changed = new != previous
    if not changed.any() or not contradicting.any():
        return out
    nodes = np.flatnonzero(changed | contradicting)
    sub = sp.csr_matrix(L)[nodes][:, nodes]
    _, comp = connected_components(sub, directed=False)
    touching = np.zeros(comp.max() + 1, bool)
    touching[comp[contradicting[nodes]]] = True
    take = nodes[touching[comp] & changed[nodes]]
    out[take] = new[take]
    return out
