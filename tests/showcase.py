"""The bundled "chelsea" showcase: its strokes drawn as a scribble image, and what a person
accepts as its segmentation (boxes of the photo chosen by looking at it).

Used by tests/test_samples.py (the library on the bundled scribbles) and
tests/gui/test_xvfb_screenshot.py (the app, painted with the same strokes by the mouse).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from segapp.gui.screenshot import STROKE_WIDTH, read_stroke_file

#: The label ids of ``chelsea_strokes.txt``.
BACKGROUND, FUR, EYES, NOSE = 1, 2, 3, 4

# Boxes of chelsea.jpg (451 x 300) as (x0, y0, x1, y1), x1 and y1 excluded, each well inside
# what it names (see the photo).
#: The cat's face from the left cheek to the right one, forehead to chin: fur, eyes and nose,
#: never background (the old scribbles gave its right half to the background).
FACE = (60, 30, 310, 285)
#: Every pixel of these boxes has the label.
WHOLE = {"forehead": ((110, 35, 300, 75), FUR), "between the eyes": ((225, 70, 280, 170), FUR),
         "left cheek": ((60, 150, 130, 230), FUR), "nose bridge": ((230, 150, 270, 200), FUR),
         "right cheek": ((285, 175, 312, 200), FUR),
         "left eye": ((150, 100, 190, 130), EYES), "right eye": ((305, 125, 330, 150), EYES),
         "nose": ((250, 232, 278, 245), NOSE),
         "room on the right": ((385, 60, 446, 296), BACKGROUND),
         "wall top left": ((3, 3, 22, 100), BACKGROUND)}


def render_strokes(strokes: list, shape: tuple[int, int],
                   width: float = STROKE_WIDTH) -> np.ndarray:
    """Label image (uint8, 0 = unpainted) of polylines ``[(label, [(x, y), ...]), ...]``: a
    pixel gets a stroke's label when its centre is within ``width / 2`` of the polyline
    (round ends and joints); later strokes paint over earlier ones."""
    h, w = shape
    yy, xx = np.mgrid[0:h, 0:w].astype(float)
    out = np.zeros(shape, np.uint8)
    for label, points in strokes:
        pts = np.asarray(points, float)
        near = np.zeros(shape, bool)
        for (ax, ay), (bx, by) in zip(pts, pts[1:] if len(pts) > 1 else pts):
            dx, dy = bx - ax, by - ay
            t = ((xx - ax) * dx + (yy - ay) * dy) / max(dx * dx + dy * dy, 1e-12)
            t = np.clip(t, 0.0, 1.0)
            near |= (xx - ax - t * dx) ** 2 + (yy - ay - t * dy) ** 2 <= (width / 2) ** 2
        out[near] = label
    return out


def scribbles_from(strokes_path: Path, shape: tuple[int, int]) -> np.ndarray:
    strokes, _names = read_stroke_file(strokes_path)
    return render_strokes(strokes, shape)


def faults(labels: np.ndarray) -> list[str]:
    """What a person would not accept in a segmentation of chelsea (label ids of the strokes
    file), one line each; empty when it is right."""
    def box(b):
        x0, y0, x1, y1 = b
        return labels[y0:y1, x0:x1]

    found = []
    face = box(FACE)
    if (face == BACKGROUND).any():
        found.append(f"face: {(face == BACKGROUND).mean():.1%} background")
    for name, (b, k) in WHOLE.items():
        if not (box(b) == k).all():
            found.append(f"{name}: {(box(b) != k).mean():.1%} not label {k}")
    return found
