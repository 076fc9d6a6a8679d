"""Segmentation methods, one module each, behind one interface.

A method class is built once per image (``Method.from_image(image, **options)``) and then
answers ``update(scribbles, cancel=None, confidence=None) -> Segmentation`` for every edit,
keeping whatever it can reuse (graphs, multigrid hierarchies, previous eigenvectors).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidInputError
from .fastge import FastGE
from .ncut import NCut

REGISTRY: dict[str, type] = {cls.name: cls for cls in (FastGE, NCut)}


def available_methods() -> list[tuple[str, str]]:
    """``(name, one-line description)`` of every method, the default first."""
    return [(name, cls.description) for name, cls in REGISTRY.items()]


def create(name: str, image: np.ndarray, **options: Any):
    """Instantiate method ``name`` on an image."""
    try:
        cls = REGISTRY[name]
    except KeyError:
        raise InvalidInputError(
            f"unknown method {name!r}; available: {', '.join(REGISTRY)}") from None
    return cls.from_image(image, **options)
