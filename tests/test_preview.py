"""Progressive results (issue 15): a coarse preview before the full solve on big images."""

from __future__ import annotations

import numpy as np

import segapp
from segapp import io, samples
from segapp.session import PREVIEW_PIXELS


def _coffee():
    img = io.read_image(samples.sample_path("coffee"))
    s = io.read_scribbles(samples.sample_scribbles_path("coffee"), img.shape[:2])
    return img, s


def test_preview_comes_first_keeps_every_stroke_and_resembles_the_full_result():
    img, s = _coffee()
    assert s.size > 2 * PREVIEW_PIXELS
    sess = segapp.Session(img)
    seen = []
    full = sess.update(s, preview=seen.append)
    assert len(seen) == 1
    coarse = seen[0]
    assert coarse.preview and not full.preview
    assert coarse.labels.shape == s.shape and coarse.eigenvectors.shape == s.shape + (0,)
    assert np.all(coarse.labels[s > 0] == s[s > 0])          # painted pixels keep their label
    assert set(np.unique(coarse.labels)) == set(full.label_ids)
    assert np.mean(coarse.labels == full.labels) > 0.85       # a coarse view of the same answer
    # the next edit is answered from the factor prepared after this one: no preview then
    # (issue 21/22: a preview that then moves misleads, and the answer comes as fast)
    s2 = s.copy()
    s2[5:8, 5:60] = s[s > 0].min()
    sess.update(s2, preview=seen.append)
    assert len(seen) == 1
    # iteratively every edit gets its preview, the copy built once per session
    sess = segapp.Session(img, linear_solver="iterative")
    sess.update(s, preview=seen.append)
    method = sess._preview_method
    sess.update(s2, preview=seen.append)
    assert len(seen) == 3 and sess._preview_method is method


def test_no_preview_for_small_images_or_without_a_callback():
    img, s = _coffee()
    small, ss = img[::3, ::3], s[::3, ::3]
    seen = []
    segapp.Session(small).update(ss, preview=seen.append)
    assert seen == []
    sess = segapp.Session(img)
    sess.update(s)
    assert sess._preview_method is None
