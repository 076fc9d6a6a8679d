"""One BLAS thread for the dense work of a solve, without searching the process each time.

threadpoolctl's ``threadpool_limits`` finds the process's BLAS libraries on every call
(``dl_iterate_phdr`` and a ``ctypes`` load of each: 1.7 ms on an idle machine, and an edit
entered it three to four times). A process's BLAS libraries do not change once NumPy, SciPy
and the direct solver's library are loaded, so one controller serves every call; it is made
again once after the direct solver's library arrives (:func:`segapp.solve.cholmod.loaded`).
"""

from __future__ import annotations

import contextlib
import threading

from threadpoolctl import ThreadpoolController

_lock = threading.Lock()
_made: dict[bool, ThreadpoolController] = {}   # keyed by whether CHOLMOD was loaded then


def one_blas_thread() -> contextlib.AbstractContextManager:
    """Within: every BLAS library of the process at one thread, restored on the way out.

    The dense work of a solve is tall-skinny (n × m, m ≤ 20) or small (p × p): a second
    OpenBLAS thread only adds synchronisation there (:meth:`segapp.methods.base.Method.run`).
    """
    from .solve import cholmod

    key = cholmod.loaded()
    with _lock:
        controller = _made.get(key)
        if controller is None:
            controller = _made[key] = ThreadpoolController()
    return controller.limit(limits=1, user_api="blas")
