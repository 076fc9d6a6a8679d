"""Where the window speaks: a dismissable message line (errors never become dialogs or
tracebacks) and the status bar's progress, timing and zoom widgets."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QToolButton,
    QWidget,
)


class MessageBar(QFrame):
    """A dismissable in-window message line (errors never become dialogs or tracebacks).

    It floats over the top of its parent (the canvas's frame): showing or hiding it never
    moves the image under the mouse.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageBar")
        self.setStyleSheet("#messageBar { background: #fde2e1; border: 1px solid #d55e00; "
                           "border-radius: 3px; } QLabel { color: #5a1a00; }")
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton(self)
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 4, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.hide()
        if parent is not None:
            parent.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.parentWidget() and event.type() == QEvent.Type.Resize:
            self._place()
        return False

    def _place(self) -> None:
        """Across the top of the parent, 8 px in from its sides, as tall as the text needs."""
        host = self.parentWidget()
        if host is None:
            return
        width = max(host.width() - 16, 50)
        self.setGeometry(8, 4, width, self.heightForWidth(width) if self.hasHeightForWidth()
                         else self.sizeHint().height())

    def show_message(self, text: str) -> None:
        self.label.setText(text)
        self._place()
        self.show()
        self.raise_()

    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


#: Seconds after which a running solve shows its Stop button.
STOP_AFTER = 2.0


class StatusWidgets:
    """The permanent widgets of a window's status bar: the progress of opening a file with its
    cancel button, solve progress, export progress with its cancel button, the last solve's
    time, the zoom."""

    def __init__(self, window: QMainWindow) -> None:
        self.window = window
        self.load_bar = QProgressBar(window)
        self.load_bar.setMaximumWidth(120)
        self.load_bar.setTextVisible(False)
        self.load_bar.hide()
        self.cancel_load_button = QPushButton("Cancel", window)
        self.cancel_load_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.cancel_load_button.hide()
        self.progress = QProgressBar(window)
        self.progress.setRange(0, 0)  # busy indicator
        self.progress.setMaximumWidth(120)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.export_bar = QProgressBar(window)
        self.export_bar.setMaximumWidth(160)
        self.export_bar.setFormat("export %v/%m")
        self.export_bar.hide()
        self.cancel_export_button = QPushButton("Cancel export", window)
        self.cancel_export_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.cancel_export_button.hide()
        self.cancel_solve_button = QPushButton("Stop", window)
        self.cancel_solve_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.cancel_solve_button.setToolTip("Stop this segmentation (the strokes stay)")
        self.cancel_solve_button.hide()
        self.time_label = QLabel("", window)
        self.zoom_label = QLabel("", window)
        for w in (self.load_bar, self.cancel_load_button, self.export_bar, self.cancel_export_button, self.progress,
                  self.cancel_solve_button, self.time_label, self.zoom_label):
            window.statusBar().addPermanentWidget(w)
        self._solving = False
        self._editing = ""  # the whole-map edit being prepared ("Filling a region"), if any

    def load_progress(self, step: int, steps: int, text: str) -> None:
        """A file is being opened (``steps`` > 0) at ``step`` of ``steps``, or none is."""
        loading = steps > 0
        self.load_bar.setVisible(loading)
        self.cancel_load_button.setVisible(loading)
        if loading:
            self.load_bar.setRange(0, steps)
            self.load_bar.setValue(step)
            self.cancel_load_button.setToolTip(f"Stop: {text}")
            self.window.statusBar().showMessage(f"{text}…")

    def busy(self, busy: bool) -> None:
        """A solve is pending or running (or not)."""
        self._solving = busy
        self._show_busy()
        if busy:
            self.time_label.setText("segmenting…")
        else:
            self.solve_progress(None, -1.0)

    def solve_progress(self, fraction: float | None, seconds: float) -> None:
        """The running solve's share done (None: unknown) and seconds (< 0: none runs). A
        solve past :data:`STOP_AFTER` seconds offers to stop it."""
        running = seconds >= 0
        if running and fraction is not None:
            self.progress.setRange(0, 100)
            self.progress.setValue(int(round(100 * fraction)))
        else:
            self.progress.setRange(0, 0)         # busy indicator
        self.cancel_solve_button.setVisible(running and seconds >= STOP_AFTER)

    def edit_progress(self, _step: int, steps: int, what: str) -> None:
        """A fill, clear or big undo is being prepared (``steps`` > 0) or none is: the same
        busy indicator from the click on, not only once the edit is applied and solved."""
        self._editing = what if steps > 0 else ""
        self._show_busy()
        if self._editing:
            self.window.statusBar().showMessage(f"{self._editing}…", 8000)

    def _show_busy(self) -> None:
        self.progress.setVisible(self._solving or bool(self._editing))
        self.progress.setToolTip(self._editing or "Segmenting")

    def export_progress(self, done: int, total: int, what: str) -> None:
        self.export_bar.setRange(0, max(total, 1))
        self.export_bar.setValue(done)
        self.export_bar.setVisible(True)
        self.cancel_export_button.setVisible(bool(what))

    def export_done(self) -> None:
        self.export_bar.hide()
        self.cancel_export_button.hide()
