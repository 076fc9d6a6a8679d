"""segapp.partition.rounding through a session: the rounding's history (stable refinement)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _bands() -> tuple[np.ndarray, np.ndarray]:
    """Three vertical bands of equal contrast (0, 0.5, 1) and one stroke in each outer band:
    the middle band is a near-tie between the two labels."""
    img = np.zeros((24, 36, 3), np.float32)
    img[:, 12:24] = 0.5
    img[:, 24:] = 1.0
    s = np.zeros((24, 36), np.int32)
    s[10:14, 3:8] = 1
    s[10:14, 28:33] = 2
    return img, s


def test_an_erased_stroke_gives_the_history_free_answer():
    """With ``stable_refinement``, after an erase the user asks to go back: no history (the
    middle band painted 1, then erased, gets what a fresh solve gives)."""
    import segapp
    img, s = _bands()
    session = segapp.Session(img, stable_refinement=True)
    painted = s.copy()
    painted[10:14, 16:20] = 1
    assert np.all(session.update(painted).labels[:, 12:24] == 1)
    np.testing.assert_array_equal(session.update(s).labels, segapp.segment(img, s).labels)


def test_balance_reaches_the_first_two_label_sweep_only(monkeypatch):
    """``balance`` (on by default) reaches the two-label sweep; the sweep weighs balance only
    without a previous answer: a session's first answer and every :func:`segapp.segment`,
    not the answers after an edit."""
    import segapp
    from segapp.partition import rounding

    seen = []
    sweep = rounding.sweep_cut

    def spy(x, pencil, cons, **kw):
        seen.append((kw.get("balance"), kw.get("previous") is not None))
        return sweep(x, pencil, cons, **kw)

    monkeypatch.setattr(rounding, "sweep_cut", spy)
    img, s = _bands()
    segapp.segment(img, s, balance=False)
    assert seen == [(False, False)]
    seen.clear()
    session = segapp.Session(img)
    session.update(s)
    more = s.copy()
    more[2:4, 3:8] = 1
    session.update(more)
    assert seen == [(True, False), (True, True)]
