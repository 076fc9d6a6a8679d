"""The one background-job mechanism (segapp.gui.jobs): order, newest wins, stop vs cancel,
outcomes on the GUI thread. Orderings and events, never a clock."""

from __future__ import annotations

import threading

import pytest

from segapp.errors import InvalidInputError
from segapp.gui.jobs import JobRunner, failure_message


@pytest.fixture
def runner(qtbot):
    r = JobRunner()
    yield r
    r.cancel()
    assert r.wait_idle(10_000)


def blocked(gate: threading.Event, started: threading.Event | None = None, value=None):
    """Work that waits for ``gate`` (polling its token, as the core does), then returns."""
    def work(job):
        if started is not None:
            started.set()
        while not gate.wait(0.005):
            job.token.check()
        return value
    return work


def test_jobs_run_one_at_a_time_in_order_and_report_on_the_gui_thread(qtbot, runner):
    seen, threads = [], []

    def work(i):
        def run(_job):
            threads.append(threading.current_thread() is threading.main_thread())
            return i
        return run

    for i in range(4):
        runner.submit("edit", work(i), done=lambda v: seen.append(
            (v, threading.current_thread() is threading.main_thread())), supersede=False)
    with qtbot.waitSignal(runner.idle, timeout=10_000):
        pass
    assert seen == [(0, True), (1, True), (2, True), (3, True)]
    assert threads == [False] * 4


def test_a_newer_job_of_a_key_cancels_the_older_one_which_reports_nothing(qtbot, runner):
    gate, started = threading.Event(), threading.Event()
    outcome, stale, kept = [], [], []
    runner.submit("solve", blocked(gate, started, "old"), done=stale.append,
                  cancelled=lambda: outcome.append("old cancelled"), keep=kept.append,
                  progress=lambda *a: stale.append(a))
    assert started.wait(10)
    runner.submit("solve", lambda job: "new", done=outcome.append)
    assert outcome == ["old cancelled"]          # at once, before the old work has stopped
    assert [j.what for j in runner.live("solve")] == [""] and runner.working
    with qtbot.waitSignal(runner.idle, timeout=10_000):
        pass
    assert outcome == ["old cancelled", "new"] and stale == [] and kept == []  # it stopped


def test_a_stale_value_that_finished_anyway_is_kept_but_not_shown(qtbot, runner):
    gate, started = threading.Event(), threading.Event()
    shown, kept = [], []

    def stubborn(_job):  # never polls its token: finishes although superseded
        started.set()
        gate.wait(10)
        return "stale"

    runner.submit("layer", stubborn, done=shown.append, keep=kept.append)
    assert started.wait(10)
    runner.supersede("layer")
    gate.set()
    assert runner.wait_idle(10_000)
    assert shown == [] and kept == ["stale"] and not runner.running


def test_stop_asks_the_work_to_stop_and_its_report_still_comes(qtbot, runner):
    started = threading.Event()

    def export(job):
        started.set()
        while not job.token.requested():
            threading.Event().wait(0.005)
        return "partial report"

    reports = []
    job = runner.submit("export", export, done=reports.append)
    assert started.wait(10)
    with qtbot.waitSignal(runner.idle, timeout=10_000):
        job.stop()
    assert reports == ["partial report"]


def test_keys_do_not_supersede_each_other_and_cancel_drops_what_never_started(qtbot, runner):
    gate, started = threading.Event(), threading.Event()
    ran, done = [], []
    runner.submit("overlay", blocked(gate, started, "overlay"), done=done.append)
    runner.submit("heatmap", lambda job: ran.append("heatmap") or "heatmap", done=done.append)
    assert started.wait(10)
    runner.submit("heatmap", lambda job: ran.append("heatmap 2") or "heatmap 2",
                  done=done.append)
    gate.set()
    with qtbot.waitSignal(runner.idle, timeout=10_000):
        pass
    assert done == ["overlay", "heatmap 2"] and ran == ["heatmap 2"]  # the first never ran


def test_first_runs_before_the_jobs_waiting(qtbot, runner):
    gate, started = threading.Event(), threading.Event()
    order = []
    runner.submit("edit", blocked(gate, started), done=lambda _v: order.append("a"),
                  supersede=False)
    assert started.wait(10)
    runner.submit("edit", lambda job: None, done=lambda _v: order.append("b"), supersede=False)
    runner.submit("edit", lambda job: None, done=lambda _v: order.append("again"),
                  supersede=False, first=True)
    gate.set()
    assert runner.wait_done(10_000)
    assert order == ["a", "again", "b"]


def test_progress_reaches_the_gui_thread_with_the_stage_and_how_far(qtbot, runner):
    seen = []

    def work(job):
        job.token.progress("reading", 0, 3)
        job.token.progress("preparing", 1, 3)
        return "ok"

    runner.submit("open", work, progress=lambda what, i, n, seconds: seen.append((what, i, n)))
    assert runner.wait_done(10_000)
    assert seen == [("reading", 0, 3), ("preparing", 1, 3)]


@pytest.mark.parametrize("exc, message", [
    (InvalidInputError("photo.jpg is not an image"), "photo.jpg is not an image"),
    (FileNotFoundError(2, "No such file"), "[Errno 2] No such file"),
    (MemoryError(), "not enough memory"),
    (ZeroDivisionError("oops"), "internal error (ZeroDivisionError: oops)"),
])
def test_a_failure_becomes_one_line_for_the_user(qtbot, runner, exc, message):
    assert failure_message(exc) == message

    def fail(_job):
        raise exc

    failed = []
    runner.submit("open", fail, failed=failed.append)
    assert runner.wait_done(10_000)
    assert failed == [message]
