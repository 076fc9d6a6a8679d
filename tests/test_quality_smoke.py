"""End-to-end smoke test of ``benchmarks/quality.py --quick`` on a synthetic data directory.

The shared evaluation data may be missing in CI, so the data set is generated here in the
same layout (index.json, images, gt / masks). Only the harness is checked, not the numbers.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from benchmarks import peers, quality
from scenes import make_data  # noqa: E402  (tests/ is on sys.path)


@pytest.fixture
def fallback_segapp(monkeypatch):
    """Stand in for segapp if its engine is not importable yet: a nearest-stroke labeller."""
    ok, _ = peers.segapp_available()
    if ok:
        return
    from scipy import ndimage as ndi

    def nearest(image, scribbles, **_):
        _, (iy, ix) = ndi.distance_transform_edt(scribbles == 0, return_indices=True)
        return scribbles[iy, ix]
    monkeypatch.setattr(peers, "segapp_available", lambda: (True, ""))
    monkeypatch.setattr(peers, "probe_segapp", lambda method, options: None)
    monkeypatch.setattr(peers, "segapp_labels", nearest)
    monkeypatch.setattr(peers, "_segapp_session",
                        lambda image, method, options: lambda s: nearest(image, s))


def test_quick_run_produces_table_and_csv(tmp_path, capsys, fallback_segapp):
    data = make_data(tmp_path / "data")
    out = tmp_path / "out"
    rc = quality.main(["--quick", "--data", str(data), "--out", str(out),
                       "--methods", "fastge", "rw", "rw_tuned", "watershed", "grabcut"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "## bsds" in text and "## grabcut" in text and "| watershed |" in text
    for ds in ("bsds", "grabcut"):
        table = (out / f"quality_{ds}.md").read_text()
        assert "| fastge |" in table and "| rw |" in table and "NoC@85" in table
    with open(out / "per_stroke.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["dataset"] for r in rows} == {"bsds", "grabcut"}
    assert {"image", "method", "strokes", "iou", "time"} <= set(rows[0])
    # first round only: one row per (image, method), k strokes each
    bsds = [r for r in rows if r["dataset"] == "bsds" and r["method"] == "rw"]
    assert sorted(int(r["strokes"]) for r in bsds) == [2, 3]
    # the synthetic bands are easy: the harness must score the peers as (nearly) right
    assert all(float(r["iou"]) > 0.9 for r in rows if r["method"] == "watershed")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["quick"] and set(summary["summaries"]) == {"bsds", "grabcut"}


def test_failures_are_recorded_not_raised(tmp_path):
    data = make_data(tmp_path / "data")
    sample = next(quality.load(data, "grabcut"))
    calls = []

    def flaky(scribbles):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("solver did not converge")
        return np.where(scribbles == 2, 2, 1)    # labels only the strokes: many corrections
    recs = quality.run_interactive(sample, flaky, max_strokes=4)
    assert [r["strokes"] for r in recs] == [2, 3, 4]
    assert recs[1]["failed"] and "RuntimeError" in recs[1]["error"]
    assert recs[1]["iou"] == recs[0]["iou"]     # previous labels stand after a failure


def test_failed_first_round_scores_zero(tmp_path):
    data = make_data(tmp_path / "data")
    sample = next(quality.load(data, "bsds"))

    def broken(scribbles):
        raise RuntimeError("boom")
    recs = quality.run_interactive(sample, broken, max_strokes=3, first_round_only=True)
    assert recs[0]["failed"] and recs[0]["iou"] == 0.0


def test_curve_and_summary_conventions():
    recs = [dict(strokes=3, iou=0.5), dict(strokes=4, iou=0.9)]
    c = quality.curve(recs, 6)
    assert list(c) == [0.5, 0.5, 0.5, 0.9, 0.9, 0.9]
    rows = [dict(method="m", image="a", strokes=3, iou=0.5, time=1.0, failed=False),
            dict(method="m", image="a", strokes=4, iou=0.9, time=3.0, failed=True)]
    s = quality.summarise(rows, 6)["m"]
    assert s["first"] == 0.5 and s["at5"] == 0.9 and s["noc85"] == 4 and s["noc90"] == 4
    assert s["time"] == 2.0 and s["failures"] == 1 and s["noc85_never"] == 0


@pytest.mark.skipif(quality.find_data(None) is None, reason="shared evaluation data missing")
def test_shared_data_loads():
    data = quality.find_data(None)
    s = next(quality.load(data, "grabcut", scale=0.25, limit=1))
    assert s.binary and s.image.ndim == 3 and s.valid is not None and s.k == 2
