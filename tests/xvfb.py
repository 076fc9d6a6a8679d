"""A private Xvfb display for tests that need a real X server (OpenGL for napari's canvas)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def running_xvfb() -> Iterator[str]:
    """Yield ``DISPLAY`` of a fresh Xvfb (or the session's own DISPLAY if one is set); skip the
    test with the reason when neither is possible. The server is stopped afterwards."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    exe = shutil.which("Xvfb")
    if exe is None:
        pytest.skip("no DISPLAY and Xvfb is not installed (apt-get install "
                    "$(cat .ci/apt-packages.txt))")
    # -displayfd: Xvfb picks a free display number and writes it to the pipe when ready.
    r, w = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(w), "-screen", "0", "1280x1024x24",
                             "-nolisten", "tcp"], pass_fds=(w,), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        number = fh.readline().strip().decode()
    try:
        if not number:
            pytest.skip("Xvfb could not be started")
        yield f":{number}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
