"""Can Qt open a window here? Checked before any QApplication exists.

Qt reacts to a missing display or a missing system library by aborting the process (SIGABRT,
exit 134) with a message that is often misleading: Qt ≥ 6.5 names ``libxcb-cursor0`` whatever
library is actually missing. :func:`problem` finds the real cause first, so that ``segapp``
can print one line naming it and the Debian/Ubuntu packages to install, and exit non-zero.

Three checks, cheapest first; the module imports no Qt GUI code, since importing
``PySide6.QtGui`` itself fails when e.g. ``libEGL.so.1`` is missing:

1. PySide6 imports (``QtCore``) and, on Linux with the ``xcb`` platform, ``DISPLAY`` is set;
2. ``ldd`` of the Qt libraries and the ``xcb`` platform plugin reports no missing library
   (missing sonames are mapped to the Debian package that ships them);
3. a child process creates a ``QGuiApplication`` on the chosen platform: whatever else makes
   Qt abort (a broken plugin, a display that refuses connections) aborts the child only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: Shared library (soname) → Debian/Ubuntu package shipping it, for the libraries the PySide6
#: wheels' QtGui/QtWidgets and ``xcb`` platform plugin load (``ldd`` on PySide6 6.12). The same
#: packages are listed in ``.ci/apt-packages.txt`` and on README's apt line (a test checks).
LIB_PACKAGES: dict[str, str] = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libGLX.so.0": "libgl1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb.so.1": "libxcb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
}

#: Platforms that need neither a display nor X libraries.
HEADLESS_PLATFORMS = ("offscreen", "minimal", "vnc")
PROBE_TIMEOUT = 30.0  # seconds; the child needs ~0.3 s on the dev machine


def platform_name() -> str:
    """The Qt platform plugin that will be used (``QT_QPA_PLATFORM`` or the OS default)."""
    name = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0].split(";")[0].strip()
    if name:
        return name
    if sys.platform.startswith("linux"):
        return "wayland" if os.environ.get("WAYLAND_DISPLAY") and not os.environ.get(
            "DISPLAY") else "xcb"
    return {"darwin": "cocoa", "win32": "windows"}.get(sys.platform, "")


def missing_libraries(ldd_output: str) -> list[str]:
    """Sonames ``ldd`` reports as ``not found``, sorted and without repeats."""
    return sorted(set(re.findall(r"^\s*(\S+)\s+=>\s+not found", ldd_output, re.MULTILINE)))


def install_hint(libraries: list[str]) -> str:
    """``sudo apt-get install ...`` for these sonames (unknown ones are named as they are)."""
    packages = sorted({LIB_PACKAGES.get(lib, lib) for lib in libraries})
    return "sudo apt-get install " + " ".join(packages)


def _qt_files(platform: str) -> list[Path]:
    import PySide6  # only the package folder: loads no Qt library

    root = Path(PySide6.__file__).parent
    files = [root / "QtGui.abi3.so", root / "QtWidgets.abi3.so"]
    if platform == "xcb":
        files.append(root / "Qt" / "plugins" / "platforms" / "libqxcb.so")
    return [f for f in files if f.exists()]


def _ldd_problem(platform: str) -> str | None:
    ldd = shutil.which("ldd")
    if ldd is None or not sys.platform.startswith("linux"):
        return None
    files = _qt_files(platform)
    if not files:
        return None
    try:
        out = subprocess.run([ldd, *map(str, files)], capture_output=True, text=True,
                             timeout=PROBE_TIMEOUT).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    missing = missing_libraries(out)
    if not missing:
        return None
    return (f"Qt cannot start: missing system libraries {', '.join(missing)}; "
            f"install them with: {install_hint(missing)}")


_PROBE = ("import sys; from PySide6.QtGui import QGuiApplication; "
          "app = QGuiApplication(sys.argv[:1]); print(app.platformName())")


def _probe_problem(platform: str) -> str | None:
    """Start Qt in a child process; its abort is reported, ours never happens."""
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT, env={**os.environ, "QT_DEBUG_PLUGINS": "0"})
    except subprocess.TimeoutExpired:
        return f"Qt did not start within {PROBE_TIMEOUT:.0f} s on platform {platform!r}"
    except OSError as exc:
        return f"cannot check Qt: {exc}"
    if proc.returncode == 0:
        return None
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    # Qt's own first line says what failed ("could not connect to display", "could not load
    # the Qt platform plugin ..."); the rest is advice that is often wrong.
    reason = next((ln for ln in lines if "qt.qpa" in ln or "could not" in ln.lower()),
                  lines[-1] if lines else f"exit status {proc.returncode}")
    reason = re.sub(r"^qt\.qpa\.\w+:\s*", "", reason)
    return f"Qt cannot start on platform {platform!r}: {reason}"


def problem() -> str | None:
    """Why Qt cannot open a window here, in one line with the fix; None when it can.

    Returns
    -------
    str or None
        E.g. ``"no display: DISPLAY is not set (run segapp in a desktop session, ...)"`` or
        ``"Qt cannot start: missing system libraries libxcb-cursor.so.0; install them with:
        sudo apt-get install libxcb-cursor0"``.
    """
    try:
        import PySide6
        from . import qtcompat  # imports QtCore only, which needs no display library
    except ImportError as exc:
        return f"PySide6 cannot be imported ({exc}); install segapp with: pip install -e ."
    if qtcompat.VOID_DROPS_NONE:
        return qtcompat.BROKEN_BINDING.format(version=PySide6.__version__)
    platform = platform_name()
    if platform in HEADLESS_PLATFORMS:
        return None
    found = _ldd_problem(platform)
    if found:
        return found
    if platform == "xcb" and not os.environ.get("DISPLAY"):
        return ("no display: DISPLAY is not set (run segapp in a desktop session, or under "
                "xvfb-run; QT_QPA_PLATFORM=offscreen for tests)")
    return _probe_problem(platform)
