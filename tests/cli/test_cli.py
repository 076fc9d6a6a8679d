"""The command line end to end (in-process ``main`` and one real subprocess) and each error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segapp.cli import EXIT_INPUT, EXIT_OUTPUT, EXIT_SOLVER, main


@pytest.fixture
def scene(tmp_path: Path) -> dict[str, Path]:
    """A 60×80 two-region photo (left dark red, right light blue, noisy) and its strokes."""
    rng = np.random.default_rng(0)
    img = np.zeros((60, 80, 3))
    img[:, :40] = (0.6, 0.1, 0.1)
    img[:, 40:] = (0.3, 0.6, 0.9)
    img = np.clip(img + rng.normal(0, 0.05, img.shape), 0, 1)
    strokes = np.zeros((60, 80), np.uint8)
    strokes[20:40, 10:12] = 3          # label ids need not be 1..k
    strokes[20:40, 65:67] = 7
    paths = {"image": tmp_path / "photo.jpg", "scribbles": tmp_path / "strokes.png",
             "out": tmp_path / "labels.png"}
    Image.fromarray((img * 255).astype(np.uint8)).save(paths["image"], quality=95)
    Image.fromarray(strokes).save(paths["scribbles"])
    return paths


def run(*args: object) -> int:
    return main([str(a) for a in args])


def test_segment_writes_labels_overlay_and_heatmaps(scene, tmp_path, capsys):
    hdir = tmp_path / "heat"
    code = run("segment", scene["image"], "-s", scene["scribbles"], "-o", scene["out"],
               "--overlay", tmp_path / "ov.png", "--heatmaps", hdir)
    assert code == 0
    labels = np.asarray(Image.open(scene["out"]))
    assert labels.shape == (60, 80)
    assert set(np.unique(labels)) == {3, 7}
    truth = np.where(np.arange(80) < 40, 3, 7)[None, :].repeat(60, 0)
    assert np.mean(labels == truth) > 0.98
    overlay = np.asarray(Image.open(tmp_path / "ov.png"))
    assert overlay.shape == (60, 80, 3)
    assert len(list(hdir.glob("eigenvector_*.png"))) == 1   # k - 1 = 1 vector for two labels
    out = capsys.readouterr().out
    assert "segmented 80×60 px into 2 labels" in out and "converged" in out


def test_options_are_passed_to_the_method(scene, capsys):
    code = run("segment", scene["image"], "-s", scene["scribbles"], "-o", scene["out"],
               "--connectivity", 8, "--grey", "-O", "eig_tol=0.002", "--k2-partition",
               "kmeans")
    assert code == 0
    code = run("segment", scene["image"], "-s", scene["scribbles"], "-o", scene["out"],
               "--connectivity", 5)
    assert code == EXIT_INPUT
    assert "connectivity must be one of 4, 8" in capsys.readouterr().err


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("segapp: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def test_unreadable_image(scene, tmp_path, capsys):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n this is not a png")
    assert run("segment", bad, "-s", scene["scribbles"], "-o", scene["out"]) == EXIT_INPUT
    _error(capsys)
    assert run("segment", tmp_path / "missing.jpg", "-s", scene["scribbles"],
               "-o", scene["out"]) == EXIT_INPUT
    _error(capsys)


def test_size_mismatch(scene, tmp_path, capsys):
    small = tmp_path / "small.png"
    Image.fromarray(np.zeros((10, 10), np.uint8)).save(small)
    assert run("segment", scene["image"], "-s", small, "-o", scene["out"]) == EXIT_INPUT
    assert "10" in _error(capsys)


@pytest.mark.parametrize("labels, message", [((), "no strokes"), ((2,), "only label 2")])
def test_too_few_labels(scene, tmp_path, capsys, labels, message):
    s = np.zeros((60, 80), np.uint8)
    for i, lab in enumerate(labels):
        s[10:20, 10 + 10 * i] = lab
    path = tmp_path / "few.png"
    Image.fromarray(s).save(path)
    assert run("segment", scene["image"], "-s", path, "-o", scene["out"]) == EXIT_INPUT
    assert message in _error(capsys)
    assert not scene["out"].exists()


def test_unwritable_output(scene, tmp_path, capsys):
    assert run("segment", scene["image"], "-s", scene["scribbles"],
               "-o", tmp_path / "no" / "such" / "dir.png") == EXIT_OUTPUT
    assert "does not exist" in _error(capsys)
    assert run("segment", scene["image"], "-s", scene["scribbles"], "-o", tmp_path) == EXIT_OUTPUT
    _error(capsys)


def test_no_overwrite_keeps_the_existing_file(scene, capsys):
    scene["out"].write_bytes(b"precious")
    assert run("segment", scene["image"], "-s", scene["scribbles"], "-o", scene["out"],
               "--no-overwrite") == EXIT_OUTPUT
    assert "exists" in _error(capsys)
    assert scene["out"].read_bytes() == b"precious"


def test_solver_failure_is_reported(scene, capsys):
    # an iteration cap (the direct solver has none: it is asked for the iterative one)
    assert run("segment", scene["image"], "-s", scene["scribbles"], "-o", scene["out"],
               "--maxiter", 1, "--eig-tol", 1e-12, "--linear-solver", "iterative") == EXIT_SOLVER
    assert "did not converge" in _error(capsys)
    assert not scene["out"].exists()


def test_unknown_option_and_method(scene, capsys):
    assert run("segment", scene["image"], "-s", scene["scribbles"], "-o", scene["out"],
               "-O", "bogus=1") == EXIT_INPUT
    assert "unknown option" in _error(capsys)
    assert run("segment", scene["image"], "-s", scene["scribbles"], "-o", scene["out"],
               "--method", "nosuch") == EXIT_INPUT
    assert "unknown method" in _error(capsys)


def test_methods_lists_every_registered_method(capsys):
    from segapp import available_methods
    assert run("methods") == 0
    out = capsys.readouterr().out
    for name, _ in available_methods():
        assert any(line.startswith(name + " ") for line in out.splitlines())


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as exc:
        run("segment", "--help")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--scribbles", "--output", "--overlay", "--heatmaps", "--method", "--sigma",
                 "--sigma-scale", "--connectivity", "--radius", "--constraint-weight",
                 "--grey", "--option", "--no-overwrite"):
        assert flag in out


def test_missing_path_for_the_app(tmp_path, capsys):
    assert run(tmp_path / "nope.jpg") == EXIT_INPUT
    _error(capsys)


def test_help_usage_line_shows_the_app_path(capsys):
    """Issue 23: `segapp --help` did not say that `segapp PATH` opens the app on PATH."""
    with pytest.raises(SystemExit):
        run("--help")
    assert capsys.readouterr().out.splitlines()[0] == \
        "usage: segapp [-h] [--version] [PATH | COMMAND ...]"


#: Usage errors (issue 23): one line, exit 2, no traceback — in-process and as the shell runs
#: them (``segapp *.jpg`` expands to several paths).
USAGE_CASES = [
    ("two paths (segapp *.jpg)", ["a.jpg", "b.jpg"], "unknown command 'a.jpg'"),
    ("unknown command and argument", ["foo", "bar"], "unknown command 'foo'"),
    ("three existing files", ["{d}/photo.jpg", "{d}/photo.jpg", "{d}/strokes.png"],
     "the app opens one PATH"),
    ("unknown option", ["--bogus"], "unrecognized"),
    ("segment without arguments", ["segment"], "required"),
    ("methods with two names", ["methods", "fastge", "ncut"], "unrecognized"),
]


@pytest.mark.parametrize("argv, message", [c[1:] for c in USAGE_CASES],
                         ids=[c[0] for c in USAGE_CASES])
def test_usage_errors_are_one_line_exit_2(scene, capsys, argv, message):
    d = scene["image"].parent
    assert run(*[a.format(d=d) for a in argv]) == EXIT_INPUT
    err = _error(capsys)
    assert message in err


@pytest.mark.parametrize("argv", [["a.jpg", "b.jpg"], ["foo", "bar"]])
def test_usage_errors_in_a_subprocess(argv):
    proc = subprocess.run([sys.executable, "-m", "segapp.cli", *argv], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == EXIT_INPUT
    assert proc.stderr.startswith("segapp: error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_installed_script_runs_on_a_bundled_sample(tmp_path):
    """The real entry point in a subprocess, on a shipped sample and its scribbles."""
    from segapp import samples
    out = tmp_path / "coffee_labels.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [sys.executable, "-m", "segapp.cli", "segment", str(samples.sample_path("chelsea")),
         "-s", str(samples.sample_scribbles_path("chelsea")), "-o", str(out), "-q"],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    labels = np.asarray(Image.open(out))
    scribbles = np.asarray(Image.open(samples.sample_scribbles_path("chelsea")))
    ids = set(np.unique(scribbles)) - {0}
    assert set(np.unique(labels)) == ids
    painted = scribbles > 0
    assert np.mean(labels[painted] == scribbles[painted]) > 0.99
