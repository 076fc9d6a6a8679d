"""The picture of docs/quality.md's "where the colour models fail": the bundled coffee photo,
its label-5 strokes (the sugar bowl) against all the others merged, answered without and with
the colour models (``appearance`` 0 and the default).

    python benchmarks/appearance_figure.py [--out docs/appearance_failure.png]
"""

from __future__ import annotations

import argparse

import numpy as np
from PIL import Image

import segapp
from segapp import io, samples
from segapp.methods.fastge import APPEARANCE

OBJECT = 5
COLOURS = np.array([[0, 0, 0], [230, 25, 75], [60, 180, 75]], float)


def panel(image: np.ndarray, scribbles: np.ndarray, appearance: float) -> np.ndarray:
    labels = segapp.segment(image, scribbles, appearance=appearance).labels
    out = 0.45 * image * 255 + 0.55 * COLOURS[labels]
    out[scribbles > 0] = 0.6 * COLOURS[scribbles[scribbles > 0]]
    return out.astype(np.uint8)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="docs/appearance_failure.png")
    a = p.parse_args()
    image = io.read_image(samples.sample_path("coffee"))[..., :3]
    s = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    two = np.where(s == 0, 0, np.where(s == OBJECT, 1, 2))
    row = np.concatenate([panel(image, two, 0.0), np.full((image.shape[0], 8, 3), 255, np.uint8),
                          panel(image, two, APPEARANCE)], 1)
    Image.fromarray(row).resize((row.shape[1] // 2, row.shape[0] // 2), Image.LANCZOS).save(a.out)


if __name__ == "__main__":
    main()
