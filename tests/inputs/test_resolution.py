"""segapp.inputs.resolution: strokes on the working grid (every painted label survives, majority rule,
confidences follow their labels), the working copy's anti-aliased reduction and the working shape."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.inputs.resolution import (antialiased, reduce_image, reduce_map, reduce_strokes,
                                      working_shape)


def _blocks(H, W, h, w):
    """Fine pixel → coarse pixel, by the rule the module documents."""
    return (np.arange(H)[:, None] * h // H), (np.arange(W)[None, :] * w // W)


@st.composite
def label_maps(draw):
    H = draw(st.integers(2, 60))
    W = draw(st.integers(2, 60))
    k = draw(st.integers(1, 9))
    density = draw(st.sampled_from([0.002, 0.02, 0.2, 0.8]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    s = np.where(rng.random((H, W)) < density, rng.integers(1, k + 1, (H, W)), 0)
    if draw(st.booleans()):            # thin lines, as strokes are
        for lab in range(1, k + 1):
            r = rng.integers(0, H)
            s[r, rng.integers(0, W):] = lab
    max_pixels = draw(st.integers(4, H * W))
    return s, max_pixels


@settings(max_examples=300, deadline=None)
@given(label_maps())
def test_every_painted_label_survives_the_reduction(case):
    s, max_pixels = case
    shape = working_shape(s.shape, max_pixels)
    labels = set(np.unique(s)) - {0}
    if len(labels) > shape[0] * shape[1]:
        return                                 # cannot fit: refused (tested below)
    small = reduce_map(s, shape)
    assert small.shape == shape
    assert set(np.unique(small)) - {0} == labels
    # majority rule: a coarse pixel keeps a label that has at least as many fine pixels in its
    # block as any other — unless it was handed to a label left without any coarse pixel
    by, bx = _blocks(*s.shape, *shape)
    cells = by * shape[1] + bx
    moved = 0
    for c in np.unique(cells[s > 0]):
        vals, counts = np.unique(s[(cells == c) & (s > 0)], return_counts=True)
        got = small.flat[c]
        if got not in vals[counts == counts.max()]:
            moved += 1
    assert moved <= len(labels)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["uint8", "int16", "int32", "int64", "uint64", "bool"]),
       st.sampled_from([3, 300, 70000]), st.integers(0, 200), st.integers(0, 2**32 - 1))
def test_label_ids_and_their_index_are_numpys_unique(dtype, top, size, seed):
    """The count-based ``np.unique(return_inverse=True)`` of the painted ids, against NumPy's
    own (ids past its range and negative values take NumPy's)."""
    from segapp.inputs.resolution import _ids_and_index

    rng = np.random.default_rng(seed)
    top = 2 if dtype == "bool" else min(top, np.iinfo(dtype).max)
    v = rng.integers(-1 if dtype.startswith("int") else 0, top, size).astype(dtype)
    ids, index = _ids_and_index(v)
    ref_ids, ref_index = np.unique(v, return_inverse=True)
    assert ids.dtype == ref_ids.dtype
    np.testing.assert_array_equal(ids, ref_ids)
    np.testing.assert_array_equal(index, ref_index)


def test_majority_and_ties_and_unpainted():
    s = np.zeros((4, 4), int)
    s[0, 0] = 1
    s[0, 1] = s[1, 0] = 2                     # block (0, 0): 2 has the majority …
    s[2, 2] = 1                               # … and 1 still has a block of its own
    s[2, 3] = 3                               # tie in block (1, 1): 1 and 3 → label 1 …
    small = reduce_map(s, (2, 2))
    assert small[0, 0] == 2 and small[1, 1] in (1, 3)
    assert set(np.unique(small)) == {0, 1, 2, 3}        # … and 3 moves next to it
    assert small[0, 1] == 0 or small[0, 1] in (1, 3)
    assert np.all(reduce_map(np.zeros((6, 6), int), (3, 3)) == 0)


def test_a_label_without_a_block_takes_its_best_block_when_another_label_can_spare_it():
    s = np.zeros((4, 8), int)
    s[0:2, 0:4] = 1                          # label 1 dominates blocks (0, 0) and (0, 1)
    s[0, 0] = 2                              # label 2 only in block (0, 0)
    small = reduce_map(s, (2, 4))
    assert small[0, 0] == 2 and small[0, 1] == 1


def test_confidences_follow_their_labels():
    s = np.zeros((4, 4), int)
    q = np.zeros((4, 4))
    s[0, 0], q[0, 0] = 1, 0.2
    s[0, 1], q[0, 1] = 1, 0.4
    s[3, 3], q[3, 3] = 2, 0.9
    s[3, 2], q[3, 2] = 1, 0.1                # minority in block (1, 1): its confidence ignored
    small, conf = reduce_strokes(s, (2, 2), q)
    assert small[0, 0] == 1 and conf[0, 0] == pytest.approx(0.3)
    assert small[1, 1] in (1, 2)
    assert conf[1, 1] == pytest.approx(0.9 if small[1, 1] == 2 else 0.1)
    assert conf[small == 0].sum() == 0


def test_more_labels_than_coarse_pixels_is_refused():
    from segapp.errors import InvalidInputError
    s = np.arange(1, 10).reshape(3, 3)
    with pytest.raises(InvalidInputError, match="9 labels do not fit"):
        reduce_map(s, (2, 2))


@pytest.mark.parametrize("shape, max_pixels", [((4000, 3000), 500_000), ((10, 10), None),
                                               ((3, 1000), 100), ((100, 100), 10_000)])
def test_working_shape_keeps_the_aspect_and_the_budget(shape, max_pixels):
    h, w = working_shape(shape, max_pixels)
    if max_pixels is None or shape[0] * shape[1] <= max_pixels:
        assert (h, w) == shape
    else:
        assert h * w <= max_pixels and h >= 2 and w >= 2
        assert abs(h / w - shape[0] / shape[1]) < 0.2 * shape[0] / shape[1] + 2 / w


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 60), st.integers(1, 60), st.integers(1, 60),
       st.sampled_from([(), (3,), (1,)]), st.integers(0, 2**32 - 1))
def test_the_working_copy_is_scikit_images_anti_aliased_resize(H, W, h, w, channels, seed):
    """The independent reference: skimage.transform.resize(anti_aliasing=True) itself."""
    from skimage.transform import resize
    h, w = min(h, H), min(w, W)
    A = np.random.default_rng(seed).random((H, W) + channels).astype(np.float32)
    got = antialiased(A, (h, w))
    assert got.shape == (h, w) + channels and got.dtype == np.float32
    ref = resize(A, (h, w) + channels, anti_aliasing=True, preserve_range=True)
    np.testing.assert_allclose(got, ref, atol=2e-6)


def test_the_working_copy_keeps_constants_and_the_value_range():
    flat = np.full((37, 53, 3), 0.3, np.float32)
    np.testing.assert_allclose(antialiased(flat, (11, 17)), 0.3, atol=1e-6)
    rng = np.random.default_rng(2)
    img = rng.random((301, 457, 3)).astype(np.float32)
    img[:, :40] = 1.0                        # a saturated band: rounding must not leave [0, 1]
    shape = working_shape(img.shape[:2], 10_000)
    small = reduce_image(img, shape)
    assert small.shape == shape + (3,) and small.dtype == np.float32
    assert small.min() >= 0.0 and small.max() <= 1.0
    np.testing.assert_allclose(small.mean(axis=(0, 1)), img.mean(axis=(0, 1)), atol=2e-3)
    assert reduce_image(img, img.shape[:2]) is img


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 30), w=st.integers(1, 30), density=st.floats(0, 1),
       dtype=st.sampled_from([np.uint8, np.int8, np.int32, np.int64]),
       transposed=st.booleans(), seed=st.integers(0, 2**16))
def test_painted_pixels_are_nonzeros_order_whatever_the_layout(h, w, density, dtype,
                                                                transposed, seed):
    from segapp.inputs.resolution import painted_pixels

    rng = np.random.default_rng(seed)
    labels = (rng.random((h, w)) < density) * rng.integers(1, 100, (h, w))
    labels = labels.astype(dtype)
    if transposed:
        labels = labels.T   # not C-contiguous
    got, want = painted_pixels(labels), np.nonzero(labels)
    assert all(np.array_equal(g, x) for g, x in zip(got, want))


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 23), w=st.integers(1, 29),
       dtype=st.sampled_from(["uint8", "int16", "uint16", "int32", "int64", "bool"]),
       density=st.sampled_from([0.0, 0.01, 0.3, 1.0]), seed=st.integers(0, 2**16))
def test_painted_pixels_are_numpys_nonzero(h, w, dtype, density, seed):
    """The word-at-a-time search finds exactly np.nonzero's pixels, in its order, for every
    integer width and any size (the tail past the last whole word included)."""
    from segapp.inputs.resolution import painted_pixels

    rng = np.random.default_rng(seed)
    s = np.where(rng.random((h, w)) < density, rng.integers(1, 120, (h, w)), 0).astype(dtype)
    for got, want in zip(painted_pixels(s), np.nonzero(s)):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 12), w=st.integers(1, 12), fy=st.integers(1, 5), fx=st.integers(1, 5),
       dtype=st.sampled_from([np.uint8, np.int32, np.int64]), seed=st.integers(0, 2**32 - 1))
def test_enlarged_labels_are_made_when_read_as_a_loop_makes_them(h, w, fy, fx, dtype, seed):
    """A working answer brought back: its labels are deferred (shape and bytes known at
    once), made on the first read as nearest neighbour of the working labels with every
    painted pixel's own id (a loop over the fine pixels, the module's cell rule), and a
    change to the caller's strokes after the answer does not reach them."""
    from segapp.inputs.resolution import enlarge_result
    from segapp.result import Segmentation
    rng = np.random.default_rng(seed)
    H, W = h * fy + int(rng.integers(0, fy)), w * fx + int(rng.integers(0, fx))
    if (H, W) == (h, w):
        return
    small = rng.integers(1, 5, (h, w)).astype(np.int32)
    s = np.where(rng.random((H, W)) < 0.2, rng.integers(1, 5, (H, W)), 0).astype(dtype)
    seg = enlarge_result(Segmentation(small, (1, 2, 3, 4), np.zeros((h, w, 1), np.float32),
                                      np.zeros(1)), s)
    assert not seg.labels_made
    assert seg.shape == (H, W) and seg.labels_nbytes == H * W * 4
    expected = np.empty((H, W), np.int32)
    for y in range(H):
        for x in range(W):
            expected[y, x] = s[y, x] if s[y, x] else small[y * h // H, x * w // W]
    copy = seg.labels_copy()
    s[:] = 9                                  # the caller paints on
    assert not seg.labels_made                # a copy to change leaves them deferred
    np.testing.assert_array_equal(copy, expected)
    np.testing.assert_array_equal(seg.labels, expected)
    assert seg.labels_made and seg.labels.dtype == np.int32
    assert seg.working_labels is small


def _mapping_of(a: np.ndarray) -> tuple[set[str], int]:
    """(VmFlags, Rss in kB) of the memory map holding ``a``'s data, from /proc/self/smaps."""
    addr = a.__array_interface__["data"][0]
    lines = open("/proc/self/smaps").read().splitlines()
    for i, line in enumerate(lines):
        head = line.split()[0] if line else ""
        if "-" in head and not line[0].isupper():
            lo, hi = (int(x, 16) for x in head.split("-"))
            if lo <= addr < hi:
                fields = dict(m.split(":", 1) for m in lines[i + 1:i + 30] if ":" in m)
                return set(fields["VmFlags"].split()), int(fields["Rss"].split()[0])
    raise AssertionError("no mapping holds the array")


def test_large_arrays_written_in_part_take_small_pages():
    """The refinement's full-size arrays come in 4 KiB pages, never transparent huge pages:
    written on every fifth row (σ's statistic rows), a 72 MB feature array holds about a
    fifth of its size, not all of it (with huge pages each row's write brings in 2 MiB)."""
    import mmap
    import os

    from segapp.inputs.resolution import SMALL_PAGES_BYTES, nearest, small_pages
    a = small_pages((2000, 3000, 3), np.float32)
    assert a.shape == (2000, 3000, 3) and a.dtype == np.float32 and a.flags.writeable
    a[::5] = 1.0
    assert a[::5].all() and not a[1::5].any()
    if hasattr(mmap, "MADV_NOHUGEPAGE") and os.path.exists("/proc/self/smaps"):
        flags, rss = _mapping_of(a)
        assert "nh" in flags                        # MADV_NOHUGEPAGE
        assert rss < 0.3 * a.nbytes / 1024
    small = small_pages((10, 10), np.int64)         # below SMALL_PAGES_BYTES: np.empty
    assert small.nbytes < SMALL_PAGES_BYTES and small.flags.owndata
    # nearest builds its (large) output there and fills it whole
    labels = np.arange(12, dtype=np.int32).reshape(3, 4)
    up = nearest(labels, (3000, 2000))
    assert up.flags.writeable and up[0, 0] == 0 and up[-1, -1] == 11
    assert np.array_equal(up[::1000, ::500], labels)
