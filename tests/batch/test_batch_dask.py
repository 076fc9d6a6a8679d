"""``segapp batch --scheduler``: a real in-process LocalCluster (scheduler and two one-thread
worker processes on localhost) gives the serial run's outputs, and survives a killed worker.

Skipped when dask.distributed is not installed (``pip install 'segapp[batch]'``).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed "
                                  "(pip install 'segapp[batch]')")

from benchmarks.batch import make_pairs  # noqa: E402
from segapp.batch import DaskExecutor, find_pairs, run_batch  # noqa: E402
from segapp.cli import main  # noqa: E402

SCALE = 0.15


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes × one thread; no dashboard; torn down after the module."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c:
        yield c


def assert_same_labels(a: Path, b: Path) -> None:
    names = sorted(p.name for p in a.glob("*.png"))
    assert names and names == sorted(p.name for p in b.glob("*.png"))
    for n in names:
        assert np.array_equal(np.asarray(Image.open(a / n)), np.asarray(Image.open(b / n))), n


def test_twenty_pairs_on_a_local_cluster_equal_the_serial_run(cluster, tmp_path, capsys):
    make_pairs(tmp_path / "in", 20, SCALE)
    assert main(["batch", str(tmp_path / "in"), "-o", str(tmp_path / "serial"), "-j", "1",
                 "--overlay", "-q"]) == 0
    code = main(["batch", str(tmp_path / "in"), "-o", str(tmp_path / "dask"), "--overlay",
                 "--scheduler", cluster.scheduler_address])
    assert code == 0
    err = capsys.readouterr().err
    assert "20/20" in err and f"dask scheduler {cluster.scheduler_address}" in err
    assert len(list((tmp_path / "dask").glob("*_overlay.png"))) == 20
    assert_same_labels(tmp_path / "serial", tmp_path / "dask")
    # the work really ran on the cluster's worker processes, not in this one
    rows = json.loads((tmp_path / "dask" / "report.json").read_text())["images"]
    pids = {int(r["worker"].rsplit(":", 1)[1]) for r in rows}
    assert os.getpid() not in pids and pids <= set(cluster_pids(cluster).values())


def cluster_pids(cluster) -> dict[str, int]:
    with distributed.Client(cluster.scheduler_address) as client:
        return client.run(os.getpid)


def test_killed_worker_loses_nothing(cluster, tmp_path):
    make_pairs(tmp_path / "in", 10, 0.3)
    serial = run_batch(find_pairs(tmp_path / "in"), tmp_path / "serial", progress=False)
    killed: dict[str, object] = {}
    with DaskExecutor(cluster.scheduler_address) as ex:
        client = ex.client

        def kill_a_busy_worker(row):
            if killed:
                return
            pids = client.run(os.getpid)
            busy = {w: keys for w, keys in client.processing().items() if keys}
            worker = next(iter(busy))
            killed.update(pid=pids[worker], keys=list(busy[worker]))
            os.kill(pids[worker], signal.SIGKILL)   # no goodbye to the scheduler

        result = run_batch(find_pairs(tmp_path / "in"), tmp_path / "dask", executor=ex,
                           progress=False, on_result=kill_a_busy_worker)
    assert killed, "no worker was busy when the first result came back"
    assert result.count("ok") == serial.count("ok") == 10 and result.failed == 0
    assert_same_labels(tmp_path / "serial", tmp_path / "dask")
    # the tasks the dead worker held were run again elsewhere (by the other worker or by
    # the one the nanny started in its place)
    by_stem = {Path(r["output"]).stem: r for r in result.rows}
    for key in killed["keys"]:
        stem = str(key).split("-", 1)[1].rsplit("-", 1)[0]
        assert by_stem[stem]["status"] == "ok"
        assert by_stem[stem]["worker"].rsplit(":", 1)[1] != str(killed["pid"]), stem


def _profiler_enabled() -> bool:
    import dask
    return dask.config.get("distributed.worker.profile.enabled")


def test_local_scheduler_option_starts_its_own_cluster(tmp_path, capsys):
    make_pairs(tmp_path / "in", 4, SCALE)
    assert main(["batch", str(tmp_path / "in"), "-o", str(tmp_path / "out"),
                 "--scheduler", "local", "-j", "2", "-q"]) == 0
    assert len(list((tmp_path / "out").glob("*.png"))) == 4
    with DaskExecutor(None, workers=2) as ex:
        flags = ex.client.run(_profiler_enabled)
        assert len(flags) == 2 and not any(flags.values())   # no 10 ms stack sampling


def _distributed_log_level() -> int:
    import logging
    return logging.getLogger("distributed.worker").getEffectiveLevel()


def test_local_cluster_workers_log_nothing_below_critical():
    """A worker's heartbeat error at Ctrl+C (a traceback after the one-line message) stays
    off the terminal; the user's process keeps its environment and its own logging."""
    import logging

    from segapp.batch.executors import QUIET_WORKERS_ENV
    before = logging.getLogger("distributed.worker").getEffectiveLevel()
    with DaskExecutor(None, workers=1) as ex:
        levels = ex.client.run(_distributed_log_level)
        assert list(levels.values()) == [logging.CRITICAL]
    assert QUIET_WORKERS_ENV not in os.environ
    assert logging.getLogger("distributed.worker").getEffectiveLevel() == before


def test_unreachable_scheduler_is_a_one_line_error(tmp_path, capsys):
    import socket
    with socket.socket() as s:   # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from segapp.errors import SegappError
    with pytest.raises(SegappError, match="cannot connect to the Dask scheduler"):
        DaskExecutor(f"tcp://127.0.0.1:{port}", timeout=1)
