"""Every declared option range, at and across its bounds (issue 30).

Across a bound (the next representable value outside it): refused before any work with a
one-line :class:`~segapp.errors.InvalidInputError` naming the option. At the bounds, alone and
combined (hypothesis draws combinations of boundary values per method): an update either
answers — every painted pixel keeps its label, finite eigenvectors, in bounded time — or is
refused by a declared rule (its text, :data:`segapp.options.RULES`) or ends in a
:class:`~segapp.errors.SolverError` (a cap reached); never another exception.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import segapp
from segapp.errors import InvalidInputError, SolverError
from segapp.methods import REGISTRY, options_of
from segapp.options import RULES, Option

H, W = 14, 18
_rng = np.random.default_rng(0)
IMG = np.zeros((H, W, 3))
IMG[:, W // 2:] = (0.2, 0.5, 0.9)
IMG[2 * H // 3:] = (0.1, 0.8, 0.2)
IMG = np.clip(IMG + _rng.normal(0, 0.03, IMG.shape), 0, 1)
S = np.zeros((H, W), np.int64)
S[2:7, 3], S[2:7, W - 4], S[H - 3, 5:14] = 1, 2, 3


def _inside(o: Option) -> list:
    """The values at the option's bounds (and its choices, None where allowed)."""
    if o.type is bool:
        return [True, False]
    if o.type is str and o.choices is None:
        return [o.default]  # a free string (a file's path, fastge's carry): no bounds
    values = list(o.choices) if o.choices is not None else \
        [o.type(b) for b in (o.low, o.high) if b is not None]
    return values + ([None] if o.none_ok else [])


def _across(o: Option) -> list:
    """The nearest values beyond each bound."""
    out = []
    if o.choices is None and o.type in (int, float):
        if o.low is not None:
            out.append(o.low - 1 if o.type is int else math.nextafter(o.low, -math.inf))
        if o.high is not None:
            out.append(o.high + 1 if o.type is int else math.nextafter(o.high, math.inf))
    return out


ACROSS = [(m, o, v) for m in REGISTRY for o in options_of(m) for v in _across(o)]


@pytest.mark.parametrize("method, option, value", ACROSS,
                         ids=[f"{m}-{o.name}={v!r}" for m, o, v in ACROSS])
def test_a_value_just_beyond_a_bound_is_refused_before_any_work(method, option, value):
    with pytest.raises(InvalidInputError) as info:
        segapp.Session(IMG, method, **{option.name: value})
    text = str(info.value)
    assert text.startswith(option.name) and "\n" not in text


def _rule_texts() -> tuple[str, ...]:
    return tuple(r.text for r in RULES)


def _check_outcome(method: str, options: dict) -> None:
    t = time.process_time()
    try:
        res = segapp.Session(IMG, method, **options).update(S)
    except InvalidInputError as exc:
        text = str(exc)
        assert "\n" not in text
        # in range, a value is refused only by a declared rule (or a named data limit)
        assert text.startswith(_rule_texts()) or "landmark" in text or "strokes" in text, \
            (options, text)
        return
    except SolverError as exc:
        assert "\n" not in str(exc)
        return
    assert time.process_time() - t < 120, options
    painted = S > 0
    assert np.array_equal(res.labels[painted], S[painted]), options
    assert np.all(np.isfinite(res.eigenvectors)), options


@pytest.mark.parametrize("method", list(REGISTRY))
def test_each_bound_alone_answers_or_is_refused_by_a_rule(method):
    """Every option at each of its bounds, the others at their defaults."""
    for o in options_of(method):
        for v in _inside(o):
            if v != o.default:
                _check_outcome(method, {o.name: v})


def _combination(method: str):
    options = options_of(method)
    return st.dictionaries(st.sampled_from([o.name for o in options]), st.none(),
                           min_size=2, max_size=4).flatmap(
        lambda names: st.fixed_dictionaries(
            {n: st.sampled_from(_inside(next(o for o in options if o.name == n)))
             for n in names}))


@pytest.mark.parametrize("method", list(REGISTRY))
def test_combinations_of_bounds_answer_or_are_refused_by_a_rule(method):
    @settings(max_examples=12, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(_combination(method))
    def check(options):
        _check_outcome(method, options)
    check()
