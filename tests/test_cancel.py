"""segapp.cancel: what ``cancel=`` accepts, and that every method stops on it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import segapp
from segapp.cancel import NEVER, CancelToken
from segapp.errors import Cancelled, InvalidInputError
from segapp.methods import REGISTRY


def _event(is_set: bool) -> threading.Event:
    e = threading.Event()
    if is_set:
        e.set()
    return e


@pytest.mark.parametrize("cancel, stops", [
    (None, False),
    (lambda: False, False),
    (lambda: True, True),
    (lambda: 1, True),                       # truthy, as `if cancel():` treated it
    (_event(False), False),
    (_event(True), True),
    (_event(True).is_set, True),             # the bound method the app passes
    (CancelToken(lambda: True), True),
    (NEVER, False),
])
def test_token_of_what_callers_pass(cancel, stops):
    token = CancelToken.of(cancel)
    assert token.requested() is stops and token() is stops
    if stops:
        with pytest.raises(Cancelled):
            token.check()
    else:
        token.check()


def test_a_token_is_passed_through_and_follows_its_event():
    e = threading.Event()
    token = CancelToken.of(e)
    assert CancelToken.of(token) is token
    token.check()
    e.set()
    with pytest.raises(Cancelled):
        token.check()


@pytest.mark.parametrize("bad", [5, "yes", 1.0, object()])
def test_anything_else_is_an_input_error(bad):
    with pytest.raises(InvalidInputError, match="cancel"):
        CancelToken.of(bad)


def _scene():
    rng = np.random.default_rng(3)
    img = np.zeros((24, 30, 3), np.float32)
    img[:, 15:] = (0.8, 0.3, 0.2)
    img = np.clip(img + rng.normal(0, 0.05, img.shape), 0, 1).astype(np.float32)
    s = np.zeros((24, 30), int)
    s[5, 2:8], s[18, 20:27] = 1, 2
    return img, s


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_method_stops_on_a_set_event_and_recovers(name):
    img, s = _scene()
    session = segapp.Session(img, method=name)
    with pytest.raises(Cancelled):
        session.update(s, cancel=_event(True))
    calls = []
    result = session.update(s, cancel=lambda: calls.append(1) and False)
    assert calls, "the solve never polled cancel"
    assert set(np.unique(result.labels)) <= {1, 2}


# -- every method takes every cancel-like value (issue 24: an Event raised TypeError in the
# landmark methods, which took only a bare callable) -------------------------------------------
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_method_takes_an_event_a_callable_and_a_token(name):
    import threading

    from segapp import methods
    from segapp.cancel import CancelToken
    from segapp.errors import Cancelled

    rng = np.random.default_rng(0)
    img = np.clip(rng.random((30, 40)) * 0.3 + (np.arange(40) >= 20) * 0.5, 0, 1)
    s = np.zeros((30, 40), int)
    s[5, 3:10], s[25, 25:35] = 1, 2
    method = methods.get(name).from_image(img)
    for cancel in (threading.Event(), lambda: False, CancelToken(lambda: False), None):
        assert method.update(s, cancel=cancel).labels.shape == s.shape
    stop = threading.Event()
    stop.set()
    for cancel in (stop, lambda: True, CancelToken(lambda: True)):
        with pytest.raises(Cancelled):
            methods.get(name).from_image(img).update(s, cancel=cancel)


def test_wait_for_ends_on_the_event_on_stop_or_after_the_time():
    import threading
    import time

    from segapp.cancel import wait_for

    ev = threading.Event()
    threading.Timer(0.05, ev.set).start()
    assert wait_for(ev, 5.0, lambda: False)
    t = time.perf_counter()
    assert not wait_for(threading.Event(), 5.0, lambda: True)
    assert not wait_for(threading.Event(), 0.1, lambda: False)
    assert time.perf_counter() - t < 2.0
