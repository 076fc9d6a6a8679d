"""What a session answered before: the tie-breaker of stable refinement, and undo that gives back.

With ``stable_refinement`` (issue 10 item 4) FAST-GE's answer after an edit that adds strokes
depends on the answer before it: among near-equal cuts the rounding keeps the one closest to
it (:func:`segapp.partition.sweep_cut`, :func:`segapp.partition.stable_anchored_kmeans`). The
answer is then a function of the edit history, and two things follow:

- *the tie-breaker*: after an edit that only added strokes to the same labels, the last
  answer (with the new strokes painted in by the partition); after an erase, a cleared or a
  new label, none — the user asks to go back or to start a new split, not for stability;
- *going back gives back*: undo, redo, or painting the same strokes again must show the
  answer shown then for those strokes, not a fresh one (which can differ exactly where
  history mattered). The last :data:`REMEMBERED` answers are kept, keyed by the strokes and
  the solve options, compressed (label maps compress 20–100× with zlib level 1, a few ms per
  megapixel).
"""

from __future__ import annotations

import hashlib
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from .constraints import Constraints

#: Answers remembered per session (undo / redo depth that gives back exactly what was shown).
REMEMBERED = 32


def strokes_key(cons: Constraints, options: dict[str, Any]) -> bytes:
    """Fingerprint of the strokes (each label's pixel set) and the solve options."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((tuple(cons.label_ids), sorted(options.items()))).encode())
    for S in cons.sets:
        h.update(np.ascontiguousarray(S, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.digest()


class AnswerMemory:
    """The last answer and the recent answers by strokes, for one image graph.

    ``labels`` are flat arrays of the user's label ids.
    """

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        self._last: tuple[tuple[int, ...], np.ndarray, list[np.ndarray]] | None = None
        self._by_key: OrderedDict[bytes, tuple[int, np.dtype, bytes]] = OrderedDict()

    def tie_breaker(self, cons: Constraints) -> np.ndarray | None:
        """The last answer if this edit only added strokes to the same labels, else None."""
        last = self._last
        if last is None or last[0] != tuple(cons.label_ids):
            return None
        if not all(np.isin(old, new).all() for old, new in zip(last[2], cons.sets)):
            return None
        return last[1]

    def recall(self, key: bytes) -> tuple[int, np.ndarray] | None:
        """The answer given before for the same strokes and options — (number of vectors,
        labels) — or None."""
        found = self._by_key.get(key)
        if found is None:
            return None
        self._by_key.move_to_end(key)
        m, dtype, packed = found
        return m, np.frombuffer(zlib.decompress(packed), dtype=dtype).astype(np.int32)

    def remember(self, cons: Constraints, labels: np.ndarray, key: bytes | None = None,
                 m: int = 0) -> None:
        """Keep ``labels`` as the last answer and, with ``key``, as the answer for it (found
        with ``m`` vectors)."""
        self._last = (tuple(cons.label_ids), labels.copy(), cons.sets)
        if key is None:
            return
        dtype = np.min_scalar_type(int(labels.max(initial=0)))
        self._by_key[key] = (m, dtype, zlib.compress(labels.astype(dtype).tobytes(), 1))
        self._by_key.move_to_end(key)
        while len(self._by_key) > self.size:
            self._by_key.popitem(last=False)
