"""Fixtures shared by the test modules (tests/gui/conftest.py adds the app's)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings
from threadpoolctl import threadpool_limits

# Property tests draw the same examples on every run (a CI result must not depend on luck:
# test_lobpcg's random draws once hit a start that stagnates without a preconditioner);
# HYPOTHESIS_PROFILE=explore draws new ones, to look for failures on purpose.
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="module")
def one_blas_thread():
    """Dense references on one BLAS thread: on 2 busy cores a second OpenBLAS thread made the
    dense products and eigh of these tests ~5× slower (suite 21 s instead of 4.9 s).
    Use with ``pytestmark = pytest.mark.usefixtures("one_blas_thread")``."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield
