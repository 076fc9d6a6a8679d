"""pytest-qt fixtures: offscreen Qt, isolated QSettings, a small test image and a ready window."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Before anything imports Qt: no display is needed for the widget tests (the Xvfb test runs
# its own subprocess with QT_QPA_PLATFORM=xcb).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

pytest.importorskip("pytestqt")

from segapp.gui import qtcompat  # noqa: E402


def pytest_collection_modifyitems(config, items):
    """With a binding that drops references to None every widget test would end in "Fatal
    Python error: none_dealloc" (and take the whole run with it): skip them, saying why."""
    if not qtcompat.VOID_DROPS_NONE:
        return
    import PySide6

    skip = pytest.mark.skip(reason=qtcompat.BROKEN_BINDING.format(version=PySide6.__version__))
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here) and "preflight" not in str(item.fspath):
            item.add_marker(skip)

from PySide6.QtCore import QCoreApplication, QPoint, QSettings, Qt, QTimer  # noqa: E402

from segapp.gui.files import EXPORT_KINDS  # noqa: E402
from xvfb import running_xvfb  # noqa: E402  (tests/ is on sys.path)

REPO = Path(__file__).resolve().parents[2]
H, W = 90, 120
# A bright disc (label 1) on a dark, slightly noisy background (label 2).
DISC_CENTER, DISC_RADIUS = (60.0, 45.0), 25.0  # (x, y), pixels


def make_test_image() -> np.ndarray:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:H, 0:W]
    disc = (xx + 0.5 - DISC_CENTER[0]) ** 2 + (yy + 0.5 - DISC_CENTER[1]) ** 2 < DISC_RADIUS ** 2
    img = np.where(disc[..., None], [220, 120, 40], [30, 60, 110]).astype(float)
    img += rng.normal(0, 6, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def disc_mask() -> np.ndarray:
    yy, xx = np.mgrid[0:H, 0:W]
    return (xx + 0.5 - DISC_CENTER[0]) ** 2 + (yy + 0.5 - DISC_CENTER[1]) ** 2 < DISC_RADIUS ** 2


@pytest.fixture(scope="session", autouse=True)
def _isolated_qsettings(tmp_path_factory):
    """QSettings in a temporary INI folder, never the user's real settings."""
    folder = tmp_path_factory.mktemp("qsettings")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
    yield


@pytest.fixture(autouse=True)
def _fresh_qsettings():
    """Every test starts from default settings (app.run renames the application)."""
    QCoreApplication.setOrganizationName("segapp-tests")
    QCoreApplication.setApplicationName("segapp-tests")
    QSettings().clear()
    yield


@pytest.fixture
def image_path(tmp_path):
    p = tmp_path / "disc.png"
    Image.fromarray(make_test_image()).save(p)
    return p


class Answers:
    """Scripted replies to the window's questions (fails on an unexpected one).

    ``ask(title, text)`` pops a bool from ``replies``; ``choose(title, text, buttons)`` pops
    the name of a button from ``choices``. ``asked`` lists the titles in order.
    """

    def __init__(self) -> None:
        self.replies: list[bool] = []
        self.choices: list[str] = []
        self.asked: list[str] = []

    def __call__(self, title: str, text: str) -> bool:
        self.asked.append(title)
        if not self.replies:
            raise AssertionError(f"unexpected question: {title}: {text}")
        return self.replies.pop(0)

    def choose(self, title: str, text: str, buttons: tuple[str, ...]) -> str:
        self.asked.append(title)
        if not self.choices:
            raise AssertionError(f"unexpected question: {title}: {text}")
        answer = self.choices.pop(0)
        assert answer in buttons, (answer, buttons)
        return answer


@pytest.fixture
def make_window(qtbot, tmp_path):
    """Factory: a shown MainWindow with scripted dialogs, recovery files under tmp_path."""
    from segapp.gui.main_window import MainWindow

    made = []

    def make(path=None, recovery_dir=None):
        win = MainWindow(recovery_dir=recovery_dir or (tmp_path / "recovery"), debounce_ms=10)
        win.ask = Answers()
        win.choose = win.ask.choose
        made.append(win)  # closed below, not by qtbot: its close comes before our teardown
        win.show()
        qtbot.waitExposed(win)
        if path is not None:
            assert open_and_wait(win, path), win.message_bar.text()
        return win

    yield make
    for win in made:  # closing at teardown discards whatever a test left unsaved
        win.choose = lambda *a: "Discard"
        win.ask = lambda *a: True
        win.close()
        win.deleteLater()


@pytest.fixture
def window(make_window, image_path):
    return make_window(image_path)


def open_and_wait(win, path) -> bool:
    """Open ``path`` as File > Open does (read in the background) and wait until it is shown
    or has failed; True if it is the image on screen now."""
    if not win.open_path(path):
        return False
    win.document.wait_loaded()
    return win.state.image_path is not None and (
        Path(win.state.image_path) == Path(path)
        or (win.document.session_path is not None and Path(win.document.session_path) == Path(path)))


def recover_and_wait(win) -> bool:
    """``offer_recovery()`` and wait for the restore it started; True if work was restored."""
    started = win.offer_recovery()
    win.document.wait_loaded()
    return started and "Restored" in win.statusBar().currentMessage()


def view_pos(canvas, x: float, y: float) -> QPoint:
    """Viewport position of image point (x, y)."""
    return canvas.mapFromScene(x, y)


def drag(qtbot, canvas, points, button=Qt.MouseButton.LeftButton, modifier=Qt.KeyboardModifier.NoModifier):
    """Press at the first image point, move through the rest, release at the last."""
    vp = canvas.viewport()
    pts = [view_pos(canvas, x, y) for x, y in points]
    qtbot.mousePress(vp, button, modifier, pts[0])
    for p in pts[1:]:
        qtbot.mouseMove(vp, p)
    qtbot.mouseRelease(vp, button, modifier, pts[-1])


def paint_two_labels(qtbot, win):
    """Label 1 inside the disc, label 2 in the background, like a person would."""
    qtbot.keyClick(win.canvas, Qt.Key.Key_1)
    drag(qtbot, win.canvas, [(50, 45), (60, 40), (70, 45)])
    qtbot.keyClick(win.canvas, Qt.Key.Key_2)
    drag(qtbot, win.canvas, [(5, 5), (60, 6), (115, 8), (112, 80)])


def simulate_crash(win) -> None:
    """Leave ``win``'s recovery folder as a killed process would: journal as written, lock file
    naming a process that no longer runs (the window itself is then closed without asking)."""
    import socket
    import subprocess

    inst = win.document.instance
    inst.journal.close()
    inst._lock.unlock()  # removes the lock file; write one of a dead process instead
    dead = subprocess.Popen(["true"])
    dead.wait()
    (inst.folder / "lock").write_text(f"{dead.pid}\nsegapp\n{socket.gethostname()}\n")
    win.document.instance = None
    win.document._mark_saved()


# -- helpers shared by the window tests ----------------------------------------------------
class ThreadSpy:
    """Records on which thread named functions run: the GUI thread never blocks (> 100 ms)
    when the heavy work of an action runs elsewhere. A test asserts that, and that the work
    ran at all; how long the window pauses is measured in benchmarks/gui.py, not asserted
    on a shared machine."""

    def __init__(self, monkeypatch) -> None:
        self.monkeypatch = monkeypatch
        self.calls: list[tuple[str, bool]] = []  # (name, on the GUI thread)

    def wrap(self, name: str, function):
        """``function``, its calls recorded under ``name``."""
        import threading

        def wrapped(*args, **kwargs):
            self.calls.append((name, threading.current_thread() is threading.main_thread()))
            return function(*args, **kwargs)
        return wrapped

    def watch(self, owner, name: str) -> None:
        """Record each call of ``owner.<name>`` (a module's function or a class's method)."""
        self.monkeypatch.setattr(owner, name, self.wrap(name, getattr(owner, name)))

    def ran(self, name: str) -> int:
        return sum(n == name for n, _gui in self.calls)

    def on_gui_thread(self) -> list[str]:
        return [n for n, gui in self.calls if gui]


@pytest.fixture
def threads(monkeypatch):
    return ThreadSpy(monkeypatch)


SOLVE_TIMEOUT = 20_000  # ms; a 120×90 solve takes well under a second, CI machines are slow


def wait_segmentation(qtbot, win):
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT) as blocker:
        pass
    return blocker.args[0]


def segment(qtbot, win):
    """Paint two labels and wait until their segmentation is displayed."""
    with qtbot.waitSignal(win.segmentationShown, timeout=SOLVE_TIMEOUT,
                          check_params_cb=lambda tag: tag == win.display.tag):
        paint_two_labels(qtbot, win)
    return win.result


def export(qtbot, win, base, kinds=None):
    """Start an export and wait for its report (None if nothing was started)."""
    with qtbot.waitSignal(win.document.exporter.finished, timeout=SOLVE_TIMEOUT,
                          raising=False) as blocker:
        started = win.document.export_to(base, kinds or EXPORT_KINDS)
        if not started:
            return None
    return blocker.args[0]


@pytest.fixture
def xvfb_display():
    """A fresh Xvfb display on which Qt can run; skip (with the reason) only if that is
    impossible."""
    with running_xvfb(reuse_display=False) as display:
        # Qt's own check on that display, in a child: a missing library is a skip with its
        # reason (the one line segapp prints), never Qt's abort.
        check = subprocess.run(
            [sys.executable, "-c",
             "from segapp.gui.preflight import problem; print(problem() or '')"],
            env={**os.environ, "QT_QPA_PLATFORM": "xcb", "DISPLAY": display,
                 "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
            capture_output=True, text=True, timeout=120)
        why = check.stdout.strip() or (check.stderr.strip().splitlines() or [""])[-1]
        if why:
            pytest.skip(f"Qt cannot run on Xvfb here: {why}")
        yield display
