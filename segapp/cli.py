"""Command line: ``segapp`` (desktop app), ``segapp segment ...``, ``segapp methods``.

``segapp batch`` (a folder of images) lives in :mod:`segapp.batch`, with its own exit
statuses (the number of images that failed).

Every failure the user can cause (unreadable or mismatched files, too few labels, bad options,
an output that cannot be written, a solver that does not converge) ends with a one-line
``segapp: error: ...`` message on stderr and a non-zero exit status, never a traceback:

====  =========================================================
exit  meaning
====  =========================================================
0     success
1     the solver failed (did not converge, non-finite values)
2     bad input or option (argparse's usage errors use 2 too)
3     an output file could not be written
====  =========================================================
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .errors import InvalidInputError, SegappError, SolverError

EXIT_SOLVER, EXIT_INPUT, EXIT_OUTPUT = 1, 2, 3

#: FAST-GE options with their own flags: (flag, option name, type, help).
_FLAGS: list[tuple[str, str, type, str]] = [
    ("--sigma", "sigma", float,
     "RBF width in colour units (0..1); default: data-driven, sigma-scale × mean colour "
     "distance of neighbouring pixels"),
    ("--sigma-scale", "sigma_scale", float, "multiplier of the data-driven sigma (default 0.4)"),
    ("--connectivity", "connectivity", int, "pixel neighbourhood, 4 or 8"),
    ("--radius", "radius", float,
     "join all pixels within this distance (overrides --connectivity; 2 gives 12 neighbours)"),
    ("--constraint-weight", "constraint_weight", float,
     "multiplies the must-link/cannot-link weights d_i d_j/(d_min d_max)"),
    ("--n-vectors", "n_vectors", int, "eigenvectors used (default k-1)"),
    ("--kmeans-restarts", "kmeans_restarts", int, "k-means restarts (plus one stroke-seeded)"),
    ("--k2-partition", "k2_partition", str, "for two labels: 'sweep' (Cheeger) or 'kmeans'"),
    ("--maxiter", "maxiter", int, "LOBPCG iteration cap"),
    ("--eig-tol", "eig_tol", float, "stop when Ritz values change by less than this (relative)"),
    ("--seed", "seed", int, "random seed (k-means, sparsified constraints)"),
]


def _parse_value(text: str) -> Any:
    """``-O key=value`` values: int, float, true/false/none, else the string."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _option_pair(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip().replace("-", "_"), _parse_value(value.strip())


def add_method_arguments(parser: argparse.ArgumentParser) -> None:
    """``--method`` and the method options, shared by ``segment`` and ``batch``."""
    parser.add_argument("--method", "-m", default="fastge",
                        help="segmentation method (see 'segapp methods')")
    opts = parser.add_argument_group("method options (FAST-GE; defaults are the method's)")
    for flag, name, typ, text in _FLAGS:
        opts.add_argument(flag, dest=name, type=typ, default=None, help=text)
    opts.add_argument("--max-pixels", dest="max_pixels", type=int, default=None,
                      help="segment larger images on a reduced copy of this many pixels and "
                           "bring the result back to full resolution (default 500000; 0 = "
                           "always full resolution)")
    opts.add_argument("--grey", dest="color", action="store_false", default=None,
                      help="build the graph on grey values (as the paper) instead of colour")
    opts.add_argument("-O", "--option", dest="extra", action="append", type=_option_pair,
                      default=[], metavar="KEY=VALUE",
                      help="any other option of the chosen method (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    parser = argparse.ArgumentParser(
        prog="segapp",
        description="Interactive image segmentation by constrained spectral clustering "
                    "(FAST-GE). Without a command, opens the desktop app (on PATH if given, "
                    "else on a bundled sample image).",
        epilog="Run 'segapp segment --help' for the segmentation options.")
    parser.add_argument("--version", action="version", version=f"segapp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    seg = sub.add_parser(
        "segment", help="segment an image from a scribble file",
        description="Segment IMAGE into the labels painted in SCRIBBLES and write the label "
                    "map (pixel value = label id) as PNG. Files are written atomically.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    seg.add_argument("image", metavar="IMAGE", help="any Pillow format; EXIF orientation applied")
    seg.add_argument("--scribbles", "-s", required=True, metavar="SCRIBBLES",
                     help="label-id PNG (0 = unlabelled, 1..9) or colour strokes on black/"
                          "transparent, same size as IMAGE")
    seg.add_argument("--output", "-o", required=True, metavar="LABELS.png",
                     help="label map PNG to write")
    seg.add_argument("--overlay", metavar="OVERLAY.png", help="also write a colour overlay")
    seg.add_argument("--heatmaps", metavar="DIR",
                     help="also write each eigenvector as a heat map PNG into DIR")
    add_method_arguments(seg)
    seg.add_argument("--no-overwrite", dest="overwrite", action="store_false",
                     help="fail instead of replacing existing output files")
    seg.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")

    sub.add_parser("methods", help="list the available methods",
                   description="List the segmentation methods with a one-line description.")
    from . import batch
    batch.add_parser(sub)
    return parser


def method_options(args: argparse.Namespace) -> dict[str, Any]:
    """The method options given on the command line (those left unset are omitted)."""
    out = {name: getattr(args, name) for _, name, _, _ in _FLAGS
           if getattr(args, name) is not None}
    if args.color is not None:
        out["color"] = args.color
    if args.max_pixels is not None:
        out["max_pixels"] = args.max_pixels or None
    out.update(dict(args.extra))
    return out


def _segment(args: argparse.Namespace) -> int:
    import numpy as np

    from . import io, render
    from .session import segment

    t0 = time.perf_counter()
    image = io.read_image(args.image)
    scribbles = io.read_scribbles(args.scribbles, image.shape[:2])
    # Validate every output location before the (possibly long) solve.
    outputs = [Path(args.output)] + ([Path(args.overlay)] if args.overlay else [])
    for p in outputs:
        _check_writable(p, args.overwrite)
    if args.heatmaps:
        hdir = Path(args.heatmaps)
        if hdir.exists() and not hdir.is_dir():
            raise FileExistsError(f"--heatmaps {hdir} exists and is not a directory")

    result = segment(image, scribbles, method=args.method, **method_options(args))

    written = [io.save_labels(args.output, result.labels.astype(np.uint8), args.overwrite)]
    if args.overlay:
        ov = render.overlay(image, result.labels)
        written.append(io.write_png_atomic(args.overlay, render.to_rgb8(ov), args.overwrite))
    if args.heatmaps:
        hdir.mkdir(parents=True, exist_ok=True)
        V = result.eigenvectors
        for j in range(V.shape[-1]):
            rgb = render.to_rgb8(render.heatmap_with_colorbar(V[..., j]))
            written.append(io.write_png_atomic(hdir / f"eigenvector_{j + 1}.png", rgb,
                                               args.overwrite))
    if not args.quiet:
        H, W = result.labels.shape
        shares = ", ".join(f"{i}: {f:.1%}" for i, f in result.fractions().items())
        stages = ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items())
        print(f"segmented {W}×{H} px into {len(result.label_ids)} labels ({shares}) "
              f"with {result.method}; {stages}")
        if result.diagnostics is not None:
            print(f"  {result.diagnostics!r}")
        for p in written:
            print(f"  wrote {p}")
        print(f"  wall time {time.perf_counter() - t0:.2f}s")
    return 0


def _check_writable(path: Path, overwrite: bool) -> None:
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (drop --no-overwrite to replace it)")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise FileNotFoundError(f"cannot write {path}: directory {parent} does not exist")


def _methods() -> int:
    from .methods import available_methods
    names = available_methods()
    width = max(len(n) for n, _ in names)
    for name, text in names:
        print(f"{name:<{width}}  {text}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``segapp`` script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "batch":  # own exit statuses: the number of failed images
        from . import batch
        return batch.main(argv[1:])
    if not argv or (argv[0] not in ("segment", "methods") and not argv[0].startswith("-")):
        if len(argv) > 1:
            build_parser().error(f"unknown command {argv[0]!r} (use 'segment' or 'methods')")
        path = argv[0] if argv else None
        if path is not None and not Path(path).exists():
            return _fail(f"{path}: no such file (or unknown command; see 'segapp --help')",
                         EXIT_INPUT)
        from .gui.app import run
        return run(path)
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return 0
    try:
        return _segment(args) if args.command == "segment" else _methods()
    except SolverError as exc:
        return _fail(f"solver failed: {exc}", EXIT_SOLVER)
    except (InvalidInputError, SegappError) as exc:
        return _fail(str(exc), EXIT_INPUT)
    except OSError as exc:
        return _fail(str(exc) or type(exc).__name__, EXIT_OUTPUT)
    except MemoryError:
        return _fail("out of memory: try a smaller image", EXIT_SOLVER)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


def _fail(message: str, code: int) -> int:
    print(f"segapp: error: {message.splitlines()[0] if message else 'failed'}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
