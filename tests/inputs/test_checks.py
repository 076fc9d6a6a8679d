"""The one label-map validator (:func:`segapp.inputs.checks.check_label_map`) and the entries
that use it: each refuses the same bad maps with the same error type."""

from __future__ import annotations

import numpy as np
import pytest

from segapp.editing import AnnotationModel
from segapp.errors import InvalidInputError
from segapp.exports import indexed_png
from segapp.inputs.checks import MAX_LIBRARY_LABEL, check_label_map
from segapp.io.render import MAX_LABEL_ID, label_layer


def test_check_label_map_reads_ints_bools_and_whole_floats():
    want = np.array([[0, 1], [2, 0]])
    for given in (want, want.astype(np.uint8), want.astype(np.float32)):
        got = check_label_map(given, (2, 2))
        assert got.dtype == np.int64 and np.array_equal(got, want)
    assert np.array_equal(check_label_map(want > 0, None), (want > 0).astype(int))


@pytest.mark.parametrize("labels, shape, max_label, message", [
    (np.zeros((2, 3)), (3, 2), MAX_LIBRARY_LABEL, "3×2 but the image is 2×3"),
    (np.zeros(6), None, MAX_LIBRARY_LABEL, r"\(H, W\)"),
    (np.array([[0, -1]]), None, MAX_LIBRARY_LABEL, "negative"),
    (np.array([[0, 0.5]]), None, MAX_LIBRARY_LABEL, "integer"),
    (np.array([[0, np.nan]]), None, MAX_LIBRARY_LABEL, "integer"),
    (np.array([[0, 256]]), None, 255, "label id 256 is too large"),
    (np.array([[0, 2**31]]), None, MAX_LIBRARY_LABEL, "too large"),
    (None, (2, 2), MAX_LIBRARY_LABEL, "NoneType"),
    ("map.png", (2, 2), MAX_LIBRARY_LABEL, "str"),
])
def test_check_label_map_refuses(labels, shape, max_label, message):
    with pytest.raises(InvalidInputError, match=message):
        check_label_map(labels, shape, max_label=max_label)


BAD_MAPS = [np.full((4, 5), -1), np.full((4, 5), 0.5), np.full((4, 5), MAX_LABEL_ID + 1)]
ENTRIES = [
    ("AnnotationModel.set_scribbles", lambda m: AnnotationModel((4, 5)).set_scribbles(m)),
    ("AnnotationModel.merge_scribbles", lambda m: AnnotationModel((4, 5)).merge_scribbles(m)),
    ("indexed_png", indexed_png),
]


@pytest.mark.parametrize("call", [c[1] for c in ENTRIES], ids=[c[0] for c in ENTRIES])
@pytest.mark.parametrize("bad", BAD_MAPS, ids=["negative", "fractional", "above 255"])
def test_every_8_bit_entry_refuses_a_bad_map_with_invalid_input_error(call, bad):
    with pytest.raises(InvalidInputError) as info:
        call(bad)
    assert type(info.value) is InvalidInputError


@pytest.mark.parametrize("bad", BAD_MAPS[:2], ids=["negative", "fractional"])
def test_rendering_refuses_a_bad_map_with_invalid_input_error(bad):
    with pytest.raises(InvalidInputError):
        label_layer(bad)
