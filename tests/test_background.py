"""The background work of a Session (issue 28 items 4 and 5): no edit waits for it, it is
cancelled when its Session is replaced or closed, its errors are reported, the exit waits a
bounded time — and under random timings every answer is the one a fresh solve gives.

A factorization is made slow where needed by wrapping ``DirichletFactor.factor`` (the work
``Session.prepare`` does in the background), as a large image's factor is.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import segapp
from segapp.errors import InvalidInputError
from segapp.live.engine import LiveEngine
from segapp.solve import direct
from segapp.solve.harmonic import HarmonicSolver

REPO = Path(__file__).resolve().parents[1]
needs_cholmod = pytest.mark.skipif(not direct.available(), reason="no CHOLMOD")


def blocks(shape=(40, 50), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = np.zeros(shape + (3,))
    img[:, shape[1] // 2:] = (0.2, 0.6, 0.8)
    img[shape[0] // 2:, : shape[1] // 3] = (0.8, 0.3, 0.2)
    return np.clip(img + rng.normal(0, 0.05, img.shape), 0, 1)


def strokes(shape=(40, 50)) -> np.ndarray:
    H, W = shape
    s = np.zeros(shape, dtype=np.int32)
    s[H // 4, 2:W // 3] = 1
    s[H // 4, W // 2 + 2:W - 2] = 2
    s[3 * H // 4, 2:W // 4] = 3
    return s


def slow_factor(monkeypatch, seconds: float, cancellable: bool = True) -> list:
    """Every DirichletFactor.factor takes ``seconds`` more first (polling its cancel token
    when ``cancellable``: a factorization's steps before the CHOLMOD call)."""
    original = direct.DirichletFactor.factor
    calls: list = []

    def factor(self, fixed, cancel=direct.NEVER, threads=None):
        calls.append(threading.current_thread().name)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if cancellable:
                cancel.check()
            time.sleep(0.01)
        return original(self, fixed, cancel, threads)

    monkeypatch.setattr(direct.DirichletFactor, "factor", factor)
    return calls


class HeldFactor:
    """Every ``DirichletFactor.factor`` waits until :meth:`release` (polling its cancel token
    when ``cancellable``). ``entered`` is set when a factorization starts, ``done`` when it
    returns or raises: an answer given while ``entered`` and not ``done`` did not wait for it
    — behaviour, not a wall clock. ``CAP`` seconds unblock a test that fails, not hang it."""

    CAP = 120.0

    def __init__(self, monkeypatch, cancellable: bool = True) -> None:
        self.entered, self.released, self.done = (threading.Event() for _ in range(3))
        original, held = direct.DirichletFactor.factor, self

        def factor(factor_self, fixed, cancel=direct.NEVER, threads=None):
            held.entered.set()
            try:
                deadline = time.monotonic() + held.CAP
                while not held.released.wait(0.01) and time.monotonic() < deadline:
                    if cancellable:
                        cancel.check()
                return original(factor_self, fixed, cancel, threads)
            finally:
                held.done.set()

        monkeypatch.setattr(direct.DirichletFactor, "factor", factor)

    def held(self) -> bool:
        """A factorization has started and not finished."""
        return self.entered.is_set() and not self.done.is_set()

    def release(self) -> None:
        self.released.set()


@needs_cholmod
def test_the_second_edit_does_not_wait_for_the_first_factor(monkeypatch):
    """Above COLD_PIXELS the first answer is iterative and the factor follows in the
    background; the second edit used to wait for it (5.1 s at 1.1M px). Now it is answered
    iteratively at once, saying why."""
    monkeypatch.setattr(direct, "COLD_PIXELS", 0)
    factor = HeldFactor(monkeypatch, cancellable=False)
    img, s = blocks(), strokes()
    sess = segapp.Session(img, stable_refinement=False)
    first = sess.update(s)
    assert first.diagnostics.linear_solver.startswith("iterative")
    s2 = s.copy()
    s2[30, 30:45] = 2
    assert factor.entered.wait(60), "the background factorization did not start"
    second = sess.update(s2)
    assert factor.held(), "the second edit waited for the first factor"
    assert second.diagnostics.direct_unavailable == \
        "the image's factor is still being made in the background"
    factor.release()
    sess.wait_prepared()
    third = sess.update(s)
    assert third.diagnostics.linear_solver.startswith("direct")
    sess.close()


@needs_cholmod
def test_cg_gives_way_to_the_first_factor_when_it_is_ready_first(monkeypatch):
    """The second edit's CG runs while the first factor is made; if the factor is ready
    before CG converges, CG stops and the factor answers (the shorter of the two)."""
    monkeypatch.setattr(direct, "COLD_PIXELS", 0)
    img, s = blocks(), strokes()
    sess = segapp.Session(img, stable_refinement=False)
    sess.update(s)                                  # iterative; the factor follows
    sess.wait_prepared()
    sess._method.solver.harmonic.direct.reset()     # as if the first factor were not made
    factor = HeldFactor(monkeypatch, cancellable=False)
    original = HarmonicSolver._iterative_potentials
    cg = {"started": threading.Event(), "ran to its end": False}

    def endless_cg(self, fixed, b, ids, tol, maxiter, reuse, token, timings):
        cg["started"].set()                         # a CG that never converges by itself:
        factor.release()                            # the factor is ready while it runs
        deadline = time.monotonic() + HeldFactor.CAP
        while time.monotonic() < deadline:
            token.check()                           # ... stopped only by giving way
            time.sleep(0.01)
        cg["ran to its end"] = True
        return original(self, fixed, b, ids, tol, maxiter, reuse, token, timings)

    monkeypatch.setattr(HarmonicSolver, "_iterative_potentials", endless_cg)
    harmonic = sess._method.solver.harmonic
    th = threading.Thread(target=harmonic.prepare)  # the background factor, held
    th.start()
    assert factor.entered.wait(60), "the background factorization did not start"
    s2 = s.copy()
    s2[30, 30:45] = 2
    r = sess.update(s2)
    th.join()
    assert cg["started"].is_set() and not cg["ran to its end"]
    assert r.diagnostics.linear_solver.startswith("direct"), r.diagnostics
    fresh = segapp.segment(img, s2, stable_refinement=False, linear_solver="direct")
    np.testing.assert_array_equal(r.labels, fresh.labels)
    sess.close()


@needs_cholmod
def test_an_edit_while_a_new_base_is_made_is_answered_from_the_old_factor(monkeypatch):
    img, s = blocks(), strokes()
    sess = segapp.Session(img, stable_refinement=False)
    sess.update(s)
    sess.wait_prepared()
    factor = HeldFactor(monkeypatch, cancellable=False)
    s2 = s.copy()
    s2[30, 30:45] = 2
    sess.update(s2)                      # its background work: a new base, held
    s3 = s2.copy()
    s3[10, 30:45] = 1
    assert factor.entered.wait(60), "the new base's factorization did not start"
    r = sess.update(s3)
    assert factor.held(), "the edit waited for the new base"
    factor.release()
    assert "updated for" in r.diagnostics.reason
    fresh = segapp.segment(img, s3, stable_refinement=False)
    np.testing.assert_array_equal(r.labels, fresh.labels)
    sess.close()


@needs_cholmod
def test_a_replaced_session_stops_its_background_work(monkeypatch):
    """The live engine builds a new Session for a new image: the old one's preparation is
    cancelled (it ran on for the whole factorization before)."""
    monkeypatch.setattr(direct, "COLD_PIXELS", 0)
    HeldFactor(monkeypatch)                         # never released: only a cancel stops it
    engine = LiveEngine()
    a = engine.request("t", "image-a", blocks(), strokes(), "fastge")
    engine.solve(a)
    old = engine.sessions.session
    assert old._preparing.is_alive()
    b = engine.request("t", "image-b", blocks(seed=1), strokes(), "fastge")
    engine.solve(b)
    assert engine.sessions.session is not old and old.closed
    old._preparing.join(HeldFactor.CAP / 4)
    assert not old._preparing.is_alive()
    engine.close()
    new = engine.sessions.session
    assert new is None


@needs_cholmod
def test_close_cancels_the_background_work_and_refuses_updates(monkeypatch):
    monkeypatch.setattr(direct, "COLD_PIXELS", 0)
    HeldFactor(monkeypatch)                         # never released: only a cancel stops it
    with segapp.Session(blocks()) as sess:
        sess.update(strokes())
        th = sess._preparing
    th.join(HeldFactor.CAP / 4)
    assert not th.is_alive()
    with pytest.raises(InvalidInputError, match="closed"):
        sess.update(strokes())


def test_background_errors_are_logged_and_reported_with_the_next_result(monkeypatch, caplog):
    def boom(self, cancel=None):
        raise RuntimeError("boom in the background")

    monkeypatch.setattr(HarmonicSolver, "prepare", boom)
    sess = segapp.Session(blocks())
    with caplog.at_level(logging.WARNING, logger="segapp"):
        sess.update(strokes())
        sess.wait_prepared()
    assert any("background preparation" in r.getMessage() and r.exc_info for r in caplog.records)
    assert sess.background_error == "RuntimeError: boom in the background"
    r = sess.update(strokes())
    assert r.diagnostics.notes == ["the background work after the previous edit failed: "
                                   "RuntimeError: boom in the background"]
    assert "boom in the background" in repr(r)
    assert sess.background_error is None or "boom" in sess.background_error   # the next one's
    sess.close()


EXIT_SCRIPT = """
import time, numpy as np, segapp
from segapp import session
from segapp.solve import direct
session.EXIT_WAIT_S = 1.0
original = direct.DirichletFactor.factor
def factor(self, fixed, cancel=direct.NEVER, threads=None):
    time.sleep(600)                       # a factorization that ignores every cancel
    return original(self, fixed, cancel, threads)
direct.DirichletFactor.factor = factor
direct.COLD_PIXELS = 0
rng = np.random.default_rng(0)
img = rng.random((40, 50)); s = np.zeros((40, 50), int); s[5, 5:20] = 1; s[30, 5:20] = 2
segapp.Session(img).update(s)
print("answered", flush=True)
time.sleep(0.5)                           # the preparation is inside its factorization now
"""


@needs_cholmod
def test_exit_waits_a_bounded_time_for_background_work():
    """The script's factorization sleeps 600 s and ignores cancels: exiting within the run's
    timeout (far shorter) means the exit did not wait for it."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.strip() == "answered", proc.stderr
    assert "still running after 1 s at exit" in proc.stderr


# -- the stress test ---------------------------------------------------------------------------
def _random_edit(rng: np.random.Generator, s: np.ndarray) -> np.ndarray:
    s = s.copy()
    H, W = s.shape
    kind = rng.choice(["add", "add", "erase", "clear"])
    if kind == "add":
        y, x = rng.integers(0, H), rng.integers(0, W - 8)
        s[y, x:x + rng.integers(3, 9)] = rng.integers(1, 4)
    elif kind == "erase":
        y, x = rng.integers(0, H - 4), rng.integers(0, W - 8)
        s[y:y + 4, x:x + 8] = 0
    else:
        s[s == rng.integers(1, 4)] = 0
    return s if len(np.unique(s[s > 0])) >= 2 else strokes(s.shape)


@needs_cholmod
def test_answers_under_random_timings_equal_fresh_solves(monkeypatch):
    """Four threads, each with its own Sessions (a Session serves one thread), edit at random
    moments while their background factorizations run, and replace their Session now and
    then (a new image or new settings in the app); a fifth thread drives a LiveEngine the way
    the app does. Every answer must equal a fresh direct solve of the same strokes (labels
    identical where the answer was direct; ≥ 99% where the first factor was not ready yet and
    the answer came from CG at 1e-4)."""
    images = [blocks(seed=i) for i in range(3)]
    slow_factor(monkeypatch, 0.03)                  # widen the windows a little
    monkeypatch.setattr(direct, "COLD_PIXELS", 500)  # 40×50 is above (even × 2 cores)
    errors: list[str] = []
    checked = [0]
    lock = threading.Lock()

    def check(img, s, got, where):
        fresh = segapp.segment(img, s, stable_refinement=False, linear_solver="direct")
        agree = float(np.mean(got.labels == fresh.labels))
        exact = got.diagnostics.linear_solver.startswith("direct")
        with lock:
            checked[0] += 1
            if (exact and agree < 1.0) or agree < 0.99:
                errors.append(f"{where}: {agree:.4f} ({got.diagnostics.reason})")

    def sessions(seed: int) -> None:
        rng = np.random.default_rng(seed)
        i = int(rng.integers(len(images)))
        sess = segapp.Session(images[i], stable_refinement=False)
        s = strokes()
        for step in range(8):
            if rng.random() < 0.2:                    # replaced: new image or settings
                sess.close()
                i = int(rng.integers(len(images)))
                sess = segapp.Session(images[i], stable_refinement=False)
            s = _random_edit(rng, s)
            check(images[i], s, sess.update(s), f"thread {seed} step {step}")
            time.sleep(float(rng.uniform(0, 0.06)))
        sess.close()

    def engine(seed: int) -> None:
        rng = np.random.default_rng(seed)
        eng = LiveEngine()
        s = strokes()
        for step in range(8):
            i = int(rng.integers(2))
            s = _random_edit(rng, s)
            req = eng.request("t", f"img{i}", images[i], s, "fastge",
                              (("stable_refinement", False),))
            check(images[i], s, eng.solve(req), f"engine step {step}")
            time.sleep(float(rng.uniform(0, 0.06)))
        eng.close()

    threads = [threading.Thread(target=sessions, args=(k,)) for k in range(4)]
    threads.append(threading.Thread(target=engine, args=(99,)))
    for th in threads:
        th.start()
    for th in threads:
        th.join(240)
    assert not any(th.is_alive() for th in threads)
    assert checked[0] == 40 and not errors, errors


def _prepare_times(monkeypatch, sess: segapp.Session) -> list[float]:
    times: list[float] = []
    original = sess.prepare

    def prepare(cancel=None):
        times.append(time.perf_counter())
        return original(cancel)

    monkeypatch.setattr(sess, "prepare", prepare)
    return times


def test_the_next_edits_preparation_waits_for_the_edges_to_be_sharpened(monkeypatch):
    """A working answer given back unrefined (refine=False, as the app does): the
    preparation of the next edit starts once Session.refine has ended, not beside it."""
    img, s = blocks((80, 100)), strokes((80, 100))
    sess = segapp.Session(img, max_pixels=2000)
    times = _prepare_times(monkeypatch, sess)
    first = sess.update(s, refine=False)
    assert sess.needs_refinement(first)
    time.sleep(0.4)
    assert times == []                       # waiting for the sharpening
    t = time.perf_counter()
    sess.refine(first, s)
    sess.wait_prepared()
    assert len(times) == 1 and times[0] >= t
    times.clear()
    s2 = s.copy()
    s2[60, 60:80] = 2
    sess.update(s2)                          # refined inside update: prepared at once
    sess.wait_prepared()
    assert len(times) == 1
    sess.close(timeout=None)


def test_a_caller_that_never_sharpens_gets_its_preparation_after_the_wait(monkeypatch):
    monkeypatch.setattr(segapp.session, "SHARPEN_WAIT_S", 0.3)
    img, s = blocks((80, 100)), strokes((80, 100))
    sess = segapp.Session(img, max_pixels=2000)
    times = _prepare_times(monkeypatch, sess)
    t = time.perf_counter()
    sess.update(s, refine=False)
    sess.wait_prepared()
    assert len(times) == 1 and times[0] - t >= 0.3
    sess.close(timeout=None)


@pytest.mark.parametrize("through", ["session", "engine"])
def test_the_next_edits_preparation_waits_for_the_answer_to_be_shown(monkeypatch, through):
    """An answer the caller shows (update(shown=...), as the app's worker does through the
    live engine): the next edit's factorization starts once the caller says the answer is on
    screen, not beside its drawing; a caller that never says so gets it after the wait."""
    from segapp.live.engine import LiveEngine

    monkeypatch.setattr(segapp.session, "SHOWN_WAIT_S", 0.5)
    img, s = blocks((40, 50)), strokes((40, 50))
    engine = LiveEngine()
    sess = segapp.Session(img)
    times = _prepare_times(monkeypatch, sess)
    shown = threading.Event()

    def solve(scribbles, shown):
        if through == "session":
            return sess.update(scribbles, shown=shown)
        engine.sessions.get = lambda req, setup: sess    # the engine's cached Session
        return engine.solve(engine.request("t", "img", img, scribbles, "fastge"), shown=shown)

    solve(s, shown)
    time.sleep(0.3)
    assert times == []                       # the answer is not on screen yet
    t = time.perf_counter()
    shown.set()
    sess.wait_prepared()
    assert len(times) == 1 and 0 <= times[0] - t < 0.2
    times.clear()
    s2 = s.copy()
    s2[30, 30:40] = 2
    t = time.perf_counter()
    solve(s2, threading.Event())             # never set: the preparation comes anyway
    sess.wait_prepared()
    assert len(times) == 1 and times[0] - t >= 0.5
    sess.close(timeout=None)
