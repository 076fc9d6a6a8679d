"""Fixtures shared by the test modules (tests/gui/conftest.py adds the app's)."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(scope="module")
def one_blas_thread():
    """Dense references on one BLAS thread: on 2 busy cores a second OpenBLAS thread made the
    dense products and eigh of these tests ~5× slower (suite 21 s instead of 4.9 s).
    Use with ``pytestmark = pytest.mark.usefixtures("one_blas_thread")``."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
