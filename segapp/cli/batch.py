"""``segapp batch``: segment a folder of images, locally or on a Dask cluster.

Exit status: 0 when every paired image was segmented (or skipped because its outputs exist);
otherwise the number of images that failed, capped at 100; 101 when the batch could not run at
all (bad folder or option, no pairs, dask missing for ``--scheduler``, scheduler unreachable,
command-line usage errors, an output folder that does not take files — read-only, no
permission, full — or a report that cannot be written); 130 when interrupted (Ctrl+C, on
every executor, without a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import SegappError
from ..io import DEFAULT_PIXEL_LIMIT
from ..batch.pairing import DEFAULT_PATTERNS
from ..batch.task import short_error

__all__ = ["EXIT_BATCH_ERROR", "add_parser", "configure", "main", "run"]

#: Exit status when the batch cannot start (not a count of failed images).
EXIT_BATCH_ERROR = 101

DESCRIPTION = """\
Segment every image of IMAGES_DIR with its scribble file and write OUT_DIR/STEM.png (label
map, pixel value = label id; with --overlay also OUT_DIR/STEM_overlay.png) plus
OUT_DIR/report.csv and report.json (one row per image: status, labels, size, working size,
seconds, solver iterations, worker, its peak memory, error). Outputs are written atomically.

Pairing: an image is any .png/.jpg/.jpeg/.tif/.tiff/.bmp/.webp/.gif/.ppm/.pgm/.jp2 file
directly in IMAGES_DIR; its scribbles are the first of the --pattern names that exists in
SCRIBBLES_DIR (default: IMAGES_DIR), with {stem} = the image's file name without suffix
(photo.jpg -> photo_scribbles.png, else photo.png). Files used as scribbles are not images.

Resumable: images whose outputs exist are skipped (--overwrite recomputes them). One bad image
never stops the batch: its error is in the report. Without --scheduler the images run in a
local process pool of --workers processes (no dask needed); with --scheduler ADDRESS on a
Dask distributed cluster whose workers see the same files ('local' starts a LocalCluster)."""

EPILOG = """\
exit status: 0 all segmented or skipped; N = N images failed (100 = 100 or more); 101 the
batch could not run (bad folder or option, no pairs, dask not installed for --scheduler,
scheduler unreachable, an output folder that is read-only, full or not permitted, a report
that cannot be written); 130 interrupted (the report holds what finished; rerun to resume).
Images without scribbles are listed in the report but not counted as failed.
Install the optional extra for the progress bar and Dask: pip install 'segapp[batch]'."""


def configure(parser: argparse.ArgumentParser, method: str) -> argparse.ArgumentParser:
    """Add the ``batch`` arguments and, as for ``segment``, the flags of ``method``."""
    from .flags import add_method_arguments

    parser.add_argument("images", metavar="IMAGES_DIR", help="folder of images")
    parser.add_argument("--scribbles", "-s", metavar="SCRIBBLES_DIR", default=None,
                        help="folder of scribble files (default: IMAGES_DIR)")
    parser.add_argument("--output", "-o", required=True, metavar="OUT_DIR",
                        help="folder for label maps and the report (created if missing)")
    parser.add_argument("--pattern", action="append", metavar="TEMPLATE", default=None,
                        help="scribble file name for an image, with {stem}; repeatable, "
                             "tried in order (default: " + ", ".join(DEFAULT_PATTERNS) + ")")
    parser.add_argument("--overlay", action="store_true",
                        help="also write a colour overlay OUT_DIR/STEM_overlay.png")
    parser.add_argument("--overwrite", action="store_true",
                        help="recompute images whose outputs exist (default: skip them)")
    parser.add_argument("--workers", "-j", type=int, default=None, metavar="N",
                        help="local processes (default: the usable CPUs); 1 runs in this "
                             "process; with --scheduler local the LocalCluster's size")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run on a Dask distributed scheduler (tcp://host:8786), or "
                             "'local' for a LocalCluster of --workers processes; needs "
                             "pip install 'segapp[batch]'")
    parser.add_argument("--pixel-limit", dest="pixel_limit", type=int,
                        default=DEFAULT_PIXEL_LIMIT, metavar="N",
                        help="images or scribbles of more pixels fail, before decoding "
                             f"(default {DEFAULT_PIXEL_LIMIT}; 0 = no limit)")
    parser.add_argument("--page", type=int, default=None, metavar="N",
                        help="page N (1 = the first) of multi-page images (TIFF) or frame N "
                             "of animated ones (GIF, PNG, WebP), and of multi-page scribble "
                             "files; without it such an image fails, with the reason")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar and no summary")
    add_method_arguments(parser, method)
    from .exports import add_export_arguments
    add_export_arguments(parser, batch=True)
    return parser


def add_parser(subparsers: Any, method: str = "fastge") -> argparse.ArgumentParser:
    """Register ``batch`` under ``segapp``'s sub-commands (for ``segapp --help``)."""
    parser = subparsers.add_parser(
        "batch", help="segment a folder of images (process pool or Dask cluster)",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    return configure(parser, method)


def build_parser(method: str = "fastge") -> argparse.ArgumentParser:
    """The parser of ``segapp batch`` with the flags of ``method`` (as ``segment``'s); a usage
    error raises :class:`segapp.cli.UsageError` (one line, exit :data:`EXIT_BATCH_ERROR`)."""
    from . import _Parser
    return configure(_Parser(
        prog="segapp batch", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter), method)


def main(argv: Sequence[str]) -> int:
    """``segapp batch ARGS``; returns the exit status (see the module docstring)."""
    from .. import methods
    from . import UsageError
    from .flags import method_from_argv
    try:
        argv = list(argv)
        method = method_from_argv(argv)
        try:
            methods.get(method)  # an unknown --method fails before its flags are needed
            args = build_parser(method).parse_args(argv)
        except (SegappError, UsageError) as exc:
            return _fail(str(exc))
        return run(args)
    except KeyboardInterrupt:   # before or after the batch proper (start-up, shut-down)
        return _interrupted()


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``segapp batch`` command line."""
    from .flags import method_options
    from ..batch.executors import DaskExecutor, PoolExecutor, SerialExecutor, usable_cpus
    from ..batch.pairing import find_pairs
    from ..batch.runner import run_batch

    try:
        pairing = find_pairs(args.images, args.scribbles, args.pattern or DEFAULT_PATTERNS)
        if not pairing.pairs and not pairing.clashes:
            what = (f"no image in {args.images} has a scribble file" if pairing.unpaired
                    else f"no image files in {args.images}")
            raise SegappError(f"{what} (patterns: {', '.join(args.pattern or DEFAULT_PATTERNS)})")
        options = method_options(args)   # bad values, another method's flag: fail here
        from ..batch.dataset import DatasetOptions
        from .exports import schema_of
        schema = schema_of(args)          # a bad --labels file: fail here, once
        dataset = DatasetOptions(None if schema is None else schema.to_json(), args.indexed,
                                 args.soft)
        _check_max_pixels(options)
        if args.pixel_limit < 0:
            raise SegappError(f"--pixel-limit must be ≥ 0 (0 = no limit), got {args.pixel_limit}")
        if args.page is not None and args.page < 1:
            raise SegappError(f"--page must be ≥ 1 (1 = the first page), got {args.page}")
        n = len(pairing.pairs)
        workers = args.workers if args.workers is not None else max(1, min(usable_cpus(), n))
        if args.scheduler is not None:
            executor = DaskExecutor(None if args.scheduler == "local" else args.scheduler,
                                    workers=workers)
        elif workers == 1:
            executor = SerialExecutor()
        else:
            executor = PoolExecutor(workers)
    except SegappError as exc:  # InvalidInputError included
        return _fail(str(exc))
    try:
        with executor:
            result = run_batch(pairing, args.output, method=args.method, options=options,
                               overlay=args.overlay, overwrite=args.overwrite,
                               executor=executor, progress=not args.quiet,
                               pixel_limit=args.pixel_limit or None, dataset=dataset,
                               page=args.page)
            if args.coco or args.sidecar:
                from pathlib import Path

                from ..batch.dataset import write_batch_files
                write_batch_files(Path(args.output).absolute(), result.rows, schema,
                                  args.coco, args.sidecar)
    except SegappError as exc:
        return _fail(str(exc))
    except OSError as exc:      # the report could not be written (e.g. the disk filled up)
        return _fail(f"cannot write the report: {exc}")
    except KeyboardInterrupt:
        return _interrupted()
    if not args.quiet:
        _print_summary(result, args.output)
    return result.exit_status


def _check_max_pixels(options: dict[str, Any]) -> None:
    """Fail once, before any worker starts, on a working size every image would reject
    (method option values are already checked by :func:`segapp.cli.flags.method_options`)."""
    from ..options import WORKING_PIXELS
    mp = options.get(WORKING_PIXELS.name)
    if mp is not None and mp < WORKING_PIXELS.low:
        raise SegappError(f"{WORKING_PIXELS.flag} must be 0 (full resolution) or at least "
                          f"{int(WORKING_PIXELS.low)}, got {mp}")


def _print_summary(result: Any, out_dir: str) -> None:
    from . import print_after_success
    s = result.summary()
    minutes, seconds = divmod(result.seconds, 60)
    lines = [f"segapp batch: {s['ok']} segmented, {s['failed']} failed, {s['skipped']} "
             f"skipped (outputs existed), {s['no_scribbles']} without scribbles in "
             f"{int(minutes)}m{seconds:04.1f}s on {result.executor}; report: "
             f"{out_dir}/report.csv"]
    failed = [r for r in result.rows if r["status"] == "failed"]
    lines += [f"  failed: {r['image']}: {short_error(r)}" for r in failed[:10]]
    if len(failed) > 10:
        lines.append(f"  ... and {len(failed) - 10} more (see the report)")
    print_after_success(lines, sys.stderr, "the report is written")


def _interrupted() -> int:
    """Ctrl+C: one line, exit 130 (a second Ctrl+C while the workers stop is ignored)."""
    import signal
    with contextlib.suppress(ValueError):   # not the main thread: nothing to ignore
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("segapp batch: interrupted; the report lists what finished, run again to "
          "resume", file=sys.stderr)
    return 130


def _fail(message: str) -> int:
    print(f"segapp batch: error: {message.splitlines()[0] if message else 'failed'}",
          file=sys.stderr)
    return EXIT_BATCH_ERROR
