"""Work-arounds for Qt binding bugs.

PySide6 6.12.0's ``SignalInstance.emit()`` (and ``disconnect()``) return ``True`` without
taking a reference, so every call drops one reference of the ``True`` singleton; after a few
thousand emits the interpreter aborts ("Fatal Python error: bool_dealloc"). :func:`emit`
gives the reference back when (and only when) a probe at import shows the bug.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from PySide6.QtCore import QObject, Signal

_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]
_incref.restype = None


class _Probe(QObject):
    ping = Signal()


def _emit_drops_a_reference() -> bool:
    probe = _Probe()
    n = 16
    before = sys.getrefcount(True)
    results = [probe.ping.emit() for _ in range(n)]
    lost = before - sys.getrefcount(True) + sum(r is True for r in results)
    del results  # dropping the list releases the references the bug never took
    if lost <= 0:
        return False
    for _ in range(n):  # repair the probe's own damage
        _incref(True)
    return True


EMIT_DROPS_REFERENCE = _emit_drops_a_reference()


def emit(signal: Any, *args: Any) -> None:
    """``signal.emit(*args)``, compensating PySide6 6.12's lost reference to ``True``."""
    result = signal.emit(*args)
    if EMIT_DROPS_REFERENCE and result is True:
        _incref(result)
