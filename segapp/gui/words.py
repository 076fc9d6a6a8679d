"""What the window says, in words a person who paints labels understands (no Qt).

The methods and their options keep their technical names in the library, the command line and
``docs/options.md``; on screen a basic option, a method and a result are named here, with the
technical name and the solver's details in the tooltip (and the Advanced section). Every term
is explained in ``docs/gui.md`` (``tests/gui/test_docs.py`` checks that each is there).
"""

from __future__ import annotations

from typing import Any

__all__ = ["OPTION_WORDS", "METHOD_WORDS", "option_label", "method_label", "result_status",
           "result_details", "vector_caption"]

#: A basic option's name on screen and what it does, in one line.
OPTION_WORDS: dict[str, tuple[str, str]] = {
    "sigma_scale": ("Colour tolerance",
                    "how different two neighbouring colours may be and still count as alike: "
                    "lower follows fainter edges, higher ignores texture"),
    "denoise": ("Noise smoothing", "how much the photo's grain is smoothed before the edges "
                                   "are read (0: none)"),
    "constraint_weight": ("Stroke strength", "how strongly the strokes hold their regions "
                                             "together and apart"),
    "beta0": ("Stroke strength", "how strongly the strokes hold their regions together and "
                                 "apart"),
    "max_pixels": ("Working size", "a larger photo is segmented on a reduced copy of at most "
                                   "this many pixels, then brought back to full size"),
    "n_landmarks": ("Sample points", "how many representative pixels summarise the photo "
                                     "(more: finer, slower)"),
    "n_partitions": ("Runs combined", "how many sampled segmentations are combined (more: "
                                      "steadier, slower)"),
    "n_eigenvectors": ("Patterns learnt from", "how many of the photo's smoothest patterns "
                                               "the method chooses among"),
    "n_neighbours": ("Neighbours", "how many nearby sample points each pixel follows"),
}

#: A method's name on screen: what it is, and what it costs.
METHOD_WORDS: dict[str, str] = {
    "fastge": "FAST-GE: best on photos, fast (default)",
    "ncut": "Normalized cut: fast; strokes only name its regions",
    "landmark": "Landmark FAST-GE: full resolution, medium speed",
    "ensemble": "Landmark ensemble: steadier, slow (8 runs)",
    "scacs": "SCACS: landmark cuts, medium speed",
    "ccskl": "CCSKL: slow first answer, quick edits after",
    "scpc": "SC-PC: for point data; slow with many strokes",
}


def option_label(name: str) -> str:
    """An option's name on screen: its plain words, else its name without underscores."""
    return OPTION_WORDS.get(name, (name.replace("_", " "), ""))[0]


def option_tip(name: str, technical: str) -> str:
    """An option's tooltip: what it does, then its technical description and name."""
    plain = OPTION_WORDS.get(name, ("", ""))[1]
    return (f"{plain[0].upper()}{plain[1:]}.\n\n" if plain else "") + \
        f"{technical}\n(option {name}; segapp segment --{name.replace('_', '-')})"


def method_label(name: str) -> str:
    return METHOD_WORDS.get(name, name)


def result_status(seconds: float, cached: bool, diagnostics: Any = None) -> str:
    """The status bar after a segmentation: how long the answer took and, in plain words,
    which solver ran (issue 28: never silently slow; the details are in the tooltip)."""
    return (f"Segmented in {seconds:.2f} s" + solver_words(diagnostics)
            + (" (from memory)" if cached else ""))


def solver_words(diagnostics: Any) -> str:
    """", fast solver"`` where the potentials came from the factor; ``", standard solver"``
    on the iterative path, and why the fast one is not used when it is unavailable."""
    kind = (getattr(diagnostics, "linear_solver", "") or "").partition(",")[0]
    if kind == "direct":
        return ", fast solver"
    if kind == "iterative":
        why = getattr(diagnostics, "direct_unavailable", None)
        return ", standard solver" + (" (the fast one is not available: see the tooltip)"
                                      if why else "")
    return ""


def result_details(segmentation: Any) -> str:
    """The status bar's tooltip: the method and what its solver did."""
    method = getattr(segmentation, "method", "")
    lines = [f"Method: {method_label(method)} ({method})"]
    diag = getattr(segmentation, "diagnostics", None)
    if diag is not None:
        lines.append(f"Solver: {diag!r}")
    timings = getattr(segmentation, "timings", None) or {}
    if timings:
        lines.append("Stages: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
    return "\n".join(lines)


def vector_caption(j: int, ratio: float | None) -> str:
    """The caption of eigenvector ``j``'s thumbnail: its number, and its cut's cost next to the
    first's (lower: a cleaner cut between the labels)."""
    text = f"Vector {j + 1}"
    if ratio is not None and j > 0:
        text += f" (cost ×{ratio:.2g})"
    return text
