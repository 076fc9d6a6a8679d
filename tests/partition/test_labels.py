"""segapp.partition.labels: label matching against every permutation; stroke agreement and
clamping by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segapp.partition.labels import clamp_strokes, match_labels, stroke_agreement

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(2, 4), labels=st.integers(2, 4))
def test_match_labels_maximises_the_stroke_overlap(seed, k, labels):
    rng = np.random.default_rng(seed)
    n = 40
    codes = rng.integers(0, k, n)
    pix = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, 20), labels - 1, replace=False))
    sets = np.split(pix[:20], cuts)
    ids = tuple(sorted(rng.choice(np.arange(1, 10), labels, replace=False).tolist()))
    out = match_labels(codes, sets, ids, k)
    overlap = np.array([[np.sum(codes[S] == c) for S in sets] for c in range(k)])
    # brute force: the best one-to-one assignment of min(k, labels) clusters to labels
    best = max(sum(overlap[c, a] for c, a in zip(cs, ls))
               for cs in itertools.permutations(range(k), min(k, labels))
               for ls in itertools.permutations(range(labels), min(k, labels)))
    lut = {c: out[codes == c][0] for c in np.unique(codes)}
    assert all(np.all(out[codes == c] == v) for c, v in lut.items())     # a cluster, one label
    matched = {c: ids.index(v) for c, v in lut.items()}
    if k <= labels:
        assert len(set(matched.values())) == len(matched)                # one-to-one
        assert sum(overlap[c, a] for c, a in matched.items()) == best
    assert set(out) <= set(ids)


def test_stroke_agreement_and_clamping_by_hand():
    codes = np.array([0, 0, 1, 1, 1, 0])
    sets = [np.array([0, 2]), np.array([3, 4, 5]), np.array([], int)]
    np.testing.assert_allclose(stroke_agreement(codes, sets), [0.5, 2 / 3, 1.0])
    labels = np.array([7, 7, 9, 9, 9, 7])
    np.testing.assert_array_equal(clamp_strokes(labels, sets[:2], (7, 9)), [7, 7, 7, 9, 9, 9])
