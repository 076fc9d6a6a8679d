"""The live-solve engine without Qt: generations, cancellation, one Session per set-up."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import segapp
from segapp.errors import Cancelled
from segapp.live import LiveEngine
from segapp.live import engine as engine_module
from segapp.live.engine import split_options


def scene() -> tuple[np.ndarray, np.ndarray]:
    img = np.zeros((16, 20), np.float32)
    img[:, 10:] = 1.0
    strokes = np.zeros((16, 20), np.int32)
    strokes[8, 2], strokes[8, 17] = 1, 2
    return img, strokes


def test_a_new_request_cancels_the_one_before_and_makes_it_stale():
    engine = LiveEngine()
    img, strokes = scene()
    first = engine.request("a", 1, img, strokes, "fastge")
    second = engine.request("b", 1, img, strokes, "fastge")
    assert first.cancel.is_set() and not second.cancel.is_set()
    assert engine.is_current(second) and not engine.is_current(first)
    with pytest.raises(Cancelled):
        engine.solve(first)
    engine.interrupt()  # stopped, but still the newest
    assert second.cancel.is_set() and engine.is_current(second)
    engine.cancel()  # stopped and stale
    assert not engine.is_current(second)


def test_solve_options_reuse_the_session_and_set_up_options_rebuild_it():
    engine = LiveEngine()
    img, strokes = scene()
    seg = engine.solve(engine.request(None, 1, img, strokes, "fastge"))
    np.testing.assert_array_equal(seg.labels, segapp.segment(img, strokes).labels)
    session = engine.sessions.session
    engine.solve(engine.request(None, 1, img, strokes, "fastge", (("constraint_weight", 2.0),)))
    assert engine.sessions.session is session
    engine.solve(engine.request(None, 1, img, strokes, "fastge", (("connectivity", 8),)))
    assert engine.sessions.session is not session
    session = engine.sessions.session
    engine.solve(engine.request(None, 2, img, strokes, "fastge", (("connectivity", 8),)))
    assert engine.sessions.session is not session  # another image


def test_options_are_split_by_their_declared_stage_and_session_arguments_are_set_up():
    setup, solve = split_options("fastge", {"sigma": None, "constraint_weight": 2.0,
                                            "max_pixels": 125_000})
    assert setup == {"sigma": None, "max_pixels": 125_000} and solve == {"constraint_weight": 2.0}


def test_a_failed_solve_rebuilds_the_session_next_time():
    engine = LiveEngine()
    img, strokes = scene()
    with pytest.raises(segapp.errors.InvalidInputError):
        engine.solve(engine.request(None, 1, img, strokes, "fastge", (("sigma", -1.0),)))
    assert engine.sessions.key is None


def test_going_back_to_the_method_before_reuses_its_session():
    """Issue 32: after fastge → ensemble → fastge the next fastge stroke rebuilt fastge's
    Session (6.5 s instead of ~0.8 s in the app); the one before is kept while the image
    stays."""
    engine = LiveEngine()
    img, strokes = scene()
    engine.solve(engine.request(None, 1, img, strokes, "fastge"))
    fastge = engine.sessions.session
    engine.solve(engine.request(None, 1, img, strokes, "ncut"))
    ncut = engine.sessions.session
    assert ncut is not fastge
    engine.solve(engine.request(None, 1, img, strokes, "fastge"))
    assert engine.sessions.session is fastge
    engine.solve(engine.request(None, 1, img, strokes, "ncut"))
    assert engine.sessions.session is ncut
    engine.solve(engine.request(None, 2, img, strokes, "fastge"))    # another image
    assert engine.sessions.session is not fastge
    assert not engine.sessions.holds(engine.request(None, 1, img, strokes, "ncut"), {})


def test_a_session_of_a_large_working_copy_is_not_kept_for_a_switch_back(monkeypatch):
    """A FAST-GE session holds ~2.5 KB per working pixel (9.8 GB at 4 MP): the one before is
    kept for a switch back only up to KEEP_PIXELS, and closed otherwise."""
    monkeypatch.setattr(engine_module, "KEEP_PIXELS", 16 * 20 - 1)   # this scene is larger
    engine = LiveEngine()
    img, strokes = scene()
    engine.solve(engine.request(None, 1, img, strokes, "fastge"))
    large = engine.sessions.session
    engine.solve(engine.request(None, 1, img, strokes, "fastge", (("max_pixels", 100),)))
    small = engine.sessions.session
    assert small.working_shape != large.working_shape and large.closed
    assert not engine.sessions.holds(engine.request(None, 1, img, strokes, "fastge"), {})
    engine.solve(engine.request(None, 1, img, strokes, "fastge"))    # the small one is kept
    assert engine.sessions.holds(
        engine.request(None, 1, img, strokes, "fastge", (("max_pixels", 100),)),
        {"max_pixels": 100})


def test_a_large_working_copy_is_refused_where_its_memory_is_not_free(monkeypatch):
    """A 4 MP working size needs ~10 GB: where that is not free the system killed the app;
    now the request fails with one line saying what to do, and a small copy still builds."""
    monkeypatch.setattr(engine_module, "KEEP_PIXELS", 100)
    monkeypatch.setattr(engine_module, "available_memory", lambda: 16 * 20 * 2_500 - 1)
    engine = LiveEngine()
    img, strokes = scene()       # 320 px: above KEEP_PIXELS, 1 byte short of free memory
    with pytest.raises(segapp.errors.InvalidInputError,
                       match=r"working size of 320 pixels needs .* choose a smaller"):
        engine.solve(engine.request(None, 1, img, strokes, "fastge"))
    assert engine.sessions.session is None
    engine.solve(engine.request(None, 1, img, strokes, "fastge", (("max_pixels", 100),)))
    monkeypatch.setattr(engine_module, "available_memory", lambda: None)   # not known
    engine.solve(engine.request(None, 1, img, strokes, "fastge"))


def test_available_memory_reads_the_systems_figure():
    free = engine_module.available_memory()
    if sys.platform.startswith("linux"):
        assert free is not None and 2**20 < free < 2**50
    else:
        assert free is None


def test_the_memory_of_a_session_it_replaces_counts_as_free(monkeypatch):
    """A closed session's memory stays with the process (reused, not given back to the
    system): a switch from one large working copy to another is not refused for it."""
    monkeypatch.setattr(engine_module, "KEEP_PIXELS", 100)
    monkeypatch.setattr(engine_module, "available_memory", lambda: 16 * 20 * 2_500 // 2)
    engine = LiveEngine()
    img, strokes = scene()
    with pytest.raises(segapp.errors.InvalidInputError, match="choose a smaller"):
        engine.solve(engine.request(None, 1, img, strokes, "fastge"))
    engine.sessions.session = segapp.Session(img)    # as if built when memory was free
    engine.sessions.key = (1, "fastge", ())
    engine.solve(engine.request(None, 1, img, strokes, "fastge", (("connectivity", 8),)))
    assert engine.sessions.session.working_shape == img.shape
