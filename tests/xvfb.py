"""A private Xvfb display for tests that need a real X server (OpenGL for napari's canvas)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def running_xvfb(reuse_display: bool = True) -> Iterator[str]:
    """Yield ``DISPLAY`` of a fresh Xvfb (or, with ``reuse_display``, the session's own DISPLAY
    if one is set); skip the test with the reason when that is impossible. The server is
    stopped afterwards."""
    if reuse_display and os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    exe = shutil.which("Xvfb")
    if exe is None:
        pytest.skip("no DISPLAY and Xvfb is not installed (apt-get install "
                    "$(cat .ci/apt-packages.txt))")
    # -displayfd: Xvfb picks a free display number and writes it to the pipe when ready.
    # -noreset: by default an X server resets when its last client leaves, and a client
    # whose connection it has accepted but not yet set up is dropped by that reset
    # (XOpenDisplay fails: "Connection reset by peer"). Short-lived clients come and go
    # on this display (vispy runs xdpyinfo for every canvas; the xdotool calls; the probe
    # before the app starts), and on a loaded machine the server often sees one leave and
    # the next arrive in the same turn: the napari child's Qt then had no X connection, so
    # no OpenGL for the whole process ("4 failed, 7 errors"). Without the reset there is
    # no such window.
    r, w = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(w), "-noreset", "-screen", "0",
                             "1280x1024x24", "-nolisten", "tcp"], pass_fds=(w,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.close(w)
    number = b""
    try:
        with os.fdopen(r, "rb") as fh:
            number = fh.readline().strip()
    except OSError:
        pass
    try:
        if not number:
            err = proc.stderr.read().decode(errors="replace")[-500:] \
                if proc.poll() is not None else ""
            pytest.skip(f"Xvfb could not be started: {err or 'no display number reported'}")
        yield f":{number.decode()}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
