"""How far a big photo's coarse preview is from the answer that replaces it (issue 22 item 5).

On a photo above 2 × ``PREVIEW_PIXELS`` working pixels, ``Session.update(preview=...)`` first
shows the same method solved on a ~60K-pixel copy, then the full answer. A person who starts to
correct the preview corrects what then moves, so this prints, per bundled sample brought to
``--pixels`` (default 12 MP), the share of the photo's pixels whose label is the same in the
preview and in the answer — for the first answer and for an edit that the session cannot answer
from a prepared factor (the case where the app still shows a preview) — and whether a preview
was shown at all on an edit after the factor was prepared (it should not be).

    python benchmarks/preview.py [--pixels 12000000] [--samples coffee chelsea]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import segapp
from segapp.io import read_image, read_scribbles
from segapp.samples import list_samples, sample_path, sample_scribbles_path

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from speed import extra_stroke, resized  # noqa: E402  (same folder)


def _update(session: segapp.Session, s: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, float]:
    got: list[np.ndarray] = []
    t = time.perf_counter()
    full = session.update(s, preview=lambda r: got.append(np.asarray(r.labels).copy()))
    return (got[0] if got else None), np.asarray(full.labels), time.perf_counter() - t


def _agree(a: np.ndarray | None, b: np.ndarray) -> str:
    return "no preview" if a is None else f"{100 * float(np.mean(a == b)):.2f}%"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pixels", type=int, default=12_000_000)
    parser.add_argument("--samples", nargs="*", default=list_samples())
    args = parser.parse_args(argv)
    print(f"{'sample':10} {'pixels':>9} | {'first: agree':>13} {'s':>6} | "
          f"{'edit, no factor: agree':>23} {'s':>6} | {'edit, factor prepared':>22}")
    worst = 100.0
    for name in args.samples:
        image = read_image(sample_path(name))
        img, s = resized(image, read_scribbles(sample_scribbles_path(name),
                                               shape=image.shape[:2]), args.pixels)
        s2 = extra_stroke(s)
        cold = segapp.Session(img)
        cold.background = False          # nothing prepared: the app's case for a preview
        p1, f1, t1 = _update(cold, s)
        p2, f2, t2 = _update(cold, s2)
        warm = segapp.Session(img)       # the app's default: the factor follows each answer
        _update(warm, s)
        warm.wait_prepared()
        p3, _, _ = _update(warm, s2)
        for p, f in ((p1, f1), (p2, f2)):
            if p is not None:
                worst = min(worst, 100 * float(np.mean(p == f)))
        print(f"{name:10} {s.size:9d} | {_agree(p1, f1):>13} {t1:6.2f} | {_agree(p2, f2):>23} "
              f"{t2:6.2f} | {'no preview' if p3 is None else 'PREVIEW SHOWN':>22}", flush=True)
    print(f"worst agreement of a preview with its answer: {worst:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
