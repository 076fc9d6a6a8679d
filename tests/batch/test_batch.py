"""``segapp batch``: pairing, per-image failures, resuming, reports, exit statuses, process pool.

Pairs are made in temporary folders from the bundled samples (``benchmarks.batch.make_pairs``,
small scales so that a pair takes a fraction of a second). The reference for every label map
is :func:`segapp.segment` called directly on the same files.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import stat
import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import segapp
from benchmarks.batch import make_pairs
from segapp import io
from segapp.cli.batch import EXIT_BATCH_ERROR
from segapp.batch import PoolExecutor, Task, find_pairs, run_batch
from segapp.batch.executors import MAX_ATTEMPTS
from segapp.cli import main
from segapp.errors import InvalidInputError

import batch_helpers  # noqa: E402  (tests/ is on sys.path; spawned workers import it too)

SCALE = 0.15  # about 75×75 px per pair


def labels_of(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path))


def reference(image: Path, scribbles: Path) -> np.ndarray:
    img = io.read_image(image)
    return segapp.segment(img, io.read_scribbles(scribbles, img.shape)).labels


def read_report(out: Path) -> dict[str, dict]:
    doc = json.loads((out / "report.json").read_text())
    with open(out / "report.csv", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert [r["image"] for r in csv_rows] == [r["image"] for r in doc["images"]]
    assert [r["status"] for r in csv_rows] == [r["status"] for r in doc["images"]]
    return {Path(r["image"]).name: r for r in doc["images"]}


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    make_pairs(folder, 6, SCALE)
    return folder


# -- pairing -----------------------------------------------------------------------------------
def touch(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / n).write_bytes(b"")


@pytest.mark.parametrize("files, scribble_dir_files, patterns, want, unpaired, clashes", [
    # images and scribbles in one folder (the sample_images layout)
    (["a.jpg", "a_scribbles.png", "b.png", "b_scribbles.png", "c.jpg", "notes.txt"], None,
     None, {"a": "a_scribbles.png", "b": "b_scribbles.png"}, ["c.jpg"], []),
    # separate folder, same stem: photo.jpg <-> photo.png
    (["a.jpg", "b.tif"], ["a.png", "b_scribbles.png"], None,
     {"a": "a.png", "b": "b_scribbles.png"}, [], []),
    # the first pattern wins
    (["a.jpg"], ["a.png", "a_scribbles.png"], None, {"a": "a_scribbles.png"}, [], []),
    # a custom pattern
    (["a.jpg", "b.jpg"], ["a-mask.png", "b.png"], ["{stem}-mask.png"], {"a": "a-mask.png"},
     ["b.jpg"], []),
    # two images with one stem would write one output: both refused
    (["a.jpg", "a.tif", "a_scribbles.png", "z.JPG", "z_scribbles.png"], None, None,
     {"z": "z_scribbles.png"}, [], ["a.jpg", "a.tif"]),
    # an image is never its own scribble file
    (["a.png"], None, None, {}, ["a.png"], []),
])
def test_pairing_rules(tmp_path, files, scribble_dir_files, patterns, want, unpaired, clashes):
    touch(tmp_path / "img", *files)
    (tmp_path / "img" / "sub.jpg").mkdir()  # folders are not images
    sdir = None
    if scribble_dir_files is not None:
        sdir = tmp_path / "scr"
        touch(sdir, *scribble_dir_files)
    found = find_pairs(tmp_path / "img", sdir, patterns or ("{stem}_scribbles.png",
                                                            "{stem}.png"))
    assert {p.stem: p.scribbles.name for p in found.pairs} == want
    assert [p.name for p in found.unpaired] == unpaired
    assert sorted(p.image.name for p in found.clashes) == clashes


@pytest.mark.parametrize("pattern, reason", [
    ("scribbles.png", "must contain {stem}"),
    ("{stem}_{n}.png", "no other field"),
    ("masks/{stem}.png", "file name"),
    ("{stem", "expected .}. before end"),
])
def test_bad_patterns_are_refused(tmp_path, pattern, reason):
    touch(tmp_path, "a.jpg")
    with pytest.raises(InvalidInputError, match=reason.replace("{", r"\{")):
        find_pairs(tmp_path, None, [pattern])


def test_missing_folder_is_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="does not exist"):
        find_pairs(tmp_path / "nope")


_names = st.text(alphabet=string.ascii_lowercase[:3] + "_", min_size=1, max_size=4)
_suffix = st.sampled_from([".jpg", ".png", ".tif", ".txt"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.sets(st.tuples(_names, _suffix).map("".join), max_size=12))
def test_pairing_invariants(tmp_path_factory, files):
    """Every image lands in exactly one list; no file is both image and scribbles; scribbles
    follow a pattern; outputs (stems) of the pairs are distinct."""
    d = tmp_path_factory.mktemp("pairs")
    touch(d, *files)
    found = find_pairs(d)
    images = [p.image for p in found.pairs + found.clashes] + found.unpaired
    assert len(images) == len(set(images))
    scribbles = {p.scribbles for p in found.pairs + found.clashes}
    assert not scribbles & set(images)
    for p in found.pairs + found.clashes:
        assert p.scribbles.name in (f"{p.stem}_scribbles.png", f"{p.stem}.png")
        assert p.scribbles != p.image
    stems = [p.stem for p in found.pairs]
    assert len(stems) == len(set(stems))
    # every image-suffixed file is accounted for as an image or as someone's scribbles
    image_files = {d / f for f in files if not f.endswith(".txt")}
    assert image_files == set(images) | scribbles


# -- running -----------------------------------------------------------------------------------
def test_serial_batch_matches_segment_and_writes_reports(pairs, tmp_path):
    out = tmp_path / "out"
    result = run_batch(find_pairs(pairs), out, overlay=True, progress=False)
    assert result.exit_status == 0 and result.count("ok") == 6
    report = read_report(out)
    for pair in find_pairs(pairs).pairs:
        got = labels_of(out / f"{pair.stem}.png")
        assert np.array_equal(got, reference(pair.image, pair.scribbles)), pair.stem
        assert labels_of(out / f"{pair.stem}_overlay.png").shape == got.shape + (3,)
        row = report[pair.image.name]
        assert row["status"] == "ok" and row["error"] == ""
        assert [int(x) for x in row["labels"].split()] == sorted(np.unique(got).tolist())
        assert (row["height"], row["width"]) == got.shape
        # (0 iterations: the direct solve; CG steps otherwise)
        assert row["iterations"] >= 0 and row["converged"] is True
        assert row["worker_peak_mb"] > 0
    # the times add up: one image after another inside the run's wall time, and the summary
    # is the run's own
    rows = list(report.values())
    assert all(r["seconds"] > 0 for r in rows)
    assert sum(r["seconds"] for r in rows) <= result.seconds + 0.01 * len(rows)   # rounding
    summary = json.loads((out / "report.json").read_text())["summary"]
    assert result.summary().items() <= summary.items() and summary["ok"] == 6
    assert summary["images_per_minute"] == pytest.approx(60 * 6 / result.seconds, rel=0.01)
    assert not list(out.glob(".*.tmp"))


def test_pixel_limit_refuses_large_files_per_image(pairs, tmp_path):
    sizes = {p.image.name: Image.open(p.image).size for p in find_pairs(pairs).pairs}
    limit = sorted(w * h for w, h in sizes.values())[2]   # the smallest three (+ ties) pass
    too_big = sum(w * h > limit for w, h in sizes.values())
    assert too_big >= 1
    assert main(["batch", str(pairs), "-o", str(tmp_path / "out"), "-j", "1", "-q",
                 "--pixel-limit", str(limit)]) == too_big
    for name, row in read_report(tmp_path / "out").items():
        w, h = sizes[name]
        assert (row["status"] == "ok") == (w * h <= limit), (name, row["error"])


def test_working_resolution_bounds_each_task(pairs, tmp_path):
    out = tmp_path / "out"
    run_batch(find_pairs(pairs), out, options={"max_pixels": 1000}, progress=False)
    for row in read_report(out).values():
        assert row["working_width"] * row["working_height"] <= 1000
        assert row["width"] * row["height"] > 1000
        assert labels_of(Path(row["output"])).shape == (row["height"], row["width"])


def bad_inputs(folder: Path) -> dict[str, str]:
    """Add broken pairs to ``folder``; return image name -> expected error fragment."""
    good = sorted(folder.glob("*_scribbles.png"))[0]
    image = sorted(folder.glob("*.jpg"))[0]
    (folder / "corrupt.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    Image.open(good).save(folder / "corrupt_scribbles.png")
    Image.new("RGB", (30, 20)).save(folder / "small.png")
    Image.open(good).save(folder / "small_scribbles.png")
    Image.open(image).save(folder / "onelabel.jpg")
    s = np.asarray(Image.open(good)).copy()
    s[s > 0] = 1
    Image.fromarray(s).save(folder / "onelabel_scribbles.png")
    Image.new("RGB", (8, 8)).save(folder / "orphan.png")
    return {"corrupt.jpg": "cannot read image", "small.png": "scribble map is",
            "onelabel.jpg": "label"}


def test_bad_images_fail_alone_and_set_the_exit_status(pairs, tmp_path, capsys):
    expected = bad_inputs(pairs)
    out = tmp_path / "out"
    code = main(["batch", str(pairs), "-o", str(out), "-j", "1"])
    assert code == len(expected)
    report = read_report(out)
    for name, fragment in expected.items():
        assert report[name]["status"] == "failed"
        assert fragment in report[name]["error"] and "\n" not in report[name]["error"]
        assert not (out / f"{Path(name).stem}.png").exists()
    assert report["orphan.png"]["status"] == "no_scribbles"
    assert sum(r["status"] == "ok" for r in report.values()) == 6
    err = capsys.readouterr().err
    assert "6 segmented, 3 failed" in err and "1 without scribbles" in err
    assert "failed: " in err and "corrupt.jpg" in err


def test_rerun_skips_finished_images_and_overwrite_recomputes(pairs, tmp_path):
    out = tmp_path / "out"
    assert run_batch(find_pairs(pairs), out, progress=False).count("ok") == 6
    first = read_report(out)
    victim = sorted(out.glob("*.png"))[0]
    victim.unlink()
    mtimes = {p.name: p.stat().st_mtime_ns for p in out.glob("*.png")}
    again = run_batch(find_pairs(pairs), out, progress=False)
    assert (again.count("ok"), again.count("skipped")) == (1, 5)
    assert victim.exists()
    assert all(p.stat().st_mtime_ns == mtimes[p.name] for p in out.glob("*.png")
               if p.name in mtimes)
    report = read_report(out)
    for name, row in report.items():  # skipped rows keep the earlier run's figures
        if row["status"] == "skipped":
            assert row["iterations"] == first[name]["iterations"]
    assert run_batch(find_pairs(pairs), out, overwrite=True, progress=False).count("ok") == 6


def test_interrupted_batch_keeps_its_report_and_resumes(pairs, tmp_path):
    out = tmp_path / "out"
    seen = []

    def stop_after_two(row):
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_batch(find_pairs(pairs), out, progress=False, on_result=stop_after_two)
    report = read_report(out)
    assert len(report) == 2 and all(r["status"] == "ok" for r in report.values())
    resumed = run_batch(find_pairs(pairs), out, progress=False)
    assert (resumed.count("skipped"), resumed.count("ok")) == (2, 4)
    assert len(list(out.glob("*.png"))) == 6


def test_stale_temporaries_of_killed_writers_are_removed(pairs, tmp_path):
    """Only segapp's own leftovers (its temporary name, no live writer's lock) go; a user's
    ``.NAME.anything.tmp`` stays (issue 30: the batch deleted ``.a.png.my-notes.tmp``)."""
    import fcntl
    out = tmp_path / "out"
    out.mkdir()
    stem = find_pairs(pairs).pairs[0].stem
    (out / ".segapp-00000000deadbeef.tmp").write_bytes(b"half a png")   # a killed writer's
    (out / f".{stem}.png.my-notes.tmp").write_bytes(b"the user's")
    (out / ".someone-else.tmp").write_bytes(b"not ours")
    live = out / ".segapp-0000000012345678.tmp"                       # a live writer's
    live.write_bytes(b"being written")
    with open(live, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        run_batch(find_pairs(pairs), out, progress=False)
        assert sorted(p.name for p in out.glob(".*.tmp")) == sorted(
            [".someone-else.tmp", f".{stem}.png.my-notes.tmp", live.name])
    run_batch(find_pairs(pairs), out, progress=False)      # its writer is gone now
    assert sorted(p.name for p in out.glob(".*.tmp")) == sorted(
        [".someone-else.tmp", f".{stem}.png.my-notes.tmp"])


def run_cli(*args: object) -> int:
    """``segapp ARGS`` as the shell sees it: argparse's errors exit through SystemExit."""
    try:
        return main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code  # type: ignore[return-value]


def test_output_folder_must_not_hold_the_inputs(pairs):
    assert main(["batch", str(pairs), "-o", str(pairs), "-q"]) == EXIT_BATCH_ERROR


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unrecognized arguments"),
    (["--workers", "many"], "invalid int value"),
    (["--method", "nope"], "unknown method"),
    (["-O", "not_an_option=1"], "unknown option 'not_an_option'"),
    (["--maxiter", "0"], "maxiter"),
    (["-O", "maxiter=0"], "maxiter"),
    (["--method", "scpc", "--amg-theta", "0.1"], "not an option of method 'scpc'"),
    (["--max-pixels", "3"], "--max-pixels must be 0"),
    (["--pixel-limit", "-1"], "--pixel-limit must be"),
    (["--pattern", "x.png"], "must contain {stem}"),
    # issue 23: these ended in tracebacks
    (["--pattern", "{stem:999999999999}.png"], "without a format spec"),
    (["--pattern", "{stem:>99999999}.png"], "without a format spec"),
    (["--pattern", "{stem!r}.png"], "without a format spec"),
    (["--pattern", "x" * 300 + "{stem}.png"], "too long"),
    (["--pattern", "x" * 100_000 + "{stem}"], "too long"),
])
def test_command_line_errors_exit_101_in_one_line(pairs, tmp_path, capsys, args, message):
    assert run_cli("batch", pairs, "-o", tmp_path / "out", *args) == EXIT_BATCH_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and err[-1].startswith("segapp batch: error:")
    assert not (tmp_path / "out").exists()


def test_missing_output_option_is_a_usage_error(tmp_path, capsys):
    assert run_cli("batch", tmp_path) == EXIT_BATCH_ERROR
    assert "required: --output" in capsys.readouterr().err


def test_no_pairs_is_an_error(tmp_path, capsys):
    touch(tmp_path / "in", "a.txt")
    assert main(["batch", str(tmp_path / "in"), "-o", str(tmp_path / "out")]) == 101
    assert "no image files" in capsys.readouterr().err


def test_scheduler_without_dask_is_a_one_line_error(pairs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)   # import fails as if not installed
    code = main(["batch", str(pairs), "-o", str(tmp_path / "out"), "--scheduler", "local"])
    assert code == EXIT_BATCH_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'segapp[batch]'" in err[0]


def test_help_says_a_process_pool_needs_no_dask(capsys):
    with pytest.raises(SystemExit):
        main(["batch", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "local process pool" in text and "no dask needed" in text
    assert "{stem}_scribbles.png" in text and "--sigma-scale" in text


def test_progress_bar_with_tqdm(pairs, tmp_path, capsys):
    pytest.importorskip("tqdm")
    assert main(["batch", str(pairs), "-o", str(tmp_path / "out"), "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert "6/6" in err and "img" in err and "<00:00" in err or "00:00<" in err


def test_progress_lines_without_tqdm(pairs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert main(["batch", str(pairs), "-o", str(tmp_path / "out"), "-j", "1"]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[")]
    assert len(lines) == 6 and lines[-1].startswith("[6/6]") and "ETA 0:00:00" in lines[-1]
    assert "ETA" in lines[0]


# -- process pool --------------------------------------------------------------------------
def tasks_for(folder: Path, out: Path) -> list[Task]:
    out.mkdir(exist_ok=True)
    return [Task(str(p.image), str(p.scribbles), str(out / f"{p.stem}.png"))
            for p in find_pairs(folder).pairs]


def rename_pair(folder: Path, stem: str, new: str) -> None:
    (folder / f"{stem}.jpg").rename(folder / f"{new}.jpg")
    (folder / f"{stem}_scribbles.png").rename(folder / f"{new}_scribbles.png")


def test_pool_equals_serial_and_reruns_the_tasks_of_a_dying_worker(tmp_path):
    folder = tmp_path / "in"
    make_pairs(folder, 5, SCALE)
    rename_pair(folder, find_pairs(folder).pairs[0].stem, "first")
    serial = run_batch(find_pairs(folder), tmp_path / "serial", progress=False)
    assert serial.count("ok") == 5
    with PoolExecutor(2) as pool:
        rows = [row for _, row in pool.map_unordered(batch_helpers.die_once_on_first,
                                                     tasks_for(folder, tmp_path / "pool"))]
    assert (tmp_path / "pool" / "first.died").exists()  # the worker really died once
    assert len(rows) == 5 and all(r["status"] == "ok" for r in rows)
    for p in (tmp_path / "serial").glob("*.png"):
        assert np.array_equal(labels_of(p), labels_of(tmp_path / "pool" / p.name)), p.name


def test_pool_gives_up_on_an_image_that_always_kills_its_worker(tmp_path):
    folder = tmp_path / "in"
    make_pairs(folder, 3, SCALE)
    rename_pair(folder, find_pairs(folder).pairs[0].stem, "poison")
    with PoolExecutor(2) as pool:
        rows = {Path(r["image"]).name: r for _, r in pool.map_unordered(
            batch_helpers.always_die_on_poison, tasks_for(folder, tmp_path / "out"))}
    assert rows["poison.jpg"]["status"] == "failed"
    assert f"died {MAX_ATTEMPTS} times" in rows["poison.jpg"]["error"]
    assert sum(r["status"] == "ok" for r in rows.values()) == 2


def test_default_command_uses_a_process_pool(pairs, tmp_path, capsys):
    assert main(["batch", str(pairs), "-o", str(tmp_path / "out"), "-j", "2"]) == 0
    assert "on process pool (2 workers)" in capsys.readouterr().err
    for pair in find_pairs(pairs).pairs:
        assert np.array_equal(labels_of(tmp_path / "out" / f"{pair.stem}.png"),
                              reference(pair.image, pair.scribbles))


def test_core_and_batch_import_no_napari_qt_dask_or_tqdm():
    """The core stays napari/Qt-free and batch loads dask and tqdm only when it uses them."""
    code = ("import sys, segapp, segapp.io, segapp.io.render, segapp.cli, segapp.batch, "
            "segapp.napari; "
            "bad = [m for m in ('napari', 'qtpy', 'PySide6', 'dask', 'distributed', 'tqdm') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


_FAULTS = """
import contextlib, resource, sys, segapp
from segapp import io, samples
from segapp.batch.task import _malloc_for_large_arrays
im = io.read_image(samples.sample_path("chelsea"))
s = io.read_scribbles(samples.sample_scribbles_path("chelsea"), im.shape)
# NumPy's arrays are what the malloc setting is about: the iterative solve has nothing else
# (the direct one's factor is faulted in once by CHOLMOD whatever the setting)
segapp.segment(im[::4, ::4], s[::4, ::4], linear_solver="iterative")   # imports, caches
with _malloc_for_large_arrays() if sys.argv[1] == "fix" else contextlib.nullcontext():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    segapp.segment(im, s, linear_solver="iterative")
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc malloc parameters")
def test_tasks_undo_dasks_malloc_trimming():
    """Dask workers run with MALLOC_TRIM_THRESHOLD_ set, which makes glibc mmap (and fault
    in) every large array afresh; inside a task that is undone (page faults, not time)."""
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}
    faults = {mode: int(subprocess.run([sys.executable, "-c", _FAULTS, mode], env=env,
                                       capture_output=True, text=True, check=True).stdout)
              for mode in ("plain", "fix")}
    assert faults["fix"] * 4 < faults["plain"], faults


# -- issue 23: output clashes, output folders that take no files, Ctrl+C ----------------------
def test_an_overlay_that_is_another_images_label_map_is_refused(tmp_path, capsys):
    """``x.png`` with --overlay writes ``x_overlay.png``, the label map of the image
    ``x_overlay.png``: both rows said ok and one output was lost."""
    folder = tmp_path / "in"
    make_pairs(folder, 3, SCALE)
    stem = find_pairs(folder).pairs[0].stem
    rename_pair(folder, find_pairs(folder).pairs[1].stem, f"{stem}_overlay")
    out = tmp_path / "out"
    code = main(["batch", str(folder), "-o", str(out), "-j", "1", "--overlay"])
    assert code == 2
    report = read_report(out)
    for name in (f"{stem}.jpg", f"{stem}_overlay.jpg"):
        assert report[name]["status"] == "failed"
        assert f"output {stem}_overlay.png would be written by" in report[name]["error"]
    assert sorted(p.name for p in out.glob("*.png")) == sorted(
        [f"{p.stem}{s}.png" for p in find_pairs(folder).pairs[2:] for s in ("", "_overlay")])
    # without overlays nothing clashes
    assert main(["batch", str(folder), "-o", str(tmp_path / "plain"), "-j", "1"]) == 0


def test_an_output_that_is_a_fifo_fails_its_image_before_any_work(pairs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    stem = find_pairs(pairs).pairs[0].stem
    os.mkfifo(out / f"{stem}.png")
    (out / f"{stem}_overlay.png").write_bytes(b"")
    result = run_batch(find_pairs(pairs), out, progress=False, overlay=True)
    row = next(r for r in result.rows if Path(r["image"]).stem == stem)
    assert row["status"] == "failed" and "FIFO" in row["error"] and row["width"] == ""
    assert stat.S_ISFIFO(os.lstat(out / f"{stem}.png").st_mode)     # never replaced
    assert result.count("ok") == 5


def _fail_with(code: int):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))
    return fail


def _file(path: Path) -> Path:
    path.write_bytes(b"")
    return path


#: (case, make the output folder fail -> OUT_DIR, message part): one line, exit 101, no
#: traceback, no image touched. As root permission bits stop nothing, so read-only and
#: permission-less folders are simulated where the writer creates its file.
OUT_DIR_CASES = [
    ("read-only", lambda m, d: m.setattr("segapp.io.atomic._create_temp",
                                         _fail_with(errno.EROFS)) or d / "out", "not writable"),
    ("no permission", lambda m, d: m.setattr("segapp.io.atomic._create_temp",
                                             _fail_with(errno.EACCES)) or d / "out",
     "not writable"),
    ("full", lambda m, d: m.setattr(os, "fsync", _fail_with(errno.ENOSPC)) or d / "out",
     "disk full"),
    ("a file", lambda m, d: _file(d / "out"), "cannot create output folder"),
    ("under a file", lambda m, d: _file(d / "f") / "out", "cannot create output folder"),
    ("a FIFO", lambda m, d: os.mkfifo(d / "fifo") or d / "fifo", "cannot create output folder"),
]


@pytest.mark.parametrize("make_bad, message", [c[1:] for c in OUT_DIR_CASES],
                         ids=[c[0] for c in OUT_DIR_CASES])
def test_an_output_folder_that_takes_no_files_is_one_line_exit_101(pairs, tmp_path, capsys,
                                                                   monkeypatch, make_bad,
                                                                   message):
    import segapp.batch.task
    monkeypatch.setattr(segapp.batch.task, "_run", _never)     # refused before any image
    out = make_bad(monkeypatch, tmp_path)
    assert main(["batch", str(pairs), "-o", str(out), "-j", "1"]) == EXIT_BATCH_ERROR
    err = capsys.readouterr().err
    assert err.startswith("segapp batch: error: ") and err.count("\n") == 1, err
    assert message in err, err


def _never(*args, **kwargs):
    raise AssertionError("an image was processed")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs POSIX permissions and a non-root user")
def test_a_read_only_output_folder_really_is_refused(pairs, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o500)
    try:
        assert main(["batch", str(pairs), "-o", str(out), "-j", "1"]) == EXIT_BATCH_ERROR
    finally:
        out.chmod(0o700)
    assert "not writable" in capsys.readouterr().err


def test_a_report_that_cannot_be_written_at_the_end_is_exit_101(pairs, tmp_path, capsys,
                                                                monkeypatch):
    """The disk fills up during the batch: the images fail one by one, then the report."""
    import segapp.batch.runner
    monkeypatch.setattr(segapp.batch.runner, "write_report", _fail_with(errno.ENOSPC))
    assert main(["batch", str(pairs), "-o", str(tmp_path / "out"), "-j", "1"]) == \
        EXIT_BATCH_ERROR
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("segapp batch: error: cannot write the report")
    assert "Traceback" not in "\n".join(err)


def test_failure_lines_do_not_repeat_the_image_path(pairs, tmp_path, capsys):
    bad_inputs(pairs)
    main(["batch", str(pairs), "-o", str(tmp_path / "out"), "-j", "1", "-q"])
    main(["batch", str(pairs), "-o", str(tmp_path / "out2"), "-j", "1"])
    failed = [ln for ln in capsys.readouterr().err.splitlines() if "failed: " in ln]
    assert failed
    for line in failed:
        path = line.split("failed: ", 1)[1].split(": ", 1)[0]
        assert line.count(Path(path).name) == 1, line


#: ``python -m segapp.cli`` as a terminal starts it: with Ctrl+C's default handler. A shell
#: starts background jobs with SIGINT ignored, and Python keeps an ignored SIGINT ignored; run
#: from such a job (``cmd &`` in a script), the pool's Ctrl+C test got exit 0, not 130.
_AS_FROM_A_TERMINAL = ("import runpy, signal, sys; "
                       "signal.signal(signal.SIGINT, signal.default_int_handler); "
                       "sys.argv[0] = 'segapp'; runpy.run_module('segapp.cli', run_name='__main__')")


def _start_batch(folder: Path, out: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _AS_FROM_A_TERMINAL, "batch", str(folder),
                             "-o", str(out), "-q", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.parametrize("executor", [["-j", "1"], ["-j", "2"], ["-j", "2", "--scheduler",
                                                                  "local"]],
                         ids=["serial", "process pool", "dask LocalCluster"])
def test_ctrl_c_exits_130_without_a_traceback_on_every_executor(tmp_path, executor):
    """Ctrl+C reaches the whole process group (os.killpg, as a terminal sends it); the
    interrupt lands once the first image is written, while others run."""
    import signal
    import time
    if "local" in executor:
        pytest.importorskip("distributed")
    folder = tmp_path / "in"
    make_pairs(folder, 8, 0.6)
    out = tmp_path / "out"
    proc = _start_batch(folder, out, *executor)
    try:
        deadline = time.monotonic() + 240
        while not list(out.glob("*.png")) and proc.poll() is None:
            assert time.monotonic() < deadline, "no image finished in 240 s"
            time.sleep(0.1)
        assert proc.poll() is None, "the batch finished before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    # one line: no worker's log either (a LocalCluster's workers printed Dask's warnings
    # about the cancelled tasks, and under load a heartbeat error with its traceback)
    [line] = err.strip().splitlines()
    assert line.startswith("segapp batch: interrupted")
    read_report(out)          # written after the interrupt (the rows the client had received)


def test_fifos_in_the_folders_are_neither_images_nor_scribbles(pairs, tmp_path):
    """A FIFO named like an image or a scribble file would block its reader forever."""
    import signal
    os.mkfifo(pairs / "pipe.jpg")
    os.mkfifo(pairs / "pipe_scribbles.png")
    stem = find_pairs(pairs).pairs[0].stem
    (pairs / f"{stem}_scribbles.png").rename(pairs / f"{stem}.png.bak")
    os.mkfifo(pairs / f"{stem}_scribbles.png")

    def blocked(*_):
        raise TimeoutError("the batch blocked on a FIFO")
    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(120)
    try:
        result = run_batch(find_pairs(pairs), tmp_path / "out", progress=False)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    rows = {Path(r["image"]).name: r for r in result.rows}
    assert "pipe.jpg" not in rows and rows[f"{stem}.jpg"]["status"] == "no_scribbles"
    assert result.count("ok") == 5
