"""Kill trials (issue 30): SIGKILL at random moments never leaves a partial file under a final
name, segapp removes its own leftovers and nothing else, and a killed batch takes its workers
with it. Each test runs subprocesses and is bounded (≤ 60 s)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from segapp import io

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc, kills with SIGKILL")


def _children(pid: int) -> set[int]:
    """Process ids whose parent is ``pid``."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != b"Z":
                out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.fixture
def photos(tmp_path: Path) -> Path:
    d = tmp_path / "photos"
    d.mkdir()
    rng = np.random.default_rng(0)
    for i in range(12):
        img = np.zeros((240, 320, 3), np.uint8)
        img[:, 160:] = 200
        img = np.clip(img + rng.normal(0, 12, img.shape), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(d / f"p{i}.png")
        s = np.zeros((240, 320), np.uint8)
        s[40:200, 40], s[40:200, 280] = 1, 2
        Image.fromarray(s).save(d / f"p{i}_scribbles.png")
    return tmp_path


def test_a_killed_batch_takes_its_pool_workers_with_it(photos):
    """#13 orphans: kill -9 of `segapp batch -j 2`'s main process left 2 pool workers
    (158–183 MB each) and the resource tracker running, in 4 of 4 trials."""
    proc = subprocess.Popen([sys.executable, "-m", "segapp.cli", "batch", "photos", "-o", "out",
                             "-j", "2", "-q", "--method", "ccskl"], cwd=photos,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        family: set[int] = set()
        while time.monotonic() < deadline:        # the pool and the resource tracker
            family |= _children(proc.pid)
            if len([p for p in family if _alive(p)]) >= 3:
                break
            time.sleep(0.05)
        assert len(family) >= 2, "the pool did not start"
        time.sleep(0.5)                            # the workers are busy with images
        family |= _children(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in family if _alive(p)]
    for p in left:                                  # do not leave them to the next test
        os.kill(p, signal.SIGKILL)
    assert left == []


_WRITER = textwrap.dedent("""
    import sys, numpy as np
    from segapp import io
    rng = np.random.default_rng(int(sys.argv[2]))
    n = 0
    while True:                     # sets of two noisy PNGs (~0.4 MB each), one after another
        n += 1
        a = rng.integers(0, 256, (360, 400, 3), np.uint8)
        a[0, 0] = n % 256
        io.write_pngs_atomic([(sys.argv[1] + "/a.png", a), (sys.argv[1] + "/b.png", a)])
""")


def test_a_writer_killed_at_random_moments_never_leaves_a_partial_file(tmp_path):
    """56 kill trials of the audit: no partial file under a final name. Here 12 kills of a
    writer of two-file sets at random moments: a.png and b.png are each absent or a complete
    PNG, what stays besides them is segapp's own leftovers, and those are removed — while a
    live writer's temporary survives the cleanup."""
    rng = np.random.default_rng(1)
    leftovers = 0
    for trial in range(12):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), str(trial)])
        time.sleep(1.0 + rng.random() * 1.5)
        proc.kill()
        proc.wait()
        for name in ("a.png", "b.png"):
            if (tmp_path / name).exists():
                with Image.open(tmp_path / name) as img:
                    img.load()                     # complete, or this raises
        others = {p.name for p in tmp_path.iterdir()} - {"a.png", "b.png"}
        assert all(io.atomic.TEMPORARY.fullmatch(n) for n in others), others
        leftovers += len(others)
        removed = io.remove_stale_temporaries(tmp_path)
        assert len(removed) == len(others)
        assert {p.name for p in tmp_path.iterdir()} <= {"a.png", "b.png"}
    assert leftovers > 0, "no kill landed while a set was being written"


def test_the_cleanup_never_removes_a_live_writers_temporary(tmp_path):
    """A second `segapp batch` into the same folder, started 0.64 s after the first, failed an
    image ("cannot write ...: no such file") in 2 of 13 tries: its cleanup removed the first
    one's temporaries. A writer that is alive keeps its lock and its file (a file the
    cleaner takes between its creation and its lock is one the writer then replaces)."""
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), "0"],
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and proc.poll() is None:
            io.remove_stale_temporaries(tmp_path)
        assert proc.poll() is None, proc.stderr.read().decode()   # no write failed
        assert (tmp_path / "a.png").is_file() and (tmp_path / "b.png").is_file()
    finally:
        proc.kill()
        proc.wait()


def test_two_batches_into_one_folder_both_succeed(photos):
    """The audit's second batch into the same folder, 0.64 s after the first."""
    argv = [sys.executable, "-m", "segapp.cli", "batch", "photos", "-o", "out", "-j", "1",
            "-q", "--overlay", "--overwrite"]
    first = subprocess.Popen(argv, cwd=photos, stderr=subprocess.PIPE)
    time.sleep(0.64)
    second = subprocess.run(argv, cwd=photos, stderr=subprocess.PIPE, timeout=60)
    first_err = first.communicate(timeout=60)[1]
    assert (first.returncode, second.returncode) == (0, 0), (first_err, second.stderr)
