"""What a folder's finished images teach the next photo (segapp.appearance.carry): the
suggestion against hand-built layouts, the painted-pixel invariant, the file's round trip and
its refusals, the bound on memory, and FAST-GE's ``carry`` option."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import segapp
from segapp.appearance.carry import (MAX_IMAGES, LearntAppearance, suggest)
from segapp.errors import InvalidInputError

H, W = 48, 64
RED, BLUE, GREEN = (0.85, 0.2, 0.15), (0.15, 0.3, 0.85), (0.2, 0.7, 0.25)


def paint(layout: np.ndarray, colours: dict[int, tuple], seed: int = 0, gain: float = 1.0,
          noise: float = 0.03) -> np.ndarray:
    """An image whose pixel of label a has colour ``colours[a]`` (× gain) plus noise."""
    rng = np.random.default_rng(seed)
    img = np.zeros(layout.shape + (3,))
    for a, c in colours.items():
        img[layout == a] = np.asarray(c) * gain
    return np.clip(img + rng.normal(0, noise, img.shape), 0, 1)


def halves() -> np.ndarray:
    """Label 1 on the left, 2 on the right."""
    layout = np.ones((H, W), np.int32)
    layout[:, W // 2:] = 2
    return layout


def disc() -> np.ndarray:
    """A disc of label 2 in a field of label 1, off-centre: another layout than halves()."""
    yy, xx = np.mgrid[:H, :W]
    return np.where((yy - 20) ** 2 + (xx - 40) ** 2 < 14 ** 2, 2, 1).astype(np.int32)


@pytest.fixture(scope="module")
def learnt() -> LearntAppearance:
    """Red = label 1, blue = label 2, taught by one finished image of two halves."""
    la = LearntAppearance()
    layout = halves()
    la.learn("one.png", paint(layout, {1: RED, 2: BLUE}), layout)
    return la


@pytest.mark.parametrize("smoothing", [0.0, 10.0])
def test_the_suggestion_is_the_layout_of_the_learnt_colours(learnt, smoothing):
    # a new photo: other layout, a little brighter, other noise; the independent reference
    # is the layout it was painted from
    layout = disc()
    s = suggest(paint(layout, {1: RED, 2: BLUE}, seed=5, gain=1.05), learnt,
                smoothing=smoothing)
    assert s.label_ids == (1, 2) and s.images == 1
    assert np.mean(s.labels == layout) > 0.99
    assert s.confidence.shape == (H, W) and 0.5 <= s.confidence.min() <= 1.0
    assert s.confidence.mean() > 0.9


def test_smoothing_mends_what_noise_gets_wrong_pixel_by_pixel(learnt):
    # colours close to the middle between red and blue: per pixel, noise decides
    layout = disc()
    mid_red = tuple(0.6 * np.asarray(RED) + 0.4 * np.asarray(BLUE))
    mid_blue = tuple(0.4 * np.asarray(RED) + 0.6 * np.asarray(BLUE))
    img = paint(layout, {1: mid_red, 2: mid_blue}, seed=3, noise=0.12)
    raw = np.mean(suggest(img, learnt, smoothing=0).labels == layout)
    smooth = np.mean(suggest(img, learnt, smoothing=10).labels == layout)
    assert smooth > raw + 0.1 and smooth > 0.8  # measured: 0.67 per pixel, 0.84 smoothed


def test_painted_pixels_keep_their_labels_and_unlearnt_unpainted_labels_never_appear(learnt):
    layout = disc()
    img = paint(layout, {1: RED, 2: BLUE}, seed=2)
    strokes = np.zeros((H, W), np.int32)
    strokes[40:44, 2:30] = 2      # painted against the colour: label 2 on red
    strokes[2:4, 50:60] = 3       # a label the folder never learnt
    s = suggest(img, learnt, strokes)
    np.testing.assert_array_equal(s.labels[strokes > 0], strokes[strokes > 0])
    assert s.label_ids == (1, 2, 3)
    # a label neither learnt nor painted is never suggested
    assert set(np.unique(suggest(img, learnt).labels)) <= {1, 2}


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, H - 1), st.integers(0, W - 1), st.integers(1, 4)),
                min_size=1, max_size=12), st.sampled_from([None, H * W // 7]))
def test_property_every_painted_pixel_keeps_its_label(learnt, points, max_pixels):
    # at full resolution and on a working copy (max_pixels): every painted label is one of
    # the suggestion's labels and its painted pixels keep it
    img = paint(disc(), {1: RED, 2: BLUE}, seed=9)
    strokes = np.zeros((H, W), np.int32)
    for y, x, a in points:
        strokes[y, x] = a
    s = suggest(img, learnt, strokes, max_pixels=max_pixels)
    np.testing.assert_array_equal(s.labels[strokes > 0], strokes[strokes > 0])
    assert set(np.unique(strokes[strokes > 0])) <= set(s.label_ids)
    assert np.all(s.confidence[strokes > 0] == 1.0)


def test_a_thin_stroke_on_a_large_image_keeps_its_label_on_the_working_copy(learnt):
    # a 1-px green line at an odd row, painted with a label the folder never learnt, on an
    # image ~3× the working size: the working copy's strokes keep it (segapp.inputs.resolution
    # .reduce_strokes), so the reduced solve knows the label and marks the line with it
    layout = np.kron(disc(), np.ones((4, 4), np.int32))  # 192 × 256
    img = paint(layout, {1: RED, 2: BLUE}, seed=4)
    img[101, 20:120] = GREEN
    strokes = np.zeros(layout.shape, np.int32)
    strokes[101, 20:120] = 3
    s = suggest(img, learnt, strokes, max_pixels=layout.size // 10)
    assert s.probabilities.shape[0] < layout.shape[0]          # a working copy was solved
    assert 3 in s.label_ids
    small = np.asarray(s.label_ids)[s.probabilities.argmax(-1)]
    assert np.count_nonzero(small == 3) >= 100 * small.shape[1] // layout.shape[1]
    np.testing.assert_array_equal(s.labels[strokes > 0], 3)
    assert np.mean(s.labels[strokes == 0] == layout[strokes == 0]) > 0.97


def _dense_random_walker(img: np.ndarray, P: np.ndarray, strokes: np.ndarray,
                         ids: tuple[int, ...], gamma: float) -> np.ndarray:
    """The module doc's ``(L + γD) X = γ D P``, ``X = e_a`` on the painted pixels, by a dense
    solve of the unpainted rows (the independent reference)."""
    from segapp.graphs import image_graph

    g = image_graph(img)
    A = g.laplacian.toarray() + np.diag(gamma * g.degrees)
    flat = strokes.ravel()
    fixed = flat > 0
    X = P.copy()
    X[fixed] = np.eye(len(ids))[np.searchsorted(ids, flat[fixed])]
    free = ~fixed
    rhs = gamma * g.degrees[free, None] * P[free] - A[np.ix_(free, fixed)] @ X[fixed]
    X[free] = np.linalg.solve(A[np.ix_(free, free)], rhs)
    return X


@pytest.mark.parametrize("path", ["direct", "iterative"])
def test_the_smoothing_is_grady_random_walker_with_priors(learnt, monkeypatch, path):
    # the suggestion's X against a dense solve of its equation, on two linear solvers of
    # segapp.solve's one door: Jacobi-preconditioned CG (what γ = 1/10 gets) and the direct
    # factor (what a smaller γ would)
    from segapp.solve import direct, harmonic

    if path == "direct":
        if not direct.available():
            pytest.skip(direct.unavailable_reason())
        monkeypatch.setattr(harmonic, "JACOBI_SHIFT", np.inf)
    smoothing = 10.0
    img = paint(disc(), {1: RED, 2: BLUE}, seed=6, noise=0.1)
    strokes = np.zeros((H, W), np.int32)
    strokes[30:33, 5:20] = 1
    strokes[5:7, 50:60] = 3
    P = suggest(img, learnt, strokes, smoothing=0).probabilities.reshape(H * W, -1)
    s = suggest(img, learnt, strokes, smoothing=smoothing)
    ref = _dense_random_walker(img, P, strokes, s.label_ids, 1.0 / smoothing)
    X = s.probabilities.reshape(H * W, -1)
    np.testing.assert_allclose(X, ref, atol=1e-8 if path == "direct" else 2e-2)
    top = np.sort(ref, 1)
    sure = top[:, -1] - top[:, -2] > 0.05
    np.testing.assert_array_equal(X.argmax(1)[sure], ref.argmax(1)[sure])


def test_a_suggestion_can_be_cancelled_at_each_stage(learnt):
    from segapp.cancel import CancelToken
    from segapp.errors import Cancelled

    layout = np.kron(disc(), np.ones((2, 2), np.int32))
    img = paint(layout, {1: RED, 2: BLUE}, seed=1, noise=0.2)  # noisy: the smoothing iterates
    strokes = np.zeros(layout.shape, np.int32)
    strokes[10, 10:40] = 1
    stages: list[str] = []
    suggest(img, learnt, strokes, max_pixels=layout.size // 3,
            cancel=CancelToken(progress=lambda what, *_: stages.append(what)))
    assert len(stages) >= 4 and stages[-1] == "suggestion: smoothing"
    for stop_at in stages:
        seen: list[str] = []
        token = CancelToken(lambda: stop_at in seen, lambda what, *_: seen.append(what))
        with pytest.raises(Cancelled):
            suggest(img, learnt, strokes, max_pixels=layout.size // 3, cancel=token)
        assert seen[-1] == stop_at
    # polled inside the solve, too: the smoothing stage's own check passes, the next stops
    seen, polls = [], []
    token = CancelToken(lambda: polls.append(seen[-1]) or polls.count(stages[-1]) >= 2,
                        lambda what, *_: seen.append(what))
    with pytest.raises(Cancelled):
        suggest(img, learnt, strokes, cancel=token)
    assert polls.count(stages[-1]) == 2


def test_a_large_image_is_suggested_on_a_reduced_copy(learnt):
    layout = np.kron(disc(), np.ones((4, 4), np.int32))  # 192 × 256
    img = paint(layout, {1: RED, 2: BLUE}, seed=4)
    strokes = np.zeros(layout.shape, np.int32)
    strokes[100, 7] = 2
    s = suggest(img, learnt, strokes, max_pixels=layout.size // 10)
    assert s.labels.shape == layout.shape and s.probabilities.shape[0] < layout.shape[0]
    assert np.mean(s.labels == layout) > 0.97
    assert s.labels[100, 7] == 2


def test_round_trip_through_the_file(learnt, tmp_path):
    path = tmp_path / "appearance.json"
    learnt.save(path)
    back = LearntAppearance.read(path)
    assert back.label_ids == learnt.label_ids and list(back.images) == list(learnt.images)
    for i in learnt.label_ids:
        a, b = learnt.model(i), back.model(i)
        for f in ("weights", "means", "covariances"):
            np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-15)
    img = paint(disc(), {1: RED, 2: BLUE}, seed=1)
    np.testing.assert_array_equal(suggest(img, back).labels, suggest(img, learnt).labels)
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically: no temporary file left


def _good(learnt: LearntAppearance) -> dict:
    return json.loads(learnt.to_json())


def _edit(doc: dict, fn) -> str:
    fn(doc)
    return json.dumps(doc)


def _label(doc: dict) -> dict:
    return doc["images"][0]["labels"][0]


BAD = [
    ("not JSON", lambda d: "{not json", "not a readable learnt appearance"),
    ("another format", lambda d: _edit(d, lambda x: x.update(format="segapp-labels")),
     "not a segapp-appearance file"),
    ("a newer version", lambda d: _edit(d, lambda x: x.update(version=99)), "version 99"),
    ("no images", lambda d: _edit(d, lambda x: x.pop("images")), "images"),
    ("means of another size", lambda d: _edit(d, lambda x: _label(x).update(
        means=[[1.0, 2.0]] * len(_label(x)["weights"]))), "do not agree"),
    ("a NaN", lambda d: _edit(d, lambda x: _label(x)["means"][0].__setitem__(0, float("nan"))),
     "not a finite number"),
    ("a covariance that is not positive definite", lambda d: _edit(d, lambda x: _label(x)[
        "covariances"][0].__setitem__(0, [-1.0, 0.0, 0.0])), "not a readable"),
    ("negative weights", lambda d: _edit(d, lambda x: _label(x).update(
        weights=[-1.0] * len(_label(x)["weights"]))), "not a finite number"),
]


@pytest.mark.parametrize("what, make, says", BAD, ids=[b[0] for b in BAD])
def test_a_bad_file_is_refused_in_one_line(learnt, tmp_path, what, make, says):
    path = tmp_path / "appearance.json"
    path.write_text(make(_good(learnt)))
    with pytest.raises(InvalidInputError) as err:
        LearntAppearance.read(path)
    assert says in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("where", ["missing.json", "."])
def test_a_file_that_cannot_be_read_is_refused(tmp_path, where):
    with pytest.raises(InvalidInputError, match="cannot read the learnt appearance"):
        LearntAppearance.read(tmp_path / where)


def test_nothing_learnt_gives_no_suggestion():
    with pytest.raises(InvalidInputError, match="nothing learnt yet"):
        suggest(paint(disc(), {1: RED}), LearntAppearance())


def test_memory_is_bounded_by_the_last_images_and_relearning_replaces():
    la = LearntAppearance()
    layout = halves()
    for i in range(MAX_IMAGES + 5):
        la.learn(f"img{i}.png", paint(layout, {1: RED, 2: BLUE}, seed=i), layout)
    assert len(la.sources(1)) == MAX_IMAGES and la.sources(1)[0] == "img5.png"
    assert la.model(1).weights.shape[0] <= 5 * MAX_IMAGES
    np.testing.assert_allclose(la.model(1).weights.sum(), 1.0)
    la.learn("img0.png", paint(layout, {1: GREEN, 2: BLUE}), layout)  # again: now the newest
    assert list(la.images)[-1] == "img0.png" and la.sources(1)[-1] == "img0.png"
    la.learn("img0.png", paint(layout, {1: GREEN}), np.zeros((H, W), np.int32))  # no answer
    assert "img0.png" not in la.images


def test_learning_is_deterministic_and_weighs_what_was_painted():
    layout = halves()
    img = paint(layout, {1: RED, 2: BLUE})
    a, b = LearntAppearance(), LearntAppearance()
    a.learn("x", img, layout)
    b.learn("x", img, layout)
    assert a.to_json() == b.to_json()
    strokes = np.zeros((H, W), np.int32)
    strokes[10:14, 5:25] = 1
    c = LearntAppearance()
    c.learn("x", img, layout, strokes)
    assert c.images["x"][1][0] > a.images["x"][1][0]  # painted pixels count double


def test_an_answer_of_another_size_is_refused():
    with pytest.raises(InvalidInputError, match="the answer is"):
        LearntAppearance().learn("x", np.zeros((4, 4, 3)), np.ones((5, 4), np.int32))


# -- FAST-GE's carry option ----------------------------------------------------------------
def three_regions() -> np.ndarray:
    """Red left and right, blue in the middle: the right red has no stroke of its own."""
    layout = np.ones((H, W), np.int32)
    layout[:, 22:42] = 2
    return layout


def test_fastge_with_carry_keeps_painted_labels_and_forces_no_other(learnt, tmp_path):
    la = LearntAppearance(dict(learnt.images))
    g = np.full((H, W), 3, np.int32)
    la.learn("green.png", paint(g, {3: GREEN}), g)  # the folder knows a third label
    path = tmp_path / "appearance.json"
    la.save(path)
    layout = three_regions()
    img = paint(layout, {1: RED, 2: BLUE}, seed=11)
    strokes = np.zeros((H, W), np.int32)
    strokes[20:24, 4:16] = 1
    strokes[20:24, 26:38] = 2
    res = segapp.segment(img, strokes, carry=str(path))
    assert set(np.unique(res.labels)) == {1, 2}   # label 3 was not painted here: not forced
    np.testing.assert_array_equal(res.labels[strokes > 0], strokes[strokes > 0])
    assert np.mean(res.labels == layout) > 0.97
    # the carried models are what the first round learns from: another file, another prior
    plain = segapp.segment(img, strokes)
    assert set(np.unique(plain.labels)) == {1, 2}


def test_fastge_refuses_a_carry_file_it_cannot_read(tmp_path):
    img = paint(halves(), {1: RED, 2: BLUE})
    strokes = np.zeros((H, W), np.int32)
    strokes[5, 5], strokes[5, 60] = 1, 2
    with pytest.raises(InvalidInputError, match="carry must be the path of an existing file"):
        segapp.segment(img, strokes, carry=str(tmp_path / "none.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(InvalidInputError, match="not a segapp-appearance file"):
        segapp.segment(img, strokes, carry=str(bad))
