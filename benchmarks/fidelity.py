"""How often each constrained method keeps every painted label (issue 10's invariant).

Usage::

    python benchmarks/fidelity.py [--scenes 60] [--methods landmark scacs ...] [--option k=v ...]

Draws ``--scenes`` scenes from the property test's strategy
(``tests/test_stroke_fidelity.py::scenes``, derandomised, so every run sees the same scenes)
and prints, per method, how many meet the invariant (every label with strokes appears, and
the method's own partition gives each label ≥ 99.9% of its painted pixels,
``Segmentation.stroke_agreement``), the worst and mean agreement, and the failing scenes'
indices with their worst agreement. ``--option`` passes a method option to every method
(e.g. ``stroke_landmarks=0``, the landmark graph without the painted pixels; ``--methods scacs
--option must_link=0`` or ``--methods ccskl --option extend=False``, the papers' SCACS and CCSKL
without segapp's extensions).
"""

from __future__ import annotations

import argparse
import ast
import sys
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

import segapp  # noqa: E402
from test_stroke_fidelity import CONSTRAINED, SMALL, drawn  # noqa: E402

from segapp.partition import STROKE_AGREEMENT  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=60)
    ap.add_argument("--methods", nargs="+", default=list(CONSTRAINED))
    ap.add_argument("--option", nargs="*", default=[], metavar="NAME=VALUE")
    args = ap.parse_args(argv)
    extra = {k: ast.literal_eval(v) for k, v in (o.split("=", 1) for o in args.option)}
    warnings.simplefilter("ignore")
    cases = drawn(args.scenes)
    for method in args.methods:
        worst, failing = [], []
        for i, (img, s) in enumerate(cases):
            res = segapp.segment(img, s, method=method, **{**SMALL[method], **extra})
            w = min(res.stroke_agreement.values())
            lost = set(np.unique(s[s > 0]).tolist()) - set(np.unique(res.labels).tolist())
            worst.append(w)
            if w < STROKE_AGREEMENT or lost:
                failing.append((i, round(w, 3)))
        print(f"{method}: {len(cases) - len(failing)}/{len(cases)} scenes meet the invariant; "
              f"worst agreement {min(worst):.3f}, mean {np.mean(worst):.4f}; failing {failing}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
