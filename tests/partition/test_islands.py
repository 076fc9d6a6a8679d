"""absorb_islands against a brute-force reference on random label maps."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segapp.partition.islands import absorb_islands


def _components(mask: np.ndarray) -> list[list[tuple[int, int]]]:
    """4-connected components by flood fill (no scipy)."""
    seen = np.zeros(mask.shape, bool)
    out = []
    for start in zip(*np.nonzero(mask)):
        if seen[start]:
            continue
        stack, comp = [start], []
        seen[start] = True
        while stack:
            r, c = stack.pop()
            comp.append((r, c))
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                q = (r + dr, c + dc)
                if 0 <= q[0] < mask.shape[0] and 0 <= q[1] < mask.shape[1] \
                        and mask[q] and not seen[q]:
                    seen[q] = True
                    stack.append(q)
        out.append(comp)
    return out


def _reference(L, sets, ids, max_pixels, post=None, keep=1.0):
    h, w = L.shape
    drop = np.zeros(L.shape, bool)
    for a, lid in enumerate(ids):
        painted = {divmod(int(i), w) for i in sets[a]}
        for comp in _components(L == lid):
            kept = post is not None and np.mean([post[r * w + c, a] for r, c in comp]) >= keep
            if len(comp) <= max_pixels and not painted.intersection(comp) and not kept:
                for p in comp:
                    drop[p] = True
    if not drop.any() or drop.all():
        return L
    keep = np.argwhere(~drop)
    out = L.copy()
    for r, c in np.argwhere(drop):
        d = ((keep - (r, c)) ** 2).sum(1)
        near = keep[d == d.min()]
        out[r, c] = L[tuple(near[0])] if len({L[tuple(q)] for q in near}) == 1 else -1
    return out


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4), max_pixels=st.integers(1, 12),
       keep=st.sampled_from([None, 0.3, 0.6]))
def test_matches_brute_force(seed, k, max_pixels, keep):
    rng = np.random.default_rng(seed)
    L = rng.integers(1, k + 1, size=(9, 11)).astype(np.int32)
    ids = list(range(1, k + 1))
    sets = []
    for lid in ids:
        where = np.flatnonzero(L.ravel() == lid)
        if where.size == 0:
            L.ravel()[rng.integers(L.size)] = lid
            where = np.flatnonzero(L.ravel() == lid)
        sets.append(rng.choice(where, size=1))
    post = None
    if keep is not None:
        post = rng.random((L.size, k))
        post /= post.sum(1, keepdims=True)
    got = absorb_islands(L.ravel(), L.shape, sets, ids, max_pixels, post,
                         2.0 if keep is None else keep)[0].reshape(L.shape)
    ref = _reference(L, sets, ids, max_pixels, post, 2.0 if keep is None else keep)
    sure = ref >= 0                       # equidistant nearest pixels of two labels: either
    assert np.array_equal(got[sure], ref[sure])
    for a, lid in enumerate(ids):         # painted pixels keep their label
        assert (got.ravel()[sets[a]] == lid).all()


def test_large_far_region_kept_small_one_absorbed():
    L = np.ones((40, 40), np.int32)
    L[5:25, 5:25] = 2          # 400 px, no stroke of label 2 in it
    L[30:32, 30:32] = 2        # 4 px
    L[35:38, 2:5] = 2          # 9 px, painted
    sets = [np.array([0]), np.array([35 * 40 + 2])]
    out, absorbed = absorb_islands(L.ravel(), L.shape, sets, [1, 2], 50)
    out = out.reshape(L.shape)
    assert np.array_equal(absorbed.reshape(L.shape), (L == 2) & (out == 1))
    assert (out[5:25, 5:25] == 2).all()
    assert (out[30:32, 30:32] == 1).all()
    assert (out[35:38, 2:5] == 2).all()


@pytest.mark.parametrize("max_pixels", [0, 1000])
def test_nothing_to_absorb_returns_input(max_pixels):
    L = np.array([1, 1, 2, 2], np.int32)
    out, absorbed = absorb_islands(L, (2, 2), [np.array([0]), np.array([3])], [1, 2],
                                   max_pixels)
    assert absorbed is None
    assert np.array_equal(out, L)
