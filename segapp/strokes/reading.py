"""A scribble map read once into :class:`Strokes`: label ids, pixel sets, confidence weights.

Every method reads its strokes here (:func:`read_strokes`): the graph methods' constraint
operators (:func:`segapp.strokes.constraints.build_constraints`) and the landmark methods'
projected cliques start from the same :class:`Strokes`. A scribble map follows scikit-image's
``random_walker`` convention: 0 = unlabelled, 1..k = the user's label ids; pixels with the same
label are must-linked, pixels with different labels cannot-linked.

Soft strokes: a per-pixel confidence ``q ∈ [0, 1]`` gives every stroke pixel the weight ``√q``,
so a constraint edge between painted pixels i and j weighs ``√q_i √q_j`` times its full weight.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError


def fingerprint(*parts: np.ndarray | bytes, digest_size: int = 16) -> bytes:
    """blake2b digest of the parts' bytes, in order: tells an unchanged stroke pixel set (or
    strokes and options) from a changed one, and seeds what must not change while it does not.

    Arrays are hashed as their C-order bytes (so dtype matters), ``bytes`` as they are.
    """
    h = hashlib.blake2b(digest_size=digest_size)
    for part in parts:
        h.update(part if isinstance(part, bytes) else np.ascontiguousarray(part).tobytes())
    return h.digest()


@dataclass(frozen=True, eq=False)
class Strokes:
    """The strokes of one scribble map.

    Attributes
    ----------
    label_ids : tuple of int
        The user's label ids present, sorted; position ``a`` is label ``label_ids[a]``.
    sets : list of ndarray
        Flat pixel indices (sorted) of each label's strokes.
    weights : list of ndarray
        ``√q`` of each stroke pixel (ones without a confidence).
    soft : bool
        Whether a confidence was given (soft constraints).
    """

    label_ids: tuple[int, ...]
    sets: list[np.ndarray]
    weights: list[np.ndarray]
    soft: bool = False

    @property
    def k(self) -> int:
        """Number of labels."""
        return len(self.label_ids)

    @property
    def count(self) -> int:
        """Number of stroke pixels."""
        return int(sum(S.size for S in self.sets))

    def codes(self, labels: np.ndarray) -> np.ndarray:
        """Label positions 0..k−1 of ``labels`` (user ids, flat)."""
        return np.searchsorted(self.label_ids, labels)

    def kept(self, labels: np.ndarray) -> float:
        """Share of all stroke pixels that ``labels`` (user ids, flat) give their painted label."""
        return float(np.mean(np.concatenate(
            [labels[S] == i for i, S in zip(self.label_ids, self.sets)])))

    def keys(self) -> tuple[bytes, ...]:
        """One :func:`fingerprint` per label's stroke set."""
        return tuple(fingerprint(S) for S in self.sets)


def confidence_weights(confidence: np.ndarray | None, n: int,
                       sets: list[np.ndarray]) -> list[np.ndarray]:
    """Each label's stroke-pixel weights ``√q`` from a per-pixel confidence q in [0, 1].

    A clique edge between painted pixels i and j then weighs ``√q_i √q_j`` times its full
    weight (soft constraints); without a confidence every weight is 1.
    """
    if confidence is None:
        return [np.ones(S.size) for S in sets]
    q = np.asarray(confidence, dtype=np.float64).ravel()
    if q.size != n:
        raise InvalidInputError("confidence must have the image's shape")
    if np.any(~np.isfinite(q)) or np.any(q < 0) or np.any(q > 1):
        raise InvalidInputError("confidence values must lie in [0, 1]")
    return [np.sqrt(q[S]) for S in sets]


def _label_sets(scribbles: np.ndarray, n: int) -> tuple[tuple[int, ...], list[np.ndarray]]:
    """A label map's ids and per-label flat pixel indices.

    The map's values were checked where it entered (:func:`segapp.inputs.checks.check_label_map`:
    :meth:`segapp.methods.base.Method.run`, :class:`segapp.Session`); here only that it covers
    the ``n`` pixels and holds integers (or bools).
    """
    s = np.asarray(scribbles)
    if s.size != n:
        raise InvalidInputError(f"scribbles have {s.size} pixels but the image has {n}")
    if not (np.issubdtype(s.dtype, np.integer) or s.dtype == bool):
        raise InvalidInputError(f"scribbles must be an integer label map, got dtype {s.dtype} "
                                "(segapp.inputs.checks.check_label_map reads others)")
    flat = s.ravel()
    # Only the painted pixels are sorted (a stable sort keeps each label's indices ascending).
    where = np.flatnonzero(flat)
    values = flat[where]
    order = np.argsort(values, kind="stable")
    ids, starts = np.unique(values[order], return_index=True)
    bounds = list(starts[1:]) + [where.size]
    sets = {int(i): where[order[a:b]] for i, a, b in zip(ids, starts, bounds)}
    if not sets:
        raise InvalidInputError("no strokes: paint at least two labels")
    if len(sets) < 2:
        only = next(iter(sets))
        raise InvalidInputError(
            f"only label {only} has strokes: at least two different labels are needed")
    label_ids = tuple(sorted(sets))
    return label_ids, [sets[i] for i in label_ids]


def read_strokes(scribbles: np.ndarray, n: int,
                 confidence: np.ndarray | None = None) -> Strokes:
    """The :class:`Strokes` of a scribble map over ``n`` pixels (optional confidence in [0, 1]).

    Raises
    ------
    segapp.errors.InvalidInputError
        Wrong size, not an integer map (its values are checked where it entered:
        :func:`segapp.inputs.checks.check_label_map`), fewer than two labels, or a
        confidence of the wrong size or outside [0, 1].
    """
    label_ids, sets = _label_sets(scribbles, n)
    return Strokes(label_ids, sets, confidence_weights(confidence, n, sets),
                   soft=confidence is not None)
