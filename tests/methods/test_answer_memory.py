"""Stable refinement's history (segapp.methods.answer_memory): the tie-breaker's rules by hand, the
memory's bound and round trip, and a session in which history matters — undo and redo give
back exactly the answers shown, which a fresh solve of the same strokes would not."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import segapp
from segapp.methods.answer_memory import AnswerMemory, strokes_key
from segapp.strokes.constraints import build_constraints

from scenes import voronoi_image  # noqa: E402  (tests/ is on sys.path)

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _cons(scribbles: np.ndarray):
    return build_constraints(scribbles.ravel(), np.ones(scribbles.size))


def _strokes() -> np.ndarray:
    s = np.zeros((6, 8), np.int32)
    s[1, 1:3] = 1
    s[4, 5:7] = 2
    return s


def test_the_tie_breaker_is_the_last_answer_only_after_added_strokes():
    memory = AnswerMemory()
    s = _strokes()
    assert memory.tie_breaker(_cons(s)) is None                     # nothing answered yet
    answer = np.repeat([1, 2], 24).astype(np.int32)
    memory.remember(_cons(s), answer)
    added = s.copy()
    added[2, 1] = 1
    np.testing.assert_array_equal(memory.tie_breaker(_cons(added)), answer)
    np.testing.assert_array_equal(memory.tie_breaker(_cons(s)), answer)   # same strokes
    erased = s.copy()
    erased[1, 1] = 0
    assert memory.tie_breaker(_cons(erased)) is None
    new_label = s.copy()
    new_label[3, 3] = 3
    assert memory.tie_breaker(_cons(new_label)) is None
    moved = s.copy()                                   # label 1 cleared, painted elsewhere
    moved[moved == 1] = 0
    moved[5, 0] = 1
    assert memory.tie_breaker(_cons(moved)) is None


def test_recall_round_trips_and_keeps_only_the_newest():
    memory = AnswerMemory(size=3)
    s = _strokes()
    cons = _cons(s)
    keys = [strokes_key(cons, {"seed": seed}) for seed in range(5)]
    assert len(set(keys)) == 5                          # the options are part of the key,
    assert (strokes_key(cons, {"seed": 0, "warm_start": True})   # but not the solver's reuse
            == strokes_key(cons, {"seed": 0, "warm_start": False}))
    rng = np.random.default_rng(0)
    answers = [rng.choice([1, 2, 300], 48).astype(np.int32) for _ in keys]
    priors = [np.log(rng.dirichlet(np.ones(3))) for _ in keys]
    for key, answer, prior in zip(keys, answers, priors):
        memory.remember(cons, answer, key, m=2, priors=prior)
    assert memory.recall(keys[0]) is None and memory.recall(keys[1]) is None
    for key, answer, prior in zip(keys[2:], answers[2:], priors[2:]):
        m, labels, _, got, _ = memory.recall(key)
        assert m == 2 and labels.dtype == np.int32
        np.testing.assert_array_equal(labels, answer)
        np.testing.assert_array_equal(got, prior)           # the log priors it was solved with
    other = s.copy()
    other[0, 0] = 2
    assert strokes_key(_cons(other), {"seed": 0}) != keys[0]


def _stroke_states(seed: int):
    """A Voronoi image (the fuzz's generator) and three stroke states, each adding a stroke."""
    rng = np.random.default_rng(seed)
    img = voronoi_image(rng)
    H, W = img.shape[:2]
    s = np.zeros((H, W), np.int64)
    s[rng.integers(0, H), : W // 2] = 1
    s[rng.integers(0, H), W // 2:] = 2
    states = [s.copy()]
    for _ in range(2):
        y, x = rng.integers(0, H), rng.integers(0, W)
        label = int(rng.integers(1, 3))
        s[y, x: x + rng.integers(2, W)] = label
        states.append(s.copy())
    return img, states


@functools.lru_cache(maxsize=1)
def _history_seed() -> int:
    """The first seed whose third state's answer with history differs from a fresh solve of
    the same strokes on over 5% of the pixels (searched, so that a change of the rounding does
    not leave the tests below on a scene where history does not matter)."""
    for seed in range(40):
        img, states = _stroke_states(seed)
        session = segapp.Session(img)
        shown = [session.update(s).labels for s in states][-1]
        if np.mean(shown != segapp.segment(img, states[-1]).labels) > 0.05:
            return seed
    raise AssertionError("no scene among 40 seeds where the edit history matters")


def _history_scene():
    """A scene (:func:`_stroke_states`) where the edit history changes the third answer."""
    return _stroke_states(_history_seed())


def test_undo_and_redo_give_back_the_answers_shown():
    img, states = _history_scene()
    session = segapp.Session(img)
    shown = [session.update(s).labels for s in states]
    fresh = segapp.segment(img, states[2]).labels
    assert np.mean(shown[2] != fresh) > 0.05            # history matters in this scene
    last = states[2].copy()                             # one more dot, agreeing with the answer
    y, x = np.argwhere(last == 0)[0]
    last[y, x] = shown[2][y, x]
    states.append(last)
    shown.append(session.update(last).labels)
    for back in (2, 1, 0):                              # undo ×3: state 2 from state 3 is
        np.testing.assert_array_equal(session.update(states[back]).labels, shown[back])
    for forward in (1, 2, 3):                           # an erase, yet gives back shown[2]
        np.testing.assert_array_equal(session.update(states[forward]).labels, shown[forward])


def test_a_stroke_after_an_undo_the_app_served_from_its_cache_extends_the_answer_on_screen():
    """The app shows an undone state's result from its own cache, without asking the session;
    the next stroke must be refined from that answer, as if the undone stroke had never been
    painted (not from the session's newest answer, nor from nothing)."""
    img, states = _history_scene()
    session = segapp.Session(img)
    shown = [session.update(s).labels for s in states]
    undone = states[2].copy()                            # a stroke the user will undo
    free = np.argwhere(undone == 0)
    undone[tuple(free[0])] = shown[2][tuple(free[0])]
    session.update(undone)
    # undo: the app shows shown[2] from its cache; then a new dot elsewhere
    new = states[2].copy()
    new[tuple(free[-1])] = 3 - shown[2][tuple(free[-1])]
    direct = segapp.Session(img)
    for s in states:
        direct.update(s)
    np.testing.assert_array_equal(session.update(new).labels, direct.update(new).labels)


def test_without_stable_refinement_a_session_is_history_free():
    img, states = _history_scene()
    session = segapp.Session(img, stable_refinement=False)
    for s in states:
        labels = session.update(s).labels
    np.testing.assert_array_equal(labels, segapp.segment(img, states[-1],
                                                         stable_refinement=False).labels)


@pytest.mark.parametrize("seed", range(6))
def test_going_back_to_any_earlier_strokes_gives_the_answer_shown(seed):
    """Property over random edit sequences (paint, erase): every stroke state visited again —
    in any order, with the solver's state moved on in between — gives the same labels."""
    rng = np.random.default_rng(seed)
    img = voronoi_image(rng)
    H, W = img.shape[:2]
    s = np.zeros((H, W), np.int64)
    s[rng.integers(0, H), : W // 2] = 1
    s[rng.integers(0, H), W // 2:] = 2
    session = segapp.Session(img)
    states, shown = [], []
    for _ in range(6):
        states.append(s.copy())
        shown.append(session.update(s).labels)
        y, x = rng.integers(0, H), rng.integers(0, W)
        if rng.random() < 0.75:
            s[y, x: x + rng.integers(2, W)] = int(rng.integers(1, 4))
        else:
            s[y: y + 4, x: x + 4] = 0
        if len(np.unique(s)) < 3:                       # keep two labels painted
            s[0, 0], s[-1, -1] = 1, 2
    for i in rng.permutation(len(states)):
        np.testing.assert_array_equal(session.update(states[i]).labels, shown[i])
