"""The background worker: cancellation, stale results, errors (with a scripted session)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import segapp
from segapp import Segmentation
from segapp.errors import Cancelled
from segapp.gui.worker import SegmentationWorker
from segapp.live import ResultCache, make_result


def fake_result(value: int) -> Segmentation:
    labels = np.full((20, 30), value, np.int32)
    return Segmentation(labels, (value,), np.zeros((20, 30, 1), np.float32), np.zeros(1))


class ScriptedSession:
    """Stands in for segapp.Session: blocks until cancelled, or returns after ``delay``."""

    delay = 5.0
    honour_cancel = True
    started = threading.Event()
    saw_cancel = threading.Event()   # the solve found its cancel set
    ended = threading.Event()        # update() returned or raised
    release: threading.Event | None = None  # if given, the solve stops only once it is set
    created = 0
    solves = 0

    def __init__(self, image, method="fastge", **options):
        type(self).created += 1

    def update(self, scribbles, cancel=None, refine=True, shown=None):
        try:
            return self._update(scribbles, cancel)
        finally:
            type(self).ended.set()

    def _update(self, scribbles, cancel):
        type(self).started.set()
        type(self).solves += 1
        end = time.perf_counter() + self.delay
        while time.perf_counter() < end:
            if self.honour_cancel and cancel is not None and cancel():
                type(self).saw_cancel.set()
                if self.release is None or self.release.wait(30):
                    raise Cancelled("cancelled")
                break                                   # never released: answer anyway
            time.sleep(0.002)
        return fake_result(int(scribbles.max()))


@pytest.fixture
def worker(qtbot, monkeypatch):
    ScriptedSession.started, ScriptedSession.saw_cancel = threading.Event(), threading.Event()
    ScriptedSession.ended = threading.Event()
    ScriptedSession.delay, ScriptedSession.honour_cancel = 5.0, True
    ScriptedSession.release = None
    ScriptedSession.created = ScriptedSession.solves = 0
    monkeypatch.setattr(segapp, "Session", ScriptedSession)
    w = SegmentationWorker(debounce_ms=10)
    w.set_image(np.zeros((20, 30), np.float32))
    yield w
    w.cancel()
    assert w.wait_idle(5000)


def value(result) -> int:
    return int(result.segmentation.labels.max())


def test_cancel_reaches_the_solve_without_waiting_for_it(qtbot, worker):
    """cancel() returns at once (the solve is still on its thread when it does: the GUI
    thread never waits for it), the solve sees its cancel, and the request ends as cancelled,
    with no result. Orderings, not a clock: a cancel() that joined the solve would not return
    until the solve gave up waiting (30 s) and answered, and fail the first check below."""
    ScriptedSession.delay = 60.0                        # runs until cancelled (or 60 s)
    ScriptedSession.release = threading.Event()         # and then stops only when told
    results, cancelled = [], []
    worker.resultReady.connect(lambda *a: results.append(a))
    worker.cancelled.connect(cancelled.append)
    tag = worker.request(np.ones((20, 30), int), 1, method="fastge", options={},
                         debounce=False)
    assert ScriptedSession.started.wait(30)
    worker.cancel()
    assert not ScriptedSession.ended.is_set()           # cancel() did not wait for the solve
    assert not worker.is_busy                           # the newest request is gone at once
    assert cancelled == [tag]                           # and said so, at once
    assert ScriptedSession.saw_cancel.wait(30)          # the running solve was told
    assert worker.is_running                            # and is still there, unwaited for
    ScriptedSession.release.set()
    assert worker.wait_idle(30_000) and not worker.is_running
    assert cancelled == [tag]                           # told once
    qtbot.wait(50)                                      # any queued signal is delivered
    assert results == []


def test_newer_request_cancels_the_running_solve_and_wins(qtbot, worker):
    ScriptedSession.delay = 0.05
    worker.request(np.ones((20, 30), int), 1, "fastge", {}, debounce=False)
    assert ScriptedSession.started.wait(5)
    results = []
    worker.resultReady.connect(lambda tag, res, cached: results.append((tag[1], value(res))))
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        worker.request(np.full((20, 30), 2), 2, "fastge", {}, debounce=False)
    assert results == [(2, 2)]


def test_results_of_superseded_generations_are_dropped(qtbot, worker):
    ScriptedSession.delay, ScriptedSession.honour_cancel = 0.15, False  # finishes anyway
    results = []
    worker.resultReady.connect(lambda tag, res, cached: results.append(tag[1]))
    worker.request(np.ones((20, 30), int), 1, "fastge", {}, debounce=False)
    assert ScriptedSession.started.wait(5)
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        worker.request(np.full((20, 30), 2), 2, "fastge", {}, debounce=False)
    assert worker.wait_idle(5000)
    assert results == [2]


def test_debounce_merges_a_burst_into_one_solve_and_options_rebuild_the_session(qtbot, worker):
    ScriptedSession.delay = 0.0
    results = []
    worker.resultReady.connect(lambda tag, res, cached: results.append(tag[1]))
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        for key in range(1, 6):
            worker.request(np.full((20, 30), key), key, "fastge", {"sigma": None})
    assert results == [5] and ScriptedSession.created == 1
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        worker.request(np.ones((20, 30), int), 6, "fastge", {"sigma": 0.1})
    assert ScriptedSession.created == 2


def test_a_stroke_set_solved_before_is_answered_from_the_cache_at_once(qtbot, worker):
    """Undo/redo: coming back to a stroke set shows its result without solving again."""
    ScriptedSession.delay = 0.0
    got = []
    worker.resultReady.connect(lambda tag, res, cached: got.append((tag[1], value(res), cached)))
    for key in (1, 2):
        with qtbot.waitSignal(worker.resultReady, timeout=5000):
            worker.request(np.full((20, 30), key), key, "fastge", {})
    assert ScriptedSession.solves == 2
    worker.request(np.full((20, 30), 1), 1, "fastge", {})  # "undo" to stroke set 1
    assert got[-1] == (1, 1, True)  # announced before request() returned
    assert not worker.is_busy and ScriptedSession.solves == 2
    with qtbot.waitSignal(worker.resultReady, timeout=5000):  # other options: a new solve
        worker.request(np.full((20, 30), 1), 1, "fastge", {"sigma": 0.2})
    assert got[-1] == (1, 1, False) and ScriptedSession.solves == 3


def test_result_cache_is_bounded_in_bytes_and_keeps_the_newest():
    one = make_result(fake_result(1), 0.1)
    cache = ResultCache(max_bytes=int(2.5 * one.nbytes))
    for key in range(5):
        cache.put(key, make_result(fake_result(key + 1), 0.1))
        assert cache.nbytes <= cache.max_bytes
    assert len(cache) == 2 and cache.get(4) is not None and cache.get(0) is None
    tiny = ResultCache(max_bytes=1)  # never empty: the newest result is always kept
    tiny.put("a", one)
    assert tiny.get("a") is one


def test_previews_are_forwarded_when_the_library_offers_them(qtbot, worker, monkeypatch):
    def update(self, scribbles, cancel=None, preview=None, refine=True, shown=None):
        preview(fake_result(7))
        return fake_result(int(scribbles.max()))

    monkeypatch.setattr(ScriptedSession, "update", update)
    monkeypatch.setattr(ScriptedSession, "working_shape", (600, 500), raising=False)
    seen = []
    worker.previewReady.connect(lambda tag, res: seen.append(("preview", value(res), res.preview)))
    worker.resultReady.connect(lambda tag, res, cached: seen.append(("full", value(res),
                                                                        res.preview)))
    with qtbot.waitSignal(worker.resultReady, timeout=5000):
        worker.request(np.full((20, 30), 3), 1, "fastge", {}, debounce=False)
    assert seen == [("preview", 7, True), ("full", 3, False)]


def test_a_preview_is_asked_for_only_where_it_is_cheap_next_to_the_full_solve(
        qtbot, worker, monkeypatch):
    """Issue 23: ensemble on a 0.24 MP photo took 50 s in the app, 17.9 s on the command line:
    the app solved a preview first, which for a landmark method costs as much as the full
    solve."""
    asked = []

    def update(self, scribbles, cancel=None, preview=None, refine=True, shown=None):
        asked.append(preview is not None)
        if preview is not None:
            time.sleep(0.05)  # a preview as slow as the full solve
            preview(fake_result(7))
        time.sleep(0.05)
        return fake_result(int(scribbles.max()))

    monkeypatch.setattr(ScriptedSession, "update", update)
    monkeypatch.setattr(ScriptedSession, "working_shape", (600, 400), raising=False)
    for v in (3, 4):  # 0.24 MP working copy: no preview
        with qtbot.waitSignal(worker.resultReady, timeout=5000):
            worker.request(np.full((20, 30), v), v, "fastge", {}, debounce=False)
    monkeypatch.setattr(ScriptedSession, "working_shape", (600, 834), raising=False)
    for v in (5, 6):  # 0.5 MP: a preview, until one was found as slow as the full solve
        with qtbot.waitSignal(worker.resultReady, timeout=5000):
            worker.request(np.full((20, 30), v), v, "fastge", {}, debounce=False)
    assert asked == [False, False, True, False]
    with qtbot.waitSignal(worker.resultReady, timeout=5000):  # a new session: asked again
        worker.request(np.full((20, 30), 7), 7, "fastge", {"sigma": 0.5}, debounce=False)
    assert asked[-1] is True


def test_unexpected_exception_becomes_a_message(qtbot, worker, monkeypatch):
    def boom(self, scribbles, cancel=None, **_):
        raise ZeroDivisionError("oops")

    monkeypatch.setattr(ScriptedSession, "update", boom)
    with qtbot.waitSignal(worker.failed, timeout=5000) as blocker:
        worker.request(np.ones((20, 30), int), 1, "fastge", {}, debounce=False)
    assert blocker.args[0][1] == 1
    assert blocker.args[1] == "internal error (ZeroDivisionError: oops)"


def test_heat_map_ranges_come_from_the_working_copy_when_there_is_one():
    """At 12 MP the ranges of the enlarged vectors took 0.6 s each; the working copy's are
    the same to within the interpolation, at 0.02 s."""
    seg = fake_result(2)
    seg.working_eigenvectors = np.full((10, 15, 1), 0.25, np.float32)
    assert make_result(seg, 1.0).vmax == (0.25,)
    assert make_result(fake_result(2), 1.0).vmax == (1.0,)  # zeros: no range, 1


def test_a_large_photo_shows_its_working_answer_then_the_sharp_edges(qtbot, monkeypatch):
    """Issue 32 item 3: the working answer comes first (as a preview), the answer with its
    edges solved again at full resolution follows from the same job; a newer request
    cancels the sharpening."""
    monkeypatch.setattr(segapp.live.engine, "PREVIEW_MIN_PIXELS", 10**9)  # no coarse preview
    H, W = 120, 160
    yy, xx = np.mgrid[:H, :W]
    disc = (yy - 60) ** 2 + (xx - 80) ** 2 < 40 ** 2
    img = np.where(disc[..., None], [0.8, 0.6, 0.3], [0.2, 0.3, 0.5]).astype(np.float32)
    s = np.zeros((H, W), np.uint8)
    s[58:61, 70:90], s[2:5, 5:150] = 2, 1
    w = SegmentationWorker(debounce_ms=10)
    w.set_image(img)
    seen = []
    w.previewReady.connect(lambda tag, res: seen.append(("working", res)))
    w.resultReady.connect(lambda tag, res, cached: seen.append(("final", res)))
    opts = {"max_pixels": 1200}
    with qtbot.waitSignal(w.resultReady, timeout=60000):
        w.request(s, "k1", "fastge", opts, debounce=False)
    assert [kind for kind, _ in seen] == ["working", "final"]
    working, final = seen[0][1], seen[1][1]
    assert working.preview and working.segmentation.refinement is None
    assert final.segmentation.refinement.applied and not final.preview
    assert np.any(working.segmentation.labels != final.segmentation.labels)
    # a newer request while the edges are being sharpened cancels them
    started, stopped = threading.Event(), threading.Event()
    real = segapp.Session.refine

    def slow_refine(self, result, scribbles, cancel=None):
        started.set()
        token = segapp.cancel.CancelToken.of(cancel)
        end = time.perf_counter() + 60
        while time.perf_counter() < end:
            if token.requested():
                stopped.set()      # the sharpening saw the newer request's cancel
                token.check()
            time.sleep(0.005)
        return real(self, result, scribbles, cancel)

    monkeypatch.setattr(segapp.Session, "refine", slow_refine)
    cancelled = []
    w.cancelled.connect(lambda tag: cancelled.append(tag))
    s2 = s.copy()
    s2[100:103, 20:60] = 1
    w.request(s2, "k2", "fastge", opts, debounce=False)
    qtbot.waitUntil(started.is_set, timeout=60000)
    w.request(s, "k1", "fastge", opts, debounce=False)   # back to k1: cached, cancels k2
    assert cancelled == [w.tag("k2", "fastge", opts)] and seen[-1][0] == "final"
    assert stopped.wait(30)            # behaviour, not a clock: the cancel reached the loop
    assert w.wait_idle(30000) and not w.is_running
    assert [kind for kind, _ in seen][-1] == "final" and seen[-1][1] is final  # k1's, cached
