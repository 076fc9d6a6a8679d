"""A result is made ready to show without enlarging a working copy's eigenvectors."""

from __future__ import annotations

import threading
import time

import numpy as np

import segapp
from segapp.live import make_result
from scenes import noisy_image  # noqa: E402  (tests/ is on sys.path)


def _big_result():
    img = noisy_image(1, (120, 160))[0]
    s = np.zeros(img.shape[:2], np.int32)
    s[20, 10:60], s[100, 100:150], s[60, 70:90] = 1, 2, 3
    session = segapp.Session(img, max_pixels=5000)   # a working copy of ~5K px
    return session.update(s)


def test_make_result_leaves_the_full_size_vectors_for_later():
    seg = _big_result()
    assert callable(seg.__dict__["_eigenvectors"])          # lazy: a working copy's
    result = make_result(seg, 0.0)
    assert callable(seg.__dict__["_eigenvectors"])          # still not enlarged
    small = np.asarray(seg.working_eigenvectors)
    assert result.n_vectors == small.shape[-1] == len(result.vmax) > 0
    assert result.thumbnail_vectors.shape == small.shape
    np.asarray(seg.eigenvectors)   # a full-size heat map or an export reads them
    full = seg.__dict__["_eigenvectors"]
    assert isinstance(full, np.ndarray) and full.shape == (*seg.labels.shape, result.n_vectors)
    assert result.nbytes == np.asarray(seg.labels).nbytes + full.nbytes


def test_readers_in_several_threads_share_one_enlargement():
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.2)
        return np.zeros((4, 4, 1), np.float32)

    seg = _big_result()
    seg.eigenvectors = slow
    got = []
    threads = [threading.Thread(target=lambda: got.append(seg.eigenvectors)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(g is got[0] for g in got)
    import pickle
    assert pickle.loads(pickle.dumps(seg)).eigenvectors.shape == (4, 4, 1)   # no lock pickled


def test_the_sharp_answer_takes_the_working_answers_colour_ranges_and_a_preview_no_search(
        monkeypatch):
    """Issue 28: the working answer (posted hatched) and its refined edges share the working
    copy's vectors: their colour ranges are computed once; a preview is not searched for
    unplaced labels (the answer that replaces it is)."""
    from segapp.io import render
    from segapp.live import results

    seg = _big_result()
    calls = []
    real = render.robust_vmax
    monkeypatch.setattr(results.render, "robust_vmax", lambda v: calls.append(1) or real(v))
    working = make_result(seg, 0.0, preview=True)
    assert working.unplaced == () and len(calls) == working.n_vectors > 0
    from segapp.inputs.refine import _copy   # a refined answer: a copy sharing the vectors
    refined = _copy(seg)
    calls.clear()
    result = make_result(refined, 0.0, like=working)
    assert calls == [] and result.vmax == working.vmax and not result.preview
    other = make_result(_big_result(), 0.0, like=working)    # other vectors: computed
    assert len(calls) == other.n_vectors


def test_counting_and_drawing_a_working_answer_make_no_full_size_labels():
    """The app keeps and draws a working answer (hatched) without making its full-size
    labels: the cache counts their bytes from their shape, the overlay is drawn from the
    working labels; once they are made (its edges' refinement reads them), those are drawn."""
    img = noisy_image(1, (120, 160))[0]
    s = np.zeros(img.shape[:2], np.int32)
    s[20, 10:60], s[100, 100:150] = 1, 2
    seg = segapp.Session(img, max_pixels=5000).update(s, refine=False)
    working = make_result(seg, 0.0, preview=True)
    assert working.nbytes == 120 * 160 * 4 * (1 + working.n_vectors)
    assert working.screen_labels is seg.working_labels
    final = make_result(seg, 0.0)              # not hatched: the full-size labels
    assert not seg.labels_made
    assert final.screen_labels.shape == (120, 160) and seg.labels_made
    assert working.screen_labels is seg.labels
    again = segapp.Session(img, max_pixels=5000).update(s, refine=False)
    assert not again.labels_made               # pickled (process pools): made on the way
    np.testing.assert_array_equal(pickle_round_trip(again).labels, seg.labels)


def pickle_round_trip(obj):
    import pickle
    return pickle.loads(pickle.dumps(obj))
