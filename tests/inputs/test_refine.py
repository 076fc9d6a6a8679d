"""Full-resolution edges (segapp.inputs.refine) against independent references: the full
Laplacian's rows, a dense harmonic solve of the band, a drawn disc's true edge; painted pixels
keep their labels (property test)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import segapp
from segapp.errors import Cancelled
from segapp.graphs.band import band_system, symmetric
from segapp.graphs.image import grid_offsets, image_graph
from segapp.inputs import refine as R
from segapp.inputs.resolution import bilinear
from segapp.inputs.rounding_rule import RoundingRule
from scenes import disc_image  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _disc_strokes(H: int, W: int) -> np.ndarray:
    s = np.zeros((H, W), np.int32)
    s[int(0.47 * H) - 1:int(0.47 * H) + 2, int(0.45 * W):int(0.6 * W)] = 2   # inside
    s[2:5, 5:W - 5] = 1                                                      # outside
    return s


def _disc_session() -> tuple[segapp.Session, np.ndarray, segapp.Segmentation]:
    """A 60 × 80 disc solved on a 600-px working copy: the session, strokes, working answer."""
    img, _ = disc_image(60, 80)
    s = _disc_strokes(60, 80)
    sess = segapp.Session(img, max_pixels=600)
    sess.background = False
    return sess, s, sess.update(s, refine=False)


def test_band_system_equals_the_full_laplacians_rows():
    img, _ = disc_image(20, 26)
    g = image_graph(img, denoise=0, connectivity=8)
    L = g.laplacian.toarray()
    rng = np.random.default_rng(1)
    n = L.shape[0]
    U = np.sort(rng.choice(n, 150, replace=False))
    K = np.setdiff1d(np.arange(n), U)
    y = rng.normal(size=(n, 2))
    feats = img.reshape(20, 26, 3)
    A, b = band_system(feats, g.sigma, g.offsets, U, lambda idx: y[idx])
    np.testing.assert_allclose(symmetric(A).toarray(), L[np.ix_(U, U)], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(b, -L[np.ix_(U, K)] @ y[K], rtol=1e-5, atol=1e-9)


def _reference_band(working: np.ndarray, shape: tuple[int, int], width: int) -> np.ndarray:
    """Brute force: a working cell is in the band when a cell within Chebyshev distance
    ``width`` has an 8-neighbour of another label; a fine pixel when its cell is."""
    h, w = working.shape
    edge = np.zeros((h, w), bool)
    for i in range(h):
        for j in range(w):
            nb = working[max(0, i - 1):i + 2, max(0, j - 1):j + 2]
            edge[i, j] = np.any(nb != working[i, j])
    cells = np.zeros((h, w), bool)
    for i, j in zip(*np.nonzero(edge)):
        cells[max(0, i - width):i + width + 1, max(0, j - width):j + width + 1] = True
    H, W = shape
    return cells[(np.arange(H) * h // H)[:, None], (np.arange(W) * w // W)[None, :]]


@pytest.mark.parametrize("denoise, split", [(0.0, False), (1.0, False), (1.0, True)])
def test_band_labels_equal_a_dense_full_resolution_harmonic_solve(monkeypatch, denoise, split):
    """On a small image forced to a small working size, the refined band equals the dense
    solve of the full-resolution graph restricted to the band, with the same boundary
    values (bilinear working embedding; the strokes' value on painted pixels). With the
    noise filter on (a noisy image), the graph is built on the band's filtered features
    (``band_features``, checked against the whole image's filter below). ``split``: the
    band cut in two halves solved apart (segapp.solve.band), as a large band is."""
    import segapp.solve.band as B
    if split and not B.cholmod.available():
        pytest.skip("the cut needs CHOLMOD")
    monkeypatch.setattr(B, "SPLIT_MIN", 0 if split else B.SPLIT_MIN)
    monkeypatch.setattr("segapp.solve.direct.foreground_threads", lambda: 2)  # cores free
    monkeypatch.setattr("segapp.solve.direct.others_load", lambda: 0.0)
    H, W = 60, 80
    img, _ = disc_image(H, W)
    if denoise:
        rng = np.random.default_rng(5)
        img = np.clip(img + rng.normal(0, 0.06, img.shape), 0, 1).astype(np.float32)
    s = _disc_strokes(H, W)
    sess = segapp.Session(img, max_pixels=600, denoise=denoise)
    sess.background = False
    coarse = sess.update(s, refine=False)
    assert coarse.refinement is None
    out = sess.refine(coarse, s)
    assert out.refinement.applied, out.refinement.reason

    # the reference, from the whole graph
    band = _reference_band(coarse.working_labels, (H, W), R.BAND_WIDTH) & (s == 0)
    feats = img
    if denoise:
        from scipy import ndimage as ndi
        cells = ndi.binary_dilation(R._label_edges(coarse.working_labels), np.ones((3, 3), bool))
        feats = R.band_features(img, True, denoise, cells, reach=1)
        assert not np.array_equal(feats, img)     # the filter ran
    g = image_graph(feats, denoise=0)
    L = g.laplacian.toarray()
    U = np.flatnonzero(band)
    K = np.flatnonzero(~band)
    Vs = np.asarray(coarse.working_eigenvectors, np.float64)
    y = bilinear(Vs, (H, W)).reshape(H * W, -1).astype(np.float64)
    ids = np.asarray(coarse.label_ids)
    codes = np.searchsorted(ids, coarse.working_labels.ravel())
    h, w = coarse.working_labels.shape
    painted_cells = np.zeros((h, w), bool)
    ys, xs = np.nonzero(s)
    painted_cells[ys * h // H, xs * w // W] = True
    flat_s = s.ravel()
    for a, i in enumerate(ids):
        y[flat_s == i] = Vs.reshape(h * w, -1)[painted_cells.ravel() & (codes == a)].mean(axis=0)
    x = np.linalg.solve(L[np.ix_(U, U)], -L[np.ix_(U, K)] @ y[K])
    rule = RoundingRule.fit(Vs.reshape(h * w, -1), codes, ids.size, ~painted_cells.ravel())
    expected = coarse.labels.ravel().copy()
    expected[U] = ids[rule(x)]
    assert out.refinement.band_pixels == U.size
    assert ("2 halves" in out.refinement.solver) == split
    np.testing.assert_array_equal(out.labels.ravel(), expected)
    assert coarse.labels is not out.labels   # the working answer is left as it was


def test_refined_edge_follows_the_true_edge():
    """A disc at 5.5× the working size: the working answer brought back has steps of the
    reduction factor; the refined one follows the drawn edge."""
    H, W = 165, 220
    img, disc = disc_image(H, W)
    s = _disc_strokes(H, W)
    res = segapp.segment(img, s, max_pixels=1200)
    assert res.refinement is not None and res.refinement.applied
    sess = segapp.Session(img, max_pixels=1200)
    sess.background = False
    coarse = sess.update(s, refine=False)
    from scipy import ndimage as ndi
    edge = ndi.binary_dilation(disc, iterations=3) & ~ndi.binary_erosion(disc, iterations=3)
    truth = np.where(disc, 2, 1)
    before = np.mean(coarse.labels[edge] == truth[edge])
    after = np.mean(res.labels[edge] == truth[edge])
    assert after >= 0.99 > before, (before, after)
    assert res.timings["refine"] > 0


def test_update_without_refine_and_the_cancelled_refinement():
    sess, s, coarse = _disc_session()
    assert sess.needs_refinement(coarse)
    with pytest.raises(Cancelled):
        sess.refine(coarse, s, cancel=lambda: True)
    done = sess.refine(coarse, s)
    assert not sess.needs_refinement(done)
    assert sess.refine(done, s) is done          # refined once only
    full = segapp.segment(sess.image, s, max_pixels=None)
    assert full.refinement is None               # nothing to refine at full resolution


@pytest.mark.parametrize("polls", [1, 2, 3, 4, 5, 6])
def test_a_cancelled_refinement_of_a_cut_band_leaves_no_thread(monkeypatch, polls):
    """Cancelled at any of its polls, a refinement whose band is cut in two raises Cancelled
    once its threads (the pattern's and the halves') have ended."""
    import itertools
    import threading

    import segapp.solve.band as B
    if not B.cholmod.available():
        pytest.skip("the cut needs CHOLMOD")
    monkeypatch.setattr(B, "SPLIT_MIN", 0)
    monkeypatch.setattr("segapp.solve.direct.foreground_threads", lambda: 2)
    monkeypatch.setattr("segapp.solve.direct.others_load", lambda: 0.0)
    sess, s, coarse = _disc_session()
    count = itertools.count(1)
    try:
        out = sess.refine(coarse, s, cancel=lambda: next(count) >= polls)
    except Cancelled:
        pass
    else:                          # fewer polls than this: it ran to its end
        assert "2 halves" in out.refinement.solver
    assert not [t for t in threading.enumerate() if t.name.startswith("segapp-band")]


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32])
def test_the_strokes_dtype_does_not_change_the_edges(dtype):
    """Session.refine reads the caller's strokes without an int64 copy: the same labels."""
    sess, s, coarse = _disc_session()
    want = sess.refine(coarse, s.astype(np.int64))
    got = sess.refine(coarse, s.astype(dtype))
    assert got.refinement.applied
    np.testing.assert_array_equal(got.labels, want.labels)


def test_the_image_noise_is_estimated_once_per_session(monkeypatch):
    """The TV filter's weight depends on the image only: one estimate per session, and the
    edges equal those refined with the estimate made afresh."""
    img, _ = disc_image(60, 80)
    img = np.clip(img + np.random.default_rng(3).normal(0, 0.04, img.shape), 0, 1)
    s = _disc_strokes(60, 80)
    sess = segapp.Session(img, max_pixels=600)
    sess.background = False
    calls = []
    original = R._noise
    monkeypatch.setattr(R, "_noise", lambda f: calls.append(1) or original(f))
    coarse = sess.update(s, refine=False)
    first = sess.refine(coarse, s)
    s2 = s.copy()
    s2[40:43, 10:30] = 1
    second = sess.refine(sess.update(s2, refine=False), s2)
    assert len(calls) == 1
    fresh = R.refine(coarse, sess.image, s, sess.settings)
    np.testing.assert_array_equal(first.labels, fresh.labels)
    assert len(calls) == 2 and second.refinement.applied


def test_other_methods_are_not_refined():
    img, _ = disc_image(60, 80)
    s = _disc_strokes(60, 80)
    res = segapp.segment(img, s, method="ncut", max_pixels=600)
    assert res.refinement is None


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(0, 55), st.integers(0, 75),
                          st.integers(1, 12), st.integers(1, 3), st.booleans()),
                min_size=2, max_size=7))
def test_painted_pixels_keep_their_labels(strokes):
    """Whatever the strokes: every painted label is in the refined answer and every painted
    pixel keeps its label (the user's trust)."""
    H, W = 60, 80
    img, _ = disc_image(H, W, seed=3)
    s = np.zeros((H, W), np.int32)
    for label, y, x, length, width, horizontal in strokes:
        if horizontal:
            s[y:y + width, x:x + length] = label
        else:
            s[y:y + length, x:x + width] = label
    if np.unique(s[s > 0]).size < 2:
        s[0, 0], s[-1, -1] = 1, 2
    res = segapp.segment(img, s, max_pixels=500)
    painted = s > 0
    np.testing.assert_array_equal(res.labels[painted], s[painted])
    assert set(np.unique(s[painted])) <= set(np.unique(res.labels))


@pytest.mark.parametrize("noise", [0.03, 0.1])
def test_band_features_are_the_whole_images_filter_on_the_band(noise):
    """The total-variation filter on the band's domain only, against denoise_features on
    the whole image (the full-resolution graph's features): within a tenth of the filter's
    own effect on the band (the domain's edge and its own stopping point differ), and the
    features outside the domain unfiltered."""
    from scipy import ndimage as ndi

    from segapp.graphs.image import denoise_features, image_features
    from segapp.inputs.resolution import nearest
    H, W, h, w = 300, 400, 75, 100
    img, disc = disc_image(H, W)
    rng = np.random.default_rng(0)
    img = np.clip(img + rng.normal(0, noise, img.shape), 0, 1).astype(np.float32)
    small = nearest(disc, (h, w))
    cells = ndi.binary_dilation(R._label_edges(small), np.ones((3, 3), bool))
    band = nearest(cells, (H, W))
    f = image_features(img)
    whole = denoise_features(f, 1.0)
    got = R.band_features(img, True, 1.0, cells, reach=1)
    effect = np.abs(whole[band] - f[band]).mean()
    assert effect > 0.02
    assert np.abs(got[band] - whole[band]).mean() < 0.1 * effect
    domain = np.zeros(H * W, bool)
    domain[R.tv_domain(cells, (H, W), 1)] = True
    domain = domain.reshape(H, W)
    assert (ndi.binary_dilation(band, np.ones((3, 3), bool), iterations=1 + R.TV_MARGIN)
            <= domain).all()                       # band ⊕ (reach + margin) is covered
    np.testing.assert_array_equal(got[~domain], f[~domain])


def test_the_refinements_features_are_band_features_where_it_reads_them():
    """The refinement's features fill only the filter's domain and σ's rows (no copy of the
    whole image): there they are band_features'."""
    from scipy import ndimage as ndi

    from segapp.inputs.resolution import nearest
    H, W, h, w = 120, 160, 30, 40
    img, disc = disc_image(H, W)
    img = np.clip(img + np.random.default_rng(0).normal(0, 0.05, img.shape), 0, 1)
    cells = ndi.binary_dilation(R._label_edges(nearest(disc, (h, w))), np.ones((3, 3), bool))
    rows = np.array([0, 7, 8, 100])
    whole = R.band_features(img, True, 1.0, cells, reach=1)
    part = R.band_features(img, True, 1.0, cells, reach=1, rows=rows)
    domain = R.tv_domain(cells, (H, W), 1)
    np.testing.assert_array_equal(part.reshape(H * W, -1)[domain],
                                  whole.reshape(H * W, -1)[domain])
    np.testing.assert_array_equal(part[rows], whole[rows])


def test_an_error_building_the_pattern_reaches_the_caller(monkeypatch):
    """The band's pattern is built in another thread: its error is raised in the caller's."""
    sess, s, coarse = _disc_session()

    class Broken:
        def __init__(self, *args):
            raise MemoryError("no room for the band")

    monkeypatch.setattr(R, "BandGraph", Broken)
    with pytest.raises(MemoryError, match="no room"):
        sess.refine(coarse, s)


@pytest.mark.parametrize("shape, small", [((37, 53), (9, 14)), ((40, 40), (40, 40)),
                                          ((61, 17), (20, 3))])
def test_painted_cells_against_loops(shape, small):
    rng = np.random.default_rng(7)
    s = np.where(rng.random(shape) < 0.03, rng.integers(1, 4, shape), 0)
    (H, W), (h, w) = shape, small
    expected = np.zeros(small, bool)
    for y in range(H):
        for x in range(W):
            if s[y, x]:
                expected[y * h // H, x * w // W] = True
    np.testing.assert_array_equal(R._painted_cells(s, small), expected)


def test_absorbed_cells_keep_their_label_and_stay_out_of_the_rule():
    """Cells an answer took from the region around them (FAST-GE's islands) follow no rule
    of their embedding: the refinement neither counts them against the rule nor gives them
    back to the label their embedding says, and refines the rest of the band as before."""
    sess, s, coarse = _disc_session()
    plain = sess.refine(coarse, s)
    small = np.array(coarse.working_labels)
    h, w = small.shape
    inside = np.argwhere(small == 2)
    # a patch of the disc's edge cells (unpainted) handed to the outside label
    r0, c0 = inside[:, 0].min(), inside[:, 1].min()
    patch = np.zeros((h, w), bool)
    patch[r0:r0 + 3, :] = small[r0:r0 + 3, :] == 2
    assert patch.any()
    absorbed_small = small.copy()
    absorbed_small[patch] = 1
    taken = R._copy(coarse)
    taken.working_labels = absorbed_small
    taken.absorbed = patch.ravel()
    H, W = s.shape
    yi = np.minimum(np.arange(H) * h // H, h - 1)
    xi = np.minimum(np.arange(W) * w // W, w - 1)
    full_patch = patch[yi[:, None], xi[None, :]] & (s == 0)
    taken.labels = np.where(full_patch, 1, np.asarray(coarse.labels))
    done = sess.refine(taken, s)
    assert done.refinement.applied, done.refinement.reason
    assert (done.labels[full_patch] == 1).all()
    elsewhere = ~full_patch
    assert np.mean(done.labels[elsewhere] == plain.labels[elsewhere]) > 0.995
