"""What each label looks like: per-label colour mixtures and the posteriors they give pixels.

The stage between the strokes and the solve: :mod:`~segapp.appearance.mixture` fits weighted
Gaussian mixtures, :mod:`~segapp.appearance.models` quantises an image's colours once and turns
one mixture per label into every pixel's label posterior, which FAST-GE's harmonic solve takes
as a prior (:mod:`segapp.solve.harmonic`); :mod:`~segapp.appearance.texture` adds each
pixel's local contrast to its colour where FAST-GE's ``texture`` asks for it.
"""

from .mixture import Mixture, fit_mixture
from .models import ColourPalette, LabelModels, fit_label_models, label_posteriors

__all__ = ["Mixture", "fit_mixture", "ColourPalette", "LabelModels", "fit_label_models", "label_posteriors"]
