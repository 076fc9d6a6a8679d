"""The background worker: cancellation latency, stale results, errors (with a scripted session)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import segapp
from segapp.errors import Cancelled
from segapp.gui.worker import SegmentationWorker


class ScriptedSession:
    """Stands in for segapp.Session: blocks until cancelled, or returns after ``delay``."""

    delay = 5.0
    honour_cancel = True
    started = threading.Event()
    created = 0

    def __init__(self, image, method="fastge", **options):
        type(self).created += 1

    def update(self, scribbles, cancel=None):
        type(self).started.set()
        end = time.perf_counter() + self.delay
        while time.perf_counter() < end:
            if self.honour_cancel and cancel is not None and cancel():
                raise Cancelled("cancelled")
            time.sleep(0.002)
        return ("result", int(scribbles.max()))


@pytest.fixture
def worker(qtbot, monkeypatch):
    ScriptedSession.started = threading.Event()
    ScriptedSession.delay, ScriptedSession.honour_cancel, ScriptedSession.created = 5.0, True, 0
    monkeypatch.setattr(segapp, "Session", ScriptedSession)
    w = SegmentationWorker(debounce_ms=10)
    w.set_image(np.zeros((20, 30), np.float32))
    yield w
    w.cancel()
    assert w.wait_idle(5000)


def test_cancel_is_honoured_within_200_ms(qtbot, worker):
    worker.request(np.ones((20, 30), int), revision=1, method="fastge", options={},
                   debounce=False)
    assert ScriptedSession.started.wait(5)
    with qtbot.waitSignal(worker.cancelled, timeout=2000):
        t = time.perf_counter()
        worker.cancel()
    assert time.perf_counter() - t < 0.2
    assert not worker.is_busy


def test_newer_request_cancels_the_running_solve_and_wins(qtbot, worker):
    ScriptedSession.delay = 0.05
    worker.request(np.ones((20, 30), int), 1, "fastge", {}, debounce=False)
    assert ScriptedSession.started.wait(5)
    results = []
    worker.resultReady.connect(lambda rev, res, sec: results.append((rev, res)))
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        worker.request(np.full((20, 30), 2), 2, "fastge", {}, debounce=False)
    assert results == [(2, ("result", 2))]


def test_results_of_superseded_generations_are_dropped(qtbot, worker):
    ScriptedSession.delay, ScriptedSession.honour_cancel = 0.15, False  # finishes anyway
    results = []
    worker.resultReady.connect(lambda rev, res, sec: results.append(rev))
    worker.request(np.ones((20, 30), int), 1, "fastge", {}, debounce=False)
    assert ScriptedSession.started.wait(5)
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        worker.request(np.full((20, 30), 2), 2, "fastge", {}, debounce=False)
    assert worker.wait_idle(5000)
    assert results == [2]


def test_debounce_merges_a_burst_into_one_solve_and_options_rebuild_the_session(qtbot, worker):
    ScriptedSession.delay = 0.0
    results = []
    worker.resultReady.connect(lambda rev, res, sec: results.append(rev))
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        for rev in range(1, 6):
            worker.request(np.full((20, 30), rev), rev, "fastge", {"sigma": None})
    assert results == [5] and ScriptedSession.created == 1
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        worker.request(np.ones((20, 30), int), 6, "fastge", {"sigma": 0.1})
    assert ScriptedSession.created == 2


def test_unexpected_exception_becomes_a_message(qtbot, worker, monkeypatch):
    def boom(self, scribbles, cancel=None):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(ScriptedSession, "update", boom)
    with qtbot.waitSignal(worker.failed, timeout=5000) as blocker:
        worker.request(np.ones((20, 30), int), 1, "fastge", {}, debounce=False)
    assert blocker.args == [1, "internal error (ZeroDivisionError: oops)"]
