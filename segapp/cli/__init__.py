"""Command line: ``segapp`` (desktop app), ``segapp segment ...``, ``segapp methods``.

``segapp batch`` (a folder of images) lives in :mod:`segapp.batch`, with its own exit
statuses (the number of images that failed); the method flags both commands share are
generated in :mod:`segapp.cli.flags`.

Every failure the user can cause (unreadable or mismatched files, too few labels, bad options,
an output that cannot be written, a solver that does not converge) ends with a one-line
``segapp: error: ...`` message on stderr and a non-zero exit status, never a traceback:

====  =========================================================
exit  meaning
====  =========================================================
0     success
1     the solver failed (did not converge, non-finite values)
2     bad input or option (argparse's usage errors use 2 too)
3     an output file could not be written, or is not a regular file (a device, a FIFO), or
      is an input or another output
4     the desktop app cannot start Qt (the message says what is missing)
130   interrupted (Ctrl+C)
====  =========================================================

Once every output is written the run has succeeded: if the summary cannot be printed
afterwards (stdout is ``/dev/full`` or a pipe closed early), a one-line warning goes to stderr
and the status stays 0. Every printed line is encodable: characters the terminal's encoding
lacks (``PYTHONIOENCODING=ascii``; "×", "≥", file names that are not valid text) are written
as backslash escapes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..errors import InvalidInputError, SegappError, SolverError
from .exports import add_export_arguments
from .flags import DEFAULT_METHOD, add_method_arguments, method_from_argv, method_options
from ..io import DEFAULT_PIXEL_LIMIT

EXIT_SOLVER, EXIT_INPUT, EXIT_OUTPUT = 1, 2, 3

class UsageError(Exception):
    """A command line argparse cannot parse (reported like any bad input: one line, exit 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises instead of printing the usage and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser(method: str = DEFAULT_METHOD) -> argparse.ArgumentParser:
    """The ``segapp`` parser; ``segment``'s method flags are those of ``method``.

    Every other method's flags are accepted but hidden, so that using one is reported as
    "not an option of this method" rather than as an unknown argument.
    """
    from .. import __version__
    parser = _Parser(
        prog="segapp", usage="segapp [-h] [--version] [PATH | COMMAND ...]",
        description="Interactive image segmentation by constrained spectral clustering "
                    "(FAST-GE). Without a command, opens the desktop app (on PATH if given, "
                    "else on a bundled sample image).",
        epilog="Run 'segapp segment --help' for the segmentation options.")
    parser.add_argument("--version", action="version", version=f"segapp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    seg = sub.add_parser(
        "segment", help="segment an image from a scribble file",
        description="Segment IMAGE into the labels painted in SCRIBBLES and write the label "
                    "map (pixel value = label id) as PNG. Files are written atomically.",
        epilog=f"The method options above are those of --method {method}; "
               "'segapp segment --method NAME --help' lists another method's, "
               "'segapp methods' the methods.")
    seg.add_argument("image", metavar="IMAGE", help="any Pillow format; EXIF orientation applied")
    seg.add_argument("--scribbles", "-s", required=True, metavar="SCRIBBLES",
                     help="label-id PNG (0 = unlabelled, 1..9; up to 255 with --labels) or "
                          "colour strokes on black/transparent, same size as IMAGE")
    seg.add_argument("--output", "-o", required=True, metavar="LABELS.png",
                     help="label map PNG to write")
    seg.add_argument("--overlay", metavar="OVERLAY.png", help="also write a colour overlay")
    seg.add_argument("--heatmaps", metavar="DIR",
                     help="also write each eigenvector as a heat map PNG into DIR")
    seg.add_argument("--pixel-limit", dest="pixel_limit", type=int, default=DEFAULT_PIXEL_LIMIT,
                     metavar="N",
                     help="refuse image and scribble files of more pixels, before decoding "
                          f"them (default {DEFAULT_PIXEL_LIMIT}; 0 = no limit)")
    seg.add_argument("--page", type=int, default=None, metavar="N",
                     help="page N (1 = the first) of a multi-page IMAGE (TIFF) or frame N of "
                          "an animated one (GIF, PNG, WebP), and of SCRIBBLES if it has pages "
                          "too; without it such files are refused")
    seg.add_argument("--no-overwrite", dest="overwrite", action="store_false",
                     help="fail instead of replacing existing output files (default: replace)")
    seg.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    seg.add_argument("--verbose", "-v", action="store_true",
                     help="also print which linear solver ran and why (the direct solver's "
                     "library, or why it was not used) and the full solver report")

    add_method_arguments(seg, method)
    add_export_arguments(seg)

    meth = sub.add_parser("methods", help="list the methods, or one method's options",
                          description="List the segmentation methods; with NAME, the method's "
                                      "options (type, default, allowed values, stage).")
    meth.add_argument("name", nargs="?", metavar="NAME", help="a method")
    meth.add_argument("--markdown", action="store_true",
                      help="print the options of every method as the page docs/options.md")
    from . import batch
    batch.add_parser(sub, method)
    return parser


def _segment(args: argparse.Namespace) -> int:
    import numpy as np

    from .. import io
    from ..io import render
    from ..session import segment
    from . import exports

    t0 = time.perf_counter()
    options = method_options(args)
    limit = None if args.pixel_limit == 0 else args.pixel_limit
    if limit is not None and limit < 0:
        raise InvalidInputError(f"--pixel-limit must be ≥ 0 (0 = no limit), got {limit}")
    if args.page is not None and args.page < 1:
        raise InvalidInputError(f"--page must be ≥ 1 (1 = the first page), got {args.page}")
    schema = exports.schema_of(args)
    # Every output location is checked before any file is read or solved for.
    outputs = [Path(args.output)] + ([Path(args.overlay)] if args.overlay else [])
    more, soft_dir = exports.segment_outputs(args)
    hdir = Path(args.heatmaps) if args.heatmaps else None
    _check_outputs(args, outputs + more, hdir)
    if soft_dir is not None:
        io.check_writable(soft_dir / "confidence.png" if soft_dir.is_dir() else soft_dir,
                          args.overwrite)
    folders = {io.resolve_output(p).parent for p in outputs + more}
    for folder in folders | ({hdir} if hdir else set()) | ({soft_dir} if soft_dir else set()):
        if folder.is_dir():
            io.remove_stale_temporaries(folder)      # left by earlier runs that were killed

    image = io.read_image(args.image, pixel_limit=limit, page=args.page)
    scribbles = io.scribbles_for_page(args.scribbles, image.shape[:2], args.page,
                                      pixel_limit=limit, **exports.scribble_options(schema))
    ids, counts = np.unique(scribbles[scribbles > 0], return_counts=True)
    exports.check_painted(schema, ids, args.scribbles)

    result = segment(image, scribbles, method=args.method, **options)

    # Everything is rendered first, then written as one set (all files or none).
    items: list[tuple[Path, Any]] = [(outputs[0], exports.label_map_payload(
        result.labels, args.indexed, schema, result.label_ids))]
    colors = None if schema is None else schema.colors()
    if args.overlay:
        items.append((outputs[1], render.to_rgb8(render.overlay(image, result.labels,
                                                                colors=colors))))
    items += exports.segment_items(args, args.image, result, schema)
    if hdir is not None:
        V = result.eigenvectors
        items += [(hdir / f"eigenvector_{j + 1}.png",
                   render.to_rgb8(render.heatmap_with_colorbar(V[..., j])))
                  for j in range(V.shape[-1])]
    created = hdir is not None and not hdir.exists()
    if created:
        hdir.mkdir()
    if soft_dir is not None:
        soft_dir.mkdir(exist_ok=True)
    try:
        written = io.write_pngs_atomic(items, args.overwrite)
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                hdir.rmdir()          # only if still empty
        raise
    if not args.quiet:
        H, W = result.labels.shape
        lines = [f"read {len(ids)} labels from {args.scribbles} (ids "
                 f"{', '.join(map(str, ids.tolist()))}; {int(counts.sum())} painted pixels)"]
        shares = ", ".join(f"{i}: {f:.1%}" for i, f in result.fractions().items())
        stages = ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items())
        lines.append(f"segmented {W}×{H} px into {len(result.label_ids)} labels ({shares}) "
                     f"with {result.method}; {stages}")
        diag = result.diagnostics
        if diag is not None:
            lines.append(f"  {diag!r}")
        if args.verbose:
            lines += _solver_lines(diag)
        moved = _regiven_strokes(result, ids, counts)
        if moved:
            lines.append(f"  painted pixels the {result.method} partition gave to other "
                         f"labels, kept as painted: {moved}")
        if result.unplaced_labels:
            lines.append(f"  labels {result.method} could not place (< 50% of their painted "
                         f"pixels): {', '.join(map(str, result.unplaced_labels))}")
        lines += [f"  wrote {p}" for p in written]
        lines.append(f"  wall time {time.perf_counter() - t0:.2f}s")
        print_after_success(lines, sys.stdout, "the outputs are written")
    return 0


def _solver_lines(diag: Any) -> list[str]:
    """``--verbose``: the linear solver that ran and why not the direct one, and the direct
    solver's library on this machine (or why there is none)."""
    from ..solve import cholmod

    lines = []
    if getattr(diag, "linear_solver", ""):
        why = f" (not direct: {diag.direct_unavailable})" if diag.direct_unavailable else ""
        lines.append(f"  linear solver: {diag.linear_solver}{why}")
    lines.append(f"  direct solver on this machine: {cholmod.describe()}")
    return lines


def print_after_success(lines: Sequence[str], stream: Any, done: str) -> None:
    """Print ``lines`` once the work is done; a stream that cannot take them (``/dev/full``,
    a closed pipe) does not undo the success: one warning on stderr, and the stream is
    silenced so that the interpreter's last flush cannot fail either."""
    try:
        for line in lines:
            print(line, file=stream)
        stream.flush()
    except OSError as exc:
        _silence(stream)
        if stream is not sys.stderr:
            with contextlib.suppress(OSError):
                print(f"segapp: warning: could not print the summary "
                      f"({(exc.strerror or str(exc)).lower()}); {done}", file=sys.stderr,
                      flush=True)


def _silence(stream: Any) -> None:
    """Point ``stream``'s descriptor at the null device (what it still buffers goes there)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)


def _encodable(stream: Any) -> None:
    """Characters ``stream``'s encoding lacks are written as backslash escapes."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        stream.reconfigure(errors="backslashreplace")


def _regiven_strokes(result: Any, ids: Any, counts: Any) -> str:
    """"label 3: 2 of 150, ..." for labels whose painted pixels the method's partition
    placed elsewhere (from ``stroke_agreement``, measured before they were kept)."""
    agree = result.stroke_agreement or {}
    parts = []
    for i, c in zip(ids.tolist(), counts.tolist()):
        lost = int(round((1.0 - agree.get(i, 1.0)) * c))
        if lost:
            parts.append(f"label {i}: {lost} of {c}")
    return ", ".join(parts)


def _check_outputs(args: argparse.Namespace, outputs: list[Path], hdir: Path | None) -> None:
    """Every output is a new or regular file in an existing, writable directory, distinct
    from the inputs and from the other outputs; else the OSError writing it would raise
    (exit 3), before anything is read or solved."""
    from .. import io
    inputs = {f"IMAGE {args.image}": Path(args.image),
              f"--scribbles {args.scribbles}": Path(args.scribbles)}
    io.check_distinct(outputs, inputs)
    for p in outputs:
        io.check_writable(p, args.overwrite)
    if hdir is None:
        return
    for path in [*inputs.values(), *outputs]:
        if io.same_file(path.parent, hdir) and re.fullmatch(r"eigenvector_\d+\.png", path.name):
            raise io.OutputClashError(f"--heatmaps {hdir} would overwrite {path}")
    if hdir.exists() and not hdir.is_dir():
        raise FileExistsError(f"--heatmaps {hdir} exists and is not a directory")
    io.check_writable(hdir / "eigenvector_1.png" if hdir.is_dir() else hdir, args.overwrite)
    if hdir.is_dir():       # how many maps is known only after the solve: check all there are
        for old in sorted(hdir.glob("eigenvector_*.png")):
            io.check_writable(old, args.overwrite)


def _methods(args: argparse.Namespace) -> int:
    """``segapp methods [NAME] [--markdown]``: generated from the option declarations."""
    from ..methods import REGISTRY, available_methods, get
    from ..options import markdown
    if args.markdown:
        print(markdown([(n, c.description, c.options) for n, c in REGISTRY.items()]), end="")
        return 0
    if args.name is not None:
        cls = get(args.name)
        print(f"{cls.name}: {cls.description}")
        print("options (setup: fixed per image / Session; solve: per edit / update):")
        rows = [(o.flag, o.default_text(), o.range_text(), o.stage, o.help) for o in cls.options]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            print("  " + "  ".join(f"{c:<{w}}" for c, w in zip(r, widths)) + "  " + r[4])
        if cls.rules:
            print("rules between options:")
            for rule in cls.rules:
                print(f"  {rule.text}")
        return 0
    names = available_methods()
    width = max(len(n) for n, _ in names)
    for name, text in names:
        print(f"{name:<{width}}  {text}")
    print("\n'segapp methods NAME' lists a method's options.")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``segapp`` script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _encodable(sys.stdout)
    _encodable(sys.stderr)
    if argv and argv[0] == "batch":  # own exit statuses: the number of failed images
        from . import batch
        return batch.main(argv[1:])
    if not argv or (argv[0] not in ("segment", "methods") and not argv[0].startswith("-")):
        if len(argv) > 1:   # `segapp *.jpg`, a misspelt command: a usage error, not a path
            return _fail(f"unknown command {argv[0]!r}: the app opens one PATH; commands are "
                         "'segment', 'batch' and 'methods' (see 'segapp --help')", EXIT_INPUT)
        path = argv[0] if argv else None
        if path is not None:
            try:
                os.stat(path)
            except FileNotFoundError:
                return _fail(f"{path}: no such file (or unknown command; see 'segapp --help')",
                             EXIT_INPUT)
            except OSError as exc:       # a name too long, a loop of links, no permission
                return _fail(f"{path}: {(exc.strerror or str(exc)).lower()}", EXIT_INPUT)
        from ..gui.app import run
        return run(path)
    try:
        method = method_from_argv(argv) if argv[0] == "segment" else DEFAULT_METHOD
        from ..methods import get
        get(method)   # an unknown --method fails here, before its flags are needed
        args = build_parser(method).parse_args(argv)
        if args.command is None:
            build_parser().print_help()
            return 0
        return _segment(args) if args.command == "segment" else _methods(args)
    except UsageError as exc:
        return _fail(str(exc), EXIT_INPUT)
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

