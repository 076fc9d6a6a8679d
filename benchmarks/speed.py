"""Speed benchmark: FAST-GE's edits on both linear solvers against scikit-image's random_walker.

One bundled photo (``coffee``, 600×400) is resized to about 44K, 250K, 0.5M (the app's working
copy) and 1.1M pixels — the sizes of the FAST-GE paper's Patras, Santorini and Soccer images
(§7.3) — with its scribbles resized by nearest neighbour; the 4-label case drops the sample's
fifth label. For each size, label count and path — ``direct`` (``linear_solver="auto"``: the
Dirichlet matrix factored once, each edit a low-rank update, the factor brought to the new
strokes in the background; :mod:`segapp.solve.direct`) and ``iterative`` (AMG-preconditioned CG with
the hierarchy kept from edit to edit) — it times, in the order a person makes them:

* **cold**: ``segapp.segment`` (graph, constraints, solve, k-means), best of ``--repeat``;
* a :class:`segapp.Session` (``stable_refinement`` off, so every answer can be compared with a
  fresh solve): its first answer, then **add** a stroke, **erase** a stroke of the sample, and
  **clear** a label — each the ``update`` call alone, after the session's background work for
  it (``Session.wait_prepared``, reported as **bg**: the time the person looks at the answer
  before the next edit can be a cheap update) — and each answer's agreement with a fresh
  ``segment`` of the same strokes;
* peak memory of the session's run: ``tracemalloc`` (NumPy/SciPy buffers) plus the direct
  solver's factor, which CHOLMOD allocates outside Python (bytes per pixel);
* ``skimage.segmentation.random_walker(mode='cg_mg')`` on the identical image and scribbles,
  for each of the four stroke sets (it has no warm path: every edit is a new solve); the
  ratios are segapp / random_walker on the same strokes.

* **2nd**: a new Session's second edit (one added stroke) made right after its first answer,
  without waiting for the background work (no edit waits for it: above the cold limit the
  first factor is still being made and CG answers; below, the first answer's factor does);

Paths and random_walker are interleaved within each repeat. The direct path runs once per
CHOLMOD library (``--cholmod``: ``system``, ``pip`` — the one CVXOPT's wheel bundles,
``pip install 'segapp[fast]'`` — or a path, e.g. Debian 13's ``libcholmod.so.5`` unpacked by
``bash .ci/fetch-cholmod5 /tmp/c5``), each in its own process (``SEGAPP_CHOLMOD``: a process
loads one library) with random_walker interleaved again there; the iterative rows come from
the first. Then the time to the answer on a 12 MP photo as the app gets it (``Session`` with
its default 0.5 MP working copy): the first answer as the app shows it (the working copy's,
``refine=False``), the time to solve its edges again at full resolution after it
(``Session.refine``), and the working copy's answer after one added stroke.

Run ``python benchmarks/speed.py --repeat 2`` (about 8 minutes on 2 cores per library);
``--quick`` for 44K only. Absolute times on a shared machine are noisy: compare the ratios of
one run, and read the load average printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import segapp  # noqa: E402
from segapp import io, samples  # noqa: E402

SIZES = {"44K": 44_000, "250K": 250_000, "0.5M": 500_000, "1.1M": 1_100_000}
PATHS = ("direct", "iterative")


def resized(image: np.ndarray, scribbles: np.ndarray, pixels: int) -> tuple[np.ndarray, np.ndarray]:
    from skimage.transform import resize
    H, W = scribbles.shape
    f = np.sqrt(pixels / (H * W))
    shape = (max(2, round(H * f)), max(2, round(W * f)))
    img = np.clip(resize(image, shape + image.shape[2:], anti_aliasing=f < 1), 0, 1)
    s = resize(scribbles, shape, order=0, preserve_range=True, anti_aliasing=False)
    return img.astype(np.float32), s.astype(np.int32)


def extra_stroke(scribbles: np.ndarray) -> np.ndarray:
    """The scribbles plus one short horizontal stroke of label 1, away from the first stroke."""
    s = scribbles.copy()
    H, W = s.shape
    ys, xs = np.nonzero(s == 1)
    y = int(np.clip(ys.mean() + 0.1 * H, 2, H - 3)) if ys.size else H // 2
    x0 = int(np.clip(xs.mean() - 0.05 * W, 0, W - 1)) if xs.size else W // 3
    x1 = int(min(W, x0 + max(4, W // 15)))
    s[y - 1:y + 2, x0:x1] = np.where(s[y - 1:y + 2, x0:x1] == 0, 1, s[y - 1:y + 2, x0:x1])
    return s


def best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def random_walker(image: np.ndarray, scribbles: np.ndarray) -> np.ndarray:
    from skimage.segmentation import random_walker as rw
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rw(image, scribbles, mode="cg_mg", channel_axis=-1)


def erase_stroke(scribbles: np.ndarray) -> np.ndarray:
    """The scribbles without one of the sample's strokes (label 1's largest connected one)."""
    from scipy.ndimage import label
    comp, n = label(scribbles == 1, structure=np.ones((3, 3)))
    s = scribbles.copy()
    if n:
        s[comp == 1 + np.argmax(np.bincount(comp.ravel())[1:])] = 0
    return s


def clear_label(scribbles: np.ndarray) -> np.ndarray:
    """The scribbles without their highest label."""
    s = scribbles.copy()
    s[s == s.max()] = 0
    return s


EDITS = ("add", "erase", "clear")


def session_run(img: np.ndarray, stroke_sets: dict, path: str) -> dict:
    """One session through the edits: times, background times, the answers, factor bytes."""
    solver = "auto" if path == "direct" else "iterative"
    sess = segapp.Session(img, max_pixels=None, stable_refinement=False, linear_solver=solver)
    out: dict = {}
    t = time.perf_counter()
    out["first"] = sess.update(stroke_sets["first"])
    out["t_first"] = time.perf_counter() - t
    for name in ("first",) + EDITS:
        if name != "first":
            t = time.perf_counter()
            out[name] = sess.update(stroke_sets[name])
            out[f"t_{name}"] = time.perf_counter() - t
        t = time.perf_counter()
        sess.wait_prepared()
        out[f"bg_{name}"] = time.perf_counter() - t
    d = sess._method.solver.harmonic.direct if sess._method.solver.harmonic is not None else None
    out["factor_bytes"] = d.nbytes if d is not None and d.base is not None else 0
    return out


def second_edit(img: np.ndarray, stroke_sets: dict, path: str) -> tuple[float, str]:
    """A new Session's second edit made at once after its first answer (no waiting for the
    background work): its time and how it was solved."""
    solver = "auto" if path == "direct" else "iterative"
    sess = segapp.Session(img, max_pixels=None, stable_refinement=False, linear_solver=solver)
    sess.update(stroke_sets["first"])
    t = time.perf_counter()
    r = sess.update(stroke_sets["add"])
    took = time.perf_counter() - t
    sess.close(timeout=None)
    d = r.diagnostics
    return took, (d.reason if not d.direct_unavailable else
                  f"{d.reason} — not direct: {d.direct_unavailable}")


def run(size: str, k: int, image: np.ndarray, scribbles: np.ndarray, repeat: int,
        memory: bool, peer: bool, paths: tuple[str, ...] = PATHS) -> list[dict]:
    s = scribbles.copy()
    s[s > k] = 0
    img, s = resized(image, s, SIZES[size])
    n = s.size
    sets = {"first": s, "add": extra_stroke(s)}
    sets["erase"] = erase_stroke(sets["add"])
    sets["clear"] = clear_label(sets["erase"])
    fresh = {name: segapp.segment(img, v, max_pixels=None, stable_refinement=False).labels
             for name, v in sets.items()}
    rows = {p: dict(size=size, n=n, k=k, path=p) for p in paths}
    rw: dict[str, list[float]] = {name: [] for name in sets}
    for _ in range(repeat):
        for p in paths:
            row = rows[p]
            solver = "auto" if p == "direct" else "iterative"
            t = time.perf_counter()
            segapp.segment(img, s, max_pixels=None, linear_solver=solver)
            row.setdefault("cold", []).append(time.perf_counter() - t)
            out = session_run(img, sets, p)
            for key, v in out.items():
                if key.startswith(("t_", "bg_")):
                    row.setdefault(key, []).append(v)
            row["agree"] = min(float(np.mean(out[name].labels == fresh[name]))
                               for name in ("first",) + EDITS)
            row["how"] = {name: out[name].diagnostics.reason for name in EDITS}
            t2, row["how"]["2nd"] = second_edit(img, sets, p)
            row.setdefault("t_2nd", []).append(t2)
        if peer:
            for name, v in sets.items():
                t = time.perf_counter()
                random_walker(img, v)
                rw[name].append(time.perf_counter() - t)
    for p in paths:
        row = rows[p]
        for key in list(row):
            if isinstance(row[key], list):
                row[key] = min(row[key])
        if peer:
            row.update({f"rw_{name}": min(v) for name, v in rw.items()})
        if memory:
            tracemalloc.start()
            try:
                out = session_run(img, sets, p)
                row["peak"] = tracemalloc.get_traced_memory()[1] + out["factor_bytes"]
                row["factor"] = out["factor_bytes"]
            finally:
                tracemalloc.stop()
    return [rows[p] for p in paths]


def first_result(image: np.ndarray, scribbles: np.ndarray, pixels: int, peer: bool) -> dict:
    """Time to the first (preview) and the full result of a Session on a big photo.

    As the app does: ``Session(image)`` with its default working resolution, then
    ``update(scribbles, preview=...)``; times from the ``update`` call (the session's build,
    once per image, is reported apart). random_walker's first result is its whole solve, at the
    same working resolution (at 12 MP itself it needs minutes and gigabytes).
    """
    from segapp.inputs.resolution import reduce_image, reduce_map
    img, s = resized(image, scribbles, pixels)
    t = time.perf_counter()
    sess = segapp.Session(img)
    build = time.perf_counter() - t
    got: dict = {}
    t = time.perf_counter()
    # As the app: the working copy's answer is shown, then its edges are solved again at
    # full resolution (Session.refine) while the person looks at it.
    full = sess.update(s, preview=lambda r: got.setdefault("t", time.perf_counter() - t),
                       refine=False)
    row = dict(n=s.size, build=build, preview=got.get("t", float("nan")),
               full=time.perf_counter() - t, working=int(np.prod(sess.working_shape)),
               iters=full.diagnostics.iterations)
    t = time.perf_counter()
    sess.refine(full, s)
    row["edges"] = time.perf_counter() - t
    t = time.perf_counter()
    sess.wait_prepared()
    row["bg"] = time.perf_counter() - t
    s2 = extra_stroke(s)
    got.clear()
    t = time.perf_counter()
    edit = sess.update(s2, preview=lambda r: got.setdefault("t", time.perf_counter() - t),
                       refine=False)
    row["edit"] = time.perf_counter() - t
    row["edit_preview"] = got.get("t", float("nan"))
    row["edit_how"] = edit.diagnostics.reason
    if peer:
        small = reduce_image(img, sess.working_shape)
        row["rw"], _ = best(lambda: random_walker(small, reduce_map(s, sess.working_shape)), 1)
    return row


def table(rows: list[dict]) -> str:
    head = (f"{'size':>5} {'pixels':>8} {'k':>1} {'path':>16} | {'cold':>6} {'/rw':>5} | "
            f"{'first':>6} {'bg':>5} {'2nd':>6} | {'add':>6} {'/rw':>5} {'bg':>5} | {'erase':>6} "
            f"{'/add':>5} {'/rw':>5} | {'clear':>6} {'/add':>5} {'/rw':>5} | {'agree':>7} | "
            f"{'B/px':>5} {'fct':>4}")
    lines = [head, "-" * len(head)]
    for r in rows:
        rw = (lambda name: r[f"t_{name}"] / r[f"rw_{name}"]) if "rw_first" in r else None
        ratio = (lambda name: f"{rw(name):4.2f}x") if rw else (lambda name: f"{'-':>5}")
        cold_rw = f"{r['cold'] / r['rw_first']:4.2f}x" if rw else f"{'-':>5}"
        peak = r.get("peak")
        lines.append(
            f"{r['size']:>5} {r['n']:>8} {r['k']:>1} {r['label']:>16} | {r['cold']:6.3f} {cold_rw} | "
            f"{r['t_first']:6.3f} {r['bg_first']:5.2f} {r['t_2nd']:6.3f} | {r['t_add']:6.3f} {ratio('add')} "
            f"{r['bg_add']:5.2f} | {r['t_erase']:6.3f} {r['t_erase'] / r['t_add']:4.2f}x "
            f"{ratio('erase')} | {r['t_clear']:6.3f} {r['t_clear'] / r['t_add']:4.2f}x "
            f"{ratio('clear')} | {r['agree']:7.3%} | "
            + (f"{peak / r['n']:5.0f} {r['factor'] / r['n']:4.0f}" if peak else f"{'-':>5}"))
    return "\n".join(lines)


def how_table(rows: list[dict]) -> str:
    return "\n".join(f"  {r['size']} k={r['k']} {r['label']}: " + "; ".join(
        f"{name}: {r['how'][name]}" for name in EDITS + ("2nd",)) for r in rows)


def library_label() -> str:
    """The direct path's name in the table: the CHOLMOD this process loaded."""
    from segapp.solve import cholmod
    lib = cholmod.library()
    if lib is None:
        return "direct (none)"
    v = ".".join(map(str, lib.version))
    return f"CHOLMOD {v}" + (" pip" if lib.source.startswith("pip") else "")


def child_rows(spec: str, argv: list[str], first: bool) -> list[dict]:
    """The rows of one CHOLMOD library, measured in a process of its own (SEGAPP_CHOLMOD)."""
    env = {**os.environ, "SEGAPP_CHOLMOD": spec}
    cmd = [sys.executable, __file__, *argv, "--child", "--no-first-result"]
    if not first:
        cmd += ["--paths", "direct"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    sys.stderr.write(proc.stderr)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("ROWS ")]
    if proc.returncode != 0 or not lines:
        print(f"  {spec}: no rows (exit {proc.returncode})", file=sys.stderr)
        return []
    return json.loads(lines[-1][5:])


def first_result_table(r: dict) -> str:
    rw = (f"; random_walker at the same working resolution {r['rw']:.2f} s "
          f"(preview / rw = {r['preview'] / r['rw']:.2f}x)" if "rw" in r else "")
    return (f"first result on {r['n'] / 1e6:.0f} MP (working resolution {r['working']} px): "
            f"preview after {r['preview']:.2f} s, full result after {r['full']:.2f} s "
            f"({r['iters']} it), its edges at full resolution {r['edges']:.2f} s more; "
            f"session build {r['build']:.2f} s{rw}; background work "
            f"{r['bg']:.2f} s; after one added stroke: full result after {r['edit']:.2f} s "
            f"(preview {r['edit_preview']:.2f} s; {r['edit_how']})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    p.add_argument("--labels", nargs="+", type=int, default=[4], choices=[3, 4, 5])
    p.add_argument("--repeat", type=int, default=2, help="best of N timed runs")
    p.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run")
    p.add_argument("--no-peer", action="store_true", help="skip random_walker")
    p.add_argument("--no-first-result", action="store_true",
                   help="skip the time-to-first-result row on a 12 MP photo")
    p.add_argument("--quick", action="store_true", help="44K px, 4 labels, one run")
    p.add_argument("--cholmod", nargs="+", default=["system", "pip"], metavar="LIB",
                   help="the CHOLMOD libraries of the direct rows: system, pip or a path to a "
                   "libcholmod (each that loads gets its rows; default: system pip)")
    p.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS,
                   help=argparse.SUPPRESS)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.quick:
        a.sizes, a.labels, a.repeat, a.no_first_result = ["44K"], [4], 1, True
    if not a.child:
        return coordinate(a, argv if argv is not None else sys.argv[1:])
    image = io.read_image(samples.sample_path("coffee"))
    scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
    print(f"segapp {segapp.__version__}, {os.cpu_count()} CPUs; photo 'coffee' resized; "
          f"times in seconds, best of {a.repeat}")
    segapp.segment(*resized(image, scribbles, 10_000))  # warm up imports and caches
    rows = []
    label = library_label()
    for size in a.sizes:
        for k in a.labels:
            rows += run(size, k, image, scribbles, a.repeat, not a.no_memory, not a.no_peer,
                        tuple(a.paths))
            print(f"  done {size} k={k} ({label})", file=sys.stderr, flush=True)
    for r in rows:
        r["label"] = label if r["path"] == "direct" else r["path"]
    print("ROWS " + json.dumps(rows))
    return 0


def coordinate(a: argparse.Namespace, argv: list[str]) -> int:
    """The table: one child process per CHOLMOD library (module doc), then the 12 MP row."""
    from segapp.solve import cholmod
    strip = {"--cholmod"}
    child_argv, skip = [], False
    for x in argv:
        if x in strip:
            skip = True
            continue
        if skip and x.startswith("--"):
            skip = False
        if not skip:
            child_argv.append(x)
    print(f"segapp {segapp.__version__}, {os.cpu_count()} CPUs; photo 'coffee' resized; "
          f"times in seconds, best of {a.repeat}; load average at start "
          f"{os.getloadavg()[0]:.1f}")
    rows: list[dict] = []
    seen: set[str] = set()
    for i, spec in enumerate(a.cholmod):
        got = child_rows(spec, child_argv, first=not rows)
        labels = {r["label"] for r in got if r["path"] == "direct"}
        if labels & seen or labels == {"direct (none)"}:   # the same library again, or none
            got = [r for r in got if r["path"] != "direct"]
        seen |= labels
        rows += got
    rows.sort(key=lambda r: (SIZES[r["size"]], r["k"], r["path"] != "direct"))
    print(table(rows))
    print("how each edit was solved:")
    print(how_table(rows))
    if not a.no_first_result:
        image = io.read_image(samples.sample_path("coffee"))
        scribbles = io.read_scribbles(samples.sample_scribbles_path("coffee"), image.shape[:2])
        print(first_result_table(first_result(image, scribbles, 12_000_000, not a.no_peer))
              + f" [{cholmod.describe()}]")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print("cold = segapp.segment; first = a Session's first answer; 2nd = a new Session's "
          "second edit made at once after it (no waiting);\nadd / erase / clear = the "
          "Session.update of that edit; /rw = that time / random_walker(mode='cg_mg') on the "
          "same strokes;\nbg = the session's background work after that answer (waited for "
          "here, so that each edit is timed from the factor it prepares; no edit of the app "
          "waits for it); /add = time / the added stroke's; agree = the worst label agreement "
          "of the session's answers with a fresh segment of the same strokes (stable_refinement "
          "off);\nB/px = peak bytes per pixel (tracemalloc + the factor), fct = the factor's.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
