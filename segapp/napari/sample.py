"""napari sample data: a bundled photo and its scribbles (File > Open Sample > segapp)."""

from __future__ import annotations

from typing import Any

from .. import io
from ..samples import sample_path, sample_scribbles_path


def coffee() -> list[tuple[Any, dict, str]]:
    """The ``coffee`` sample as an image layer and its scribbles as a Labels layer."""
    image = io.read_image(sample_path("coffee"))
    scribbles = io.read_scribbles(sample_scribbles_path("coffee"), image.shape)
    return [(image, {"name": "coffee", "rgb": True}, "image"),
            (scribbles, {"name": "scribbles"}, "labels")]
