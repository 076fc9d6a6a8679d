"""Options declared once (segapp.options): validation, the generated CLI / `segapp methods` /
docs table agree with the declarations, and solve options re-solve without a new graph."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import segapp
from segapp.cli import EXIT_INPUT, main
from segapp.errors import InvalidInputError
from segapp.methods import REGISTRY, option_names, options_of
from segapp.options import WORKING_PIXELS, Option, Settings, check_solve, markdown, resolve, split

ROOT = Path(__file__).resolve().parents[1]

INT = Option("n", int, 3, "an int", "solve", low=1, high=10)
FLOAT = Option("x", float, 0.5, "a float", "setup", low=0.0, high=1.0)
MAYBE = Option("m", float, None, "maybe", "setup", low=1e-3, high=10.0, none_ok=True)
BOOL = Option("b", bool, True, "a flag", "solve")
CHOICE = Option("c", str, "sweep", "a choice", "solve", choices=("sweep", "kmeans"))
INTCHOICE = Option("conn", int, 8, "grid", "setup", choices=(4, 8))


@pytest.mark.parametrize("option, value", [
    (INT, True), (INT, np.bool_(False)), (INT, 2.0), (INT, 2.5), (INT, "3"), (INT, None),
    (INT, 0), (INT, 11), (INT, -1), (INT, [3]),
    (FLOAT, "0.5"), (FLOAT, float("nan")), (FLOAT, float("inf")), (FLOAT, -float("inf")),
    (FLOAT, 1e300), (FLOAT, -1e-300), (FLOAT, True), (FLOAT, None), (FLOAT, object()),
    (FLOAT, 1.0000001), (FLOAT, np.array([0.5])),
    (MAYBE, 1e-300), (MAYBE, 0.0), (MAYBE, "abc"), (MAYBE, 1e300),
    (BOOL, "maybe"), (BOOL, 1), (BOOL, 0), (BOOL, None), (BOOL, "true"),
    (CHOICE, "banana"), (CHOICE, None), (CHOICE, 1),
    (INTCHOICE, 6), (INTCHOICE, 4.0), (INTCHOICE, "8"),
])
def test_bad_values_raise_one_line_errors_naming_the_option(option, value):
    with pytest.raises(InvalidInputError) as exc:
        option.check(value)
    msg = str(exc.value)
    assert msg.startswith(f"{option.name} must be ") and "\n" not in msg


@pytest.mark.parametrize("option, value, expected", [
    (INT, np.int64(4), 4), (INT, 1, 1), (INT, 10, 10),
    (FLOAT, 1, 1.0), (FLOAT, np.float32(0.25), 0.25), (FLOAT, 0.0, 0.0),
    (MAYBE, None, None), (MAYBE, 2, 2.0),
    (BOOL, np.bool_(False), False), (CHOICE, "kmeans", "kmeans"), (INTCHOICE, np.int32(4), 4),
])
def test_good_values_are_coerced_to_plain_python_types(option, value, expected):
    out = option.check(value)
    assert out == expected and type(out) is type(expected)


@pytest.mark.parametrize("option, text, expected", [
    (INT, "7", 7), (FLOAT, "0.25", 0.25), (MAYBE, "none", None), (MAYBE, "NONE", None),
    (BOOL, "false", False), (BOOL, "yes", True), (CHOICE, "kmeans", "kmeans"),
])
def test_parse_reads_text(option, text, expected):
    assert option.parse(text) == expected


@pytest.mark.parametrize("option, text", [(INT, "2.5"), (INT, "none"), (FLOAT, "abc"),
                                          (FLOAT, "nan"), (BOOL, "maybe"), (CHOICE, "x")])
def test_parse_rejects_bad_text(option, text):
    with pytest.raises(InvalidInputError, match=option.name):
        option.parse(text)


def test_a_declaration_with_a_bad_default_is_refused():
    with pytest.raises(TypeError):
        Option("x", float, 2.0, "", "solve", low=0.0, high=1.0)
    with pytest.raises(TypeError):
        Option("x", float, 1, "", "solve")          # an int default for a float option
    with pytest.raises(TypeError):
        Option("x", int, 1, "", "later")


# -- the declarations ------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_method_declares_bounded_unique_options(name):
    opts = options_of(name)
    names = [o.name for o in opts]
    assert len(names) == len(set(names))
    assert option_names(name) == set(names)
    assert REGISTRY[name].defaults == {o.name: o.default for o in opts}
    for o in opts:
        assert o.help and "\n" not in o.help
        assert o.check(o.default) == o.default
        if o.type in (int, float) and o.choices is None:
            # every number is bounded on both sides: no accepted value can hang a solve
            assert o.low is not None and o.high is not None, o.name
        # the text form of the default parses back to it (CLI and settings files)
        text = "none" if o.default is None else str(o.default)
        assert o.parse(text) == o.default


def test_resolve_split_and_check_solve():
    opts = (INT, FLOAT, BOOL)
    assert resolve(opts, {"n": 5}, "m") == {"n": 5, "x": 0.5, "b": True}
    assert split(opts, {"n": 5, "x": 0.25}, "m") == ({"x": 0.25}, {"n": 5})
    with pytest.raises(InvalidInputError, match="unknown option.*bogus.*valid: b, n, x"):
        resolve(opts, {"bogus": 1}, "m")
    with pytest.raises(InvalidInputError, match="x: set-up option"):
        check_solve(opts, {"x": 0.25}, "m")


def test_settings_are_read_only_and_check_only_an_updates_changes():
    opts = (INT, FLOAT, BOOL)
    settings = Settings.resolve(opts, {"n": 5}, "m")
    assert dict(settings) == {"n": 5, "x": 0.5, "b": True}
    assert settings.stage("solve") == {"n": 5, "b": True}
    assert settings.stage("setup") == {"x": 0.5}
    with pytest.raises(TypeError):
        settings["n"] = 6   # type: ignore[index]
    assert settings.with_solve({}) is settings
    assert dict(settings.with_solve({"n": 7})) == {"n": 7, "x": 0.5, "b": True}
    assert settings["n"] == 5
    with pytest.raises(InvalidInputError, match="x: set-up option"):
        settings.with_solve({"x": 0.25})


def test_a_session_checks_each_option_once(monkeypatch):
    """Issue 24: a set-up option was checked 3× per Session, every solve option per update."""
    img, s = _two_regions()
    segapp.methods.get("fastge")   # its declarations check their defaults when first imported
    checked: list[str] = []
    real = Option.check

    def counting(self, value):
        checked.append(self.name)
        return real(self, value)
    monkeypatch.setattr(Option, "check", counting)
    sess = segapp.Session(img, "fastge", connectivity=4, eig_tol=2e-3)
    assert sorted(checked) == ["connectivity", "eig_tol", "max_pixels"]
    checked.clear()
    sess.update(s)
    sess.update(s, constraint_weight=2.0)
    assert checked == ["constraint_weight"]


def test_max_pixels_is_declared_and_keeps_its_message():
    assert WORKING_PIXELS.name == "max_pixels" and WORKING_PIXELS.flag == "--max-pixels"
    with pytest.raises(InvalidInputError,
                       match=r"^max_pixels must be an integer ≥ 4 or None, got 3$"):
        WORKING_PIXELS.check(3)
    assert WORKING_PIXELS.check(None) is None and WORKING_PIXELS.check(np.int64(10)) == 10


# -- generated views agree with the declarations ---------------------------------------------
def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", list(REGISTRY))
def test_segment_help_lists_exactly_the_methods_options(name, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["segment", "--method", name, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    flat = _squash(out)
    own = options_of(name)
    for o in own:
        assert o.flag in out
        assert _squash(o.describe().replace("%%", "%")) in flat, o.name
    others = {o.flag for m in REGISTRY for o in options_of(m)} - {o.flag for o in own}
    for flag in others:
        assert not re.search(re.escape(flag) + r"\b", out), flag
    assert "(default: None)" not in out and "(default: True)" not in out
    assert "--no-overwrite" in out and "default: replace" in flat


@pytest.mark.parametrize("name", list(REGISTRY))
def test_methods_command_lists_every_option(name, capsys):
    assert main(["methods", name]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for o in options_of(name):
        line = next(ln for ln in lines if ln.split()[:1] == [o.flag])
        assert o.default_text() in line and o.range_text() in line and o.stage in line
        assert o.help in line


def test_docs_options_table_is_generated_from_the_declarations(capsys):
    expected = markdown([(n, c.description, c.options) for n, c in REGISTRY.items()])
    assert main(["methods", "--markdown"]) == 0
    assert capsys.readouterr().out == expected
    assert (ROOT / "docs" / "options.md").read_text() == expected, \
        "docs/options.md is stale: segapp methods --markdown > docs/options.md"


def test_flag_of_another_method_is_a_one_line_error(tmp_path, capsys):
    img = tmp_path / "i.png"
    from PIL import Image
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(img)
    code = main(["segment", str(img), "-s", str(img), "-o", str(tmp_path / "o.png"),
                 "--beta0", "0.2"])
    err = capsys.readouterr().err
    assert code == EXIT_INPUT
    assert err.count("\n") == 1 and "--beta0 is not an option of method 'fastge'" in err
    code = main(["segment", str(img), "-s", str(img), "-o", str(tmp_path / "o.png"),
                 "--method", "landmark", "--connectivity", "4"])
    assert code == EXIT_INPUT
    assert "--connectivity is not an option of method 'landmark'" in capsys.readouterr().err


# -- build once, solve per edit --------------------------------------------------------------
def _two_regions(H=30, W=40, seed=0):
    rng = np.random.default_rng(seed)
    img = np.zeros((H, W, 3), np.float32)
    img[:, : W // 2] = (0.7, 0.2, 0.2)
    img[:, W // 2:] = (0.2, 0.3, 0.8)
    img = np.clip(img + rng.normal(0, 0.05, img.shape), 0, 1).astype(np.float32)
    s = np.zeros((H, W), int)
    s[5:25, 4] = 1
    s[5:25, W - 5] = 2
    s[H // 2, W // 4: W // 2 - 2] = 3   # a third label inside the left region
    return img, s


@pytest.fixture
def graph_builds(monkeypatch):
    from segapp.methods import graph_method
    calls = []
    real = graph_method.image_graph

    def counting(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)
    monkeypatch.setattr(graph_method, "image_graph", counting)
    return calls


@pytest.mark.parametrize("method, changes", [
    ("fastge", [dict(constraint_weight=4.0), dict(k2_partition="kmeans", seed=5),
                dict(n_vectors=3, warm_start=False), dict(maxiter=50, eig_tol=1e-4)]),
    # (not seed for ncut: unconstrained, it splits the left region holding labels 1 and 3
    # arbitrarily, so a warm session and a fresh one may split it differently)
    ("ncut", [dict(kmeans_restarts=2), dict(maxiter=200), dict(n_vectors=3)]),
    ("ccskl", [dict(row_normalise=False)]),
])
def test_solve_options_resolve_without_rebuilding_the_graph(graph_builds, method, changes):
    img, s = _two_regions()
    # Raw colours (denoise=0): on the TV-filtered image the left region is so flat that
    # unconstrained ncut's split of it between labels 1 and 3 is arbitrary (warm vs fresh
    # eigenvectors then differ); this test is about the options' plumbing.
    sess = segapp.Session(img, method, denoise=0)
    assert len(graph_builds) == 1
    first = sess.update(s)
    for kw in changes:
        res = sess.update(s, **kw)
        # the same answer as a session built with that option from the start
        fresh = segapp.segment(img, s, method=method, denoise=0, **kw)
        assert np.mean(res.labels == fresh.labels) > 0.98, kw
    assert len(graph_builds) == 1 + len(changes)          # only the fresh sessions built one
    again = sess.update(s)                                # overrides last one call only
    assert np.mean(again.labels == first.labels) > 0.98


def test_constraint_weight_per_update_scales_the_eigenvalues(graph_builds):
    """FAST-GE's eigenvalues scale as 1/constraint_weight (docs/architecture.md)."""
    img, s = _two_regions()
    sess = segapp.Session(img)
    lam1 = sess.update(s).eigenvalues
    lam4 = sess.update(s, constraint_weight=4.0, warm_start=False).eigenvalues
    assert len(graph_builds) == 1
    np.testing.assert_allclose(lam4 * 4, lam1, rtol=0.2)


def test_session_solve_defaults_and_setup_options_in_update():
    img, s = _two_regions()
    sess = segapp.Session(img, "fastge", eig_tol=2e-3, connectivity=4)
    assert sess.setup_options["connectivity"] == 4
    assert sess.solve_options["eig_tol"] == 2e-3
    with pytest.raises(InvalidInputError, match="connectivity: set-up option"):
        sess.update(s, connectivity=8)
    with pytest.raises(InvalidInputError, match="unknown option"):
        sess.update(s, bogus=1)
    with pytest.raises(InvalidInputError, match="constraint_weight must be"):
        sess.update(s, constraint_weight="2")
    with pytest.raises(InvalidInputError, match="unknown option.*beta0"):
        segapp.Session(img, "fastge", beta0=0.2)


def test_landmark_session_keeps_its_landmark_graph_across_solve_options(monkeypatch):
    from segapp.methods import landmark_base as landmarks
    calls = []
    real = landmarks.sparse_code

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(landmarks, "sparse_code", counting)
    img, s = _two_regions()
    sess = segapp.Session(img, "landmark", n_landmarks=60)
    sess.update(s)
    sess.update(s, kmeans_sample=5000, constraint_weight=2.0)
    sess.update(s, n_vectors=3)
    assert len(calls) == 1
    with pytest.raises(InvalidInputError, match="n_landmarks: set-up option"):
        sess.update(s, n_landmarks=80)


def test_n_vectors_below_k_minus_1_is_rejected():
    img, s = _two_regions()
    for method in ("fastge", "ncut"):
        with pytest.raises(InvalidInputError, match="n_vectors must be k − 1 or k"):
            segapp.segment(img, s, method=method, n_vectors=1)


def test_graph_options_with_a_given_graph_are_refused():
    W = sp.random(20, 20, density=0.3, random_state=0)
    W = W + W.T
    with pytest.raises(InvalidInputError, match="sigma: image-graph option"):
        segapp.cluster(np.r_[1, 2, np.zeros(18, int)], graph=W, sigma=0.5)


def test_the_apps_largest_working_size_is_still_factored_and_solves_such_photos_whole():
    """The app's largest working size is the direct solver's limit: a photo of that size is
    segmented at full resolution (the answer of a full solve, docs/edges.md), on a factor."""
    from segapp.inputs.resolution import working_shape
    from segapp.options import MAX_PIXELS
    from segapp.solve.direct import MAX_FACTORED_PIXELS

    largest = max(MAX_PIXELS.choices)
    assert largest == MAX_FACTORED_PIXELS
    for shape in ((2000, 2000), (1633, 2449), (1291, 1936)):
        assert working_shape(shape, largest) == shape
    h, w = working_shape((3000, 4000), largest)     # 12 MP: a copy of at most that size
    assert h * w <= largest and abs(h / w - 0.75) < 0.01
