"""PySide6 6.12's emit() drops a reference to True; segapp.gui.qtcompat.emit must not."""

import sys

from PySide6.QtCore import QObject, Signal

from segapp.gui.qtcompat import emit


class _Source(QObject):
    changed = Signal(int)


def test_emit_keeps_the_reference_count_of_true():
    src = _Source()
    got = []
    src.changed.connect(got.append)
    before = sys.getrefcount(True)
    for i in range(2000):
        emit(src.changed, i)
    assert len(got) == 2000
    assert sys.getrefcount(True) - before >= 0
