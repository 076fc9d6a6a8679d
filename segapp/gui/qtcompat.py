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
import gc
import sys
from typing import Any

from PySide6.QtCore import QObject, Signal

_incref = ctypes.pythonapi.Py_IncRef
_incref.argtypes = [ctypes.py_object]
_incref.restype = None


class _Probe(QObject):
    ping = Signal()


def _references_lost(obj: Any, call: Any, n: int = 64) -> bool:
    """Whether ``n`` calls returning ``obj`` lose a reference of it each (the binding bug).

    The results are kept while counting, so a correct binding shows ``+n`` references and a
    broken one ``0``; the garbage collector is held off meanwhile, because a collection
    freeing unrelated objects that point at ``None`` lowers its count too (seen once on a
    fresh install: a good PySide6 6.11.3 was refused). Only a loss of at least half of the
    calls counts as the bug; the probe's own damage is repaired.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = sys.getrefcount(obj)
        results = [call() for _ in range(n)]
        lost = before - sys.getrefcount(obj) + sum(r is obj for r in results)
        del results  # a broken binding's references are dropped here
    finally:
        if enabled:
            gc.enable()
    broken = lost >= n // 2
    if broken:
        for _ in range(lost):  # repair the probe's own damage
            _incref(obj)
    return broken


def _emit_drops_a_reference() -> bool:
    probe = _Probe()
    return _references_lost(True, probe.ping.emit)


EMIT_DROPS_REFERENCE = _emit_drops_a_reference()


def _void_drops_none() -> bool:
    probe = QObject()
    return _references_lost(None, lambda: probe.setObjectName("probe"))


VOID_DROPS_NONE = _void_drops_none()
BROKEN_BINDING = (
    "PySide6 {version} drops references to None on this Python and would crash the app; "
    "install another release: pip install 'PySide6!={version}'")


def emit(signal: Any, *args: Any) -> None:
    """``signal.emit(*args)``, compensating PySide6 6.12's lost reference to ``True``."""
    result = signal.emit(*args)
    if EMIT_DROPS_REFERENCE and result is True:
        _incref(result)
