"""From eigenvectors (or any embedding) to labels: the partition stage of the pipeline.

One module per idea:

* :mod:`~segapp.partition.embedding` — FAST-GE's embedding (Fig. 2) and the potentials read
  from it;
* :mod:`~segapp.partition.kmeans` — free k-means, k-means anchored to the strokes, and its
  stable variant after an edit;
* :mod:`~segapp.partition.sweep` — the Cheeger sweep (k = 2, §4.6) and FAST-GE's ratio cut;
* :mod:`~segapp.partition.colour_model` — the sweep's colour term: two Gaussian colour models;
* :mod:`~segapp.partition.model_cost` — the sweep's data term from the labels' own colour
  models (GrabCut's);
* :mod:`~segapp.partition.local` — an edit's local move: the previous answer changed only
  where a stroke contradicting it gives reason;
* :mod:`~segapp.partition.degenerate` — re-rounding a label cut off alone (issue 22);
* :mod:`~segapp.partition.confidence` — distance of each pixel to the rounding's boundary;
* :mod:`~segapp.partition.labels` — stroke agreement, clamping and cluster ↔ label matching;
* :mod:`~segapp.partition.rounding` — FAST-GE's rounding composed of the above.

This package only hands the names on. Its modules import
:class:`~segapp.solve.pencil.Pencil` for annotations only: importing :mod:`segapp.solve` loads
the solvers (PyAMG), which the landmark methods, whose partitions come from here too, never
need.
"""

from .colour_model import COLOUR_WEIGHT, ImageColours, lab_colours
from .confidence import rounding_confidence
from .degenerate import degenerate_labels, nondegenerate_sweep, reround_degenerate
from .embedding import embed, embedding_potentials
from .kmeans import KMEANS_SAMPLE, anchored_kmeans, kmeans, stable_anchored_kmeans
from .local import local_move
from .labels import STROKE_AGREEMENT, clamp_strokes, match_labels, stroke_agreement
from .model_cost import MODEL_WEIGHT
from .rounding import round_eigenvectors
from .sweep import (PREVIOUS_GATE, SWEEP_MIN_WINDOW, SWEEP_TOLERANCE, SWEEP_WINDOW, ratio_cut,
                    sweep_cut, sweep_ratios)

__all__ = [
    "COLOUR_WEIGHT", "ImageColours", "KMEANS_SAMPLE", "MODEL_WEIGHT", "PREVIOUS_GATE", "STROKE_AGREEMENT", "SWEEP_MIN_WINDOW",
    "SWEEP_TOLERANCE", "SWEEP_WINDOW", "anchored_kmeans", "clamp_strokes", "degenerate_labels",
    "embed", "embedding_potentials", "kmeans", "lab_colours", "local_move", "match_labels",
    "nondegenerate_sweep", "ratio_cut", "reround_degenerate", "round_eigenvectors",
    "rounding_confidence", "stable_anchored_kmeans", "stroke_agreement", "sweep_cut",
    "sweep_ratios",
]
