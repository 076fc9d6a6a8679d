"""What a session answered before: the tie-breaker of stable refinement, and undo that gives back.

With ``stable_refinement`` (issue 10 item 4) FAST-GE's answer after an edit that adds strokes
depends on the answer before it: among near-equal cuts the rounding keeps the one closest to
it (:func:`segapp.partition.sweep_cut`, :func:`segapp.partition.stable_anchored_kmeans`). The
answer is then a function of the edit history, and two things follow:

- *the tie-breaker*: the newest answer whose strokes this edit only adds to, for the same
  labels (the new strokes are painted in by the partition). That is the last answer after an
  added stroke; after an undo the app served from its own cache, the answer on screen; after
  an erase, the newest answer from before the erased stroke, if any; after a cleared or a
  new label, none (a new split is asked for, not stability);
- *going back gives back*: undo, redo, or painting the same strokes again must show the
  answer shown then for those strokes, not a fresh one (which can differ exactly where
  history mattered). The last :data:`REMEMBERED` answers are kept, keyed by the strokes and
  the solve options that can change the answer, zlib-compressed (the coffee sample's
  5-label answer at 240K px: 43×, 0.4 ms).

Why the app keeps :class:`segapp.live.ResultCache` besides this (issue 24 item 6, kept on
purpose): the two are layers of one undo, not two copies of it. This memory is the method's,
in every Session (library, command line, napari, app): labels only, and a recalled answer still
solves its eigenvectors, so it makes undo *exact*, not instant. The app's cache holds finished
results of every method (landmark methods have no memory here) with heat maps and colour
ranges, by the window's tag, so undo shows them *at once* without reaching the Session; when it
has evicted a result (bounded in bytes), the re-solve lands here and gives back the same labels.
Holding whole Segmentations here instead would keep eigenvectors per answer in every Session
(12 MP × k float32 each) for a need only the app has.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

from ..strokes.constraints import Constraints
from ..strokes.reading import fingerprint

#: Answers remembered per session (undo / redo depth that gives back exactly what was shown).
REMEMBERED = 32


#: Options that change how an answer is reached, not which one (the warm ≈ cold contract).
NOT_IN_KEY = frozenset({"warm_start"})


def strokes_key(cons: Constraints, options: dict[str, Any]) -> bytes:
    """Fingerprint of the strokes (each label's pixel set) and the solve options that can
    change the answer."""
    chosen = sorted((k, v) for k, v in options.items() if k not in NOT_IN_KEY)
    sets = [part for S in cons.sets for part in (np.asarray(S, dtype=np.int64), b"|")]
    return fingerprint(repr((tuple(cons.label_ids), chosen)).encode(), *sets)


#: The slot of an answer that is not to be recalled (no strokes fingerprint matches it).
UNKEYED = b""


class AnswerMemory:
    """Recent answers for one image graph, newest last, by strokes and options.

    ``labels`` are flat arrays of the user's label ids.
    """

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        # key → (label ids, stroke sets, vectors used, dtype, zlib-packed labels, zlib-packed
        # labels the colour models learned from or None, the labels' log prior probabilities
        # of the colour posteriors or None)
        self._answers: OrderedDict[bytes, tuple] = OrderedDict()

    def tie_breaker(self, cons: Constraints) -> np.ndarray | None:
        """The newest answer whose strokes this edit only adds to (same labels), else None.

        Usually the last answer; after an undo that the caller served from its own cache (the
        app), the answer of the strokes it went back to, which is the one on screen.
        """
        ids = tuple(cons.label_ids)
        for label_ids, sets, _, dtype, packed, *_ in reversed(self._answers.values()):
            if label_ids == ids and all(np.isin(old, new).all()
                                        for old, new in zip(sets, cons.sets)):
                return _unpack(dtype, packed)
        return None

    def recall(self, key: bytes) -> tuple[int, np.ndarray, np.ndarray | None,
                                          np.ndarray | None, np.ndarray | None] | None:
        """The answer given before for the same strokes and options — (number of vectors,
        labels, labels its colour models learned from or None, the labels' log prior
        probabilities its colour posteriors used or None, the pixels it took from the
        labels around them or None) — or None."""
        found = self._answers.get(key)
        if found is None:
            return None
        self._answers.move_to_end(key)
        _, _, m, dtype, packed, learned, priors, absorbed = found
        return (m, _unpack(dtype, packed), None if learned is None else _unpack(dtype, learned),
                priors, None if absorbed is None else _unpack(np.dtype(bool), absorbed) > 0)

    def remember(self, cons: Constraints, labels: np.ndarray, key: bytes | None = None,
                 m: int = 0, learned: np.ndarray | None = None,
                 priors: np.ndarray | None = None, absorbed: np.ndarray | None = None
                 ) -> None:
        """Keep ``labels`` as the newest answer, for ``key`` (found with ``m`` vectors and
        colour models that learned from the answer ``learned``, if any, with the labels' log
        prior probabilities ``priors``, if any, its islands given to the labels around them
        ``absorbed``, if any); without a key (soft strokes: not recalled) only as the
        tie-breaker."""
        dtype = np.min_scalar_type(int(labels.max(initial=0)))
        pack = lambda a: zlib.compress(a.astype(dtype).tobytes(), 1)  # noqa: E731
        entry = (tuple(cons.label_ids), cons.sets, m, dtype, pack(labels),
                 None if learned is None else pack(learned),
                 None if priors is None else np.array(priors, copy=True),
                 None if absorbed is None else zlib.compress(absorbed.tobytes(), 1))
        self._answers.pop(UNKEYED, None)
        key = UNKEYED if key is None else key
        self._answers[key] = entry
        self._answers.move_to_end(key)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)



def _unpack(dtype: np.dtype, packed: bytes) -> np.ndarray:
    return np.frombuffer(zlib.decompress(packed), dtype=dtype).astype(np.int32)
