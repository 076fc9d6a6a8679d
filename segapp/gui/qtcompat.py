"""Work-arounds for Qt binding bugs, and the check for one that cannot be worked around.

PySide6 6.12.0's ``SignalInstance.emit()`` (and ``disconnect()``) return ``True`` without
taking a reference, so every call drops one reference of the ``True`` singleton; after a few
thousand emits the interpreter aborts ("Fatal Python error: bool_dealloc"). :func:`emit`
gives the reference back when (and only when) a probe at import shows the bug.

The same release also returns ``None`` from every void method (``setText``, ``setVisible``,
``setPixmap``...) without a reference: on Python < 3.12, where ``None`` is not immortal, a
few thousand such calls abort the app ("none_dealloc"). That cannot be patched from Python;
:data:`VOID_DROPS_NONE` detects it so that the app refuses to start with a one-line message
(``pyproject.toml`` excludes the release).
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


def _void_drops_none() -> bool:
    probe = QObject()
    n = 16
    before = sys.getrefcount(None)
    for _ in range(n):
        probe.setObjectName("probe")
    lost = before - sys.getrefcount(None)
    for _ in range(max(lost, 0)):  # repair the probe's own damage
        _incref(None)
    return lost > 0


VOID_DROPS_NONE = _void_drops_none()
BROKEN_BINDING = (
    "PySide6 {version} drops references to None on this Python and would crash the app; "
    "install another release: pip install 'PySide6!={version}'")


def emit(signal: Any, *args: Any) -> None:
    """``signal.emit(*args)``, compensating PySide6 6.12's lost reference to ``True``."""
    result = signal.emit(*args)
    if EMIT_DROPS_REFERENCE and result is True:
        _incref(result)
