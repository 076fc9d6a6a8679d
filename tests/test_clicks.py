"""The standard click protocol and the refinement-stability metric of the quality benchmark.

References are computed independently of the code under test: error components by a
breadth-first flood fill, the click centre by measuring every pixel's distance to every
pixel outside its component (the image border included), drops by reading IoU lists by hand.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from benchmarks import quality
from benchmarks.robot import CLICK_RADIUS, next_click


# -- references ------------------------------------------------------------------------------
def components(mask: np.ndarray) -> list[list[tuple[int, int]]]:
    """4-connected components by BFS, ordered by their first pixel in raster order."""
    h, w = mask.shape
    seen = np.zeros_like(mask, bool)
    out = []
    for y in range(h):
        for x in range(w):
            if mask[y, x] and not seen[y, x]:
                comp, queue = [], deque([(y, x)])
                seen[y, x] = True
                while queue:
                    cy, cx = queue.popleft()
                    comp.append((cy, cx))
                    for ny, nx in ((cy - 1, cx), (cy + 1, cx), (cy, cx - 1), (cy, cx + 1)):
                        if 0 <= ny < h and 0 <= nx < w and mask[ny, nx] and not seen[ny, nx]:
                            seen[ny, nx] = True
                            queue.append((ny, nx))
                out.append(comp)
    return out


def brute_force_click(gt, pred, clicked, valid, radius):
    """Largest error component (background errors first on equal size), its deepest pixel."""
    best = None
    for region in (0, 1):
        wrong = (pred != gt + 1) & (gt == region) & (clicked == 0)
        if valid is not None:
            wrong &= valid
        for comp in components(wrong):
            if best is None or len(comp) > len(best[1]):
                best = (region, comp)
    if best is None:
        return None
    region, comp = best
    h, w = gt.shape
    inside = set(comp)
    outside = [(y, x) for y in range(-1, h + 1) for x in range(-1, w + 1) if (y, x) not in inside]
    out = np.array(outside, float)
    depth = {p: np.min(np.hypot(out[:, 0] - p[0], out[:, 1] - p[1])) for p in comp}
    top = max(depth.values())
    centre = min(p for p in comp if depth[p] == top)       # raster order = tuple order
    disc = np.zeros(gt.shape, bool)
    for y in range(h):
        for x in range(w):
            if (y - centre[0]) ** 2 + (x - centre[1]) ** 2 <= radius ** 2 and gt[y, x] == region \
                    and (valid is None or valid[y, x]):
                disc[y, x] = True
    return region, centre, disc


def distance_outside(mask):
    """Per pixel of ``mask``: Euclidean distance to the nearest pixel outside it or off-image."""
    h, w = mask.shape
    out = np.array([(y, x) for y in range(-1, h + 1) for x in range(-1, w + 1)
                    if not (0 <= y < h and 0 <= x < w and mask[y, x])], float)
    d = np.zeros(mask.shape)
    for y, x in zip(*np.nonzero(mask)):
        d[y, x] = np.min(np.hypot(out[:, 0] - y, out[:, 1] - x))
    return d


def brute_force_depth_click(gt, pred, clicked, valid, radius):
    """f-BRS / RITM rule: larger DT maximum of the FN vs FP masks, clicked pixels excluded."""
    best = None
    for region in (0, 1):
        wrong = (pred != gt + 1) & (gt == region)
        if valid is not None:
            wrong &= valid
        d = distance_outside(wrong) * (clicked == 0)
        if d.max() > 0 and (best is None or d.max() > best[1].max()):
            best = (region, d)
    if best is None:
        return None
    region, d = best
    centre = min(zip(*np.nonzero(d == d.max())))
    yy, xx = np.mgrid[:gt.shape[0], :gt.shape[1]]
    disc = ((yy - centre[0]) ** 2 + (xx - centre[1]) ** 2 <= radius ** 2) & (gt == region)
    if valid is not None:
        disc &= valid
    return region, (int(centre[0]), int(centre[1])), disc


# -- click placement -------------------------------------------------------------------------
def _random_case(seed):
    rng = np.random.default_rng(seed)
    h, w = rng.integers(8, 22, 2)
    gt = (rng.random((h, w)) < 0.4).astype(np.int32)
    gt[2:h - 2, 2:w // 2] = 1                     # a solid object part: deep FN regions
    pred = np.where(rng.random((h, w)) < 0.7, gt + 1, 2 - gt)
    clicked = np.where(rng.random((h, w)) < 0.05, 1, 0)
    valid = rng.random((h, w)) > 0.1 if seed % 2 else None
    return gt, pred, clicked, valid, int(rng.integers(1, 4))


@pytest.mark.parametrize("seed", range(12))
def test_depth_rule_matches_brute_force_on_random_masks(seed):
    gt, pred, clicked, valid, radius = _random_case(seed)
    ref = brute_force_depth_click(gt, pred, clicked, valid, radius)
    got = next_click(gt, pred, clicked, valid, radius, rule="depth")
    if ref is None:
        assert got is None
        return
    region, centre, disc = ref
    assert (got.label, got.centre) == (region + 1, centre)
    np.testing.assert_array_equal(got.mask, disc)


@pytest.mark.parametrize("seed", range(12))
def test_next_click_matches_brute_force_on_random_masks(seed):
    gt, pred, clicked, valid, radius = _random_case(seed)
    ref = brute_force_click(gt, pred, clicked, valid, radius)
    got = next_click(gt, pred, clicked, valid, radius)
    if ref is None:
        assert got is None
        return
    region, centre, disc = ref
    assert got.label == region + 1
    assert got.kind == ("positive" if region == 1 else "negative")
    assert got.centre == centre
    np.testing.assert_array_equal(got.mask, disc)


def test_first_click_is_positive_at_the_object_centre():
    gt = np.zeros((40, 60), np.int32)
    gt[10:31, 20:41] = 1                          # 21×21 square, centre (20, 30)
    click = next_click(gt, np.ones_like(gt))      # "all background" before any click
    assert click.kind == "positive" and click.label == 2 and click.centre == (20, 30)
    assert click.mask.sum() == np.sum(np.hypot(*np.mgrid[-5:6, -5:6]) <= CLICK_RADIUS)
    assert next_click(gt, gt + 1) is None         # nothing wrong, no click


def test_rules_differ_on_a_large_thin_error_and_a_small_round_one():
    gt = np.zeros((40, 60), np.int32)
    gt[5:35, 5:25] = 1                            # object: 30×20
    pred = gt + 1
    pred[5:35, 5:8] = 1                           # thin FN strip: 90 px, depth 1.x
    pred[15:23, 40:48] = 2                        # round-ish FP square: 64 px, depth 4
    area = next_click(gt, pred, rule="area")
    depth = next_click(gt, pred, rule="depth")
    assert area.kind == "positive" and 5 <= area.centre[0] < 35 and area.centre[1] < 8
    assert depth.kind == "negative" and 15 <= depth.centre[0] < 23 and depth.centre[1] >= 40
    with pytest.raises(ValueError):
        next_click(gt, pred, rule="nearest")


def test_click_disc_stays_on_the_clicked_side_of_the_boundary():
    gt = np.zeros((30, 30), np.int32)
    gt[:, 15:] = 1
    pred = np.ones_like(gt)
    pred[:, 15:18] = 1                            # only a 3-px wide strip of the object is wrong
    pred[:, 18:] = 2
    click = next_click(gt, pred)
    assert click.kind == "positive"
    assert click.mask.any() and np.all(gt[click.mask] == 1)


# -- the click loop --------------------------------------------------------------------------
def _sample(valid=None):
    gt = np.zeros((40, 60), np.int32)
    gt[10:30, 25:45] = 1
    img = np.zeros((40, 60, 3), np.float32)
    return quality.Sample("t", img, gt, valid, binary=True)


def test_run_clicks_first_click_needs_no_method_and_perfect_labeller_stops():
    smp = _sample()
    calls = []

    def oracle(seeds):
        calls.append(seeds.copy())
        return smp.gt + 1
    recs = quality.run_clicks(smp, oracle, max_clicks=20)
    assert [r["kind"] for r in recs] == ["one-label", "negative"]
    assert recs[0]["iou"] == pytest.approx(400 / 2400)      # everything called object
    assert recs[1]["iou"] == 1.0 and len(calls) == 1
    assert set(np.unique(calls[0])) == {0, 1, 2}


def test_run_clicks_counts_failures_and_keeps_previous_labels():
    smp = _sample()

    def broken(seeds):
        raise RuntimeError("no")
    recs = quality.run_clicks(smp, broken, max_clicks=4)
    assert len(recs) == 4 and all(r["failed"] for r in recs[1:])
    assert all(r["iou"] == recs[0]["iou"] for r in recs)


def test_run_clicks_rejects_k_way_samples():
    smp = quality.Sample("k", np.zeros((4, 4, 3)), np.zeros((4, 4), int), None, binary=False)
    with pytest.raises(ValueError):
        quality.run_clicks(smp, lambda s: s)


# -- stability -------------------------------------------------------------------------------
def test_drops_counted_by_hand():
    kinds = ["initial"] + ["corrective"] * 5
    ious = [0.50, 0.60, 0.53, 0.70, 0.66, 0.40]   # drops: 0.07 (yes), 0.04 (no), 0.26 (yes)
    recs = [dict(strokes=2 + i, iou=v, kind=k) for i, (v, k) in enumerate(zip(ious, kinds))]
    assert quality.drops(recs) == (2, 5)
    assert quality.drops(recs, threshold=0.3) == (0, 5)
    assert quality.drops(recs[:1]) == (0, 0)
    # the trivial one-label answer before the method's first is not an edit
    clicks = [dict(strokes=1, iou=0.9, kind="one-label"), dict(strokes=2, iou=0.2, kind="negative"),
              dict(strokes=3, iou=0.1, kind="positive")]
    assert quality.drops(clicks) == (1, 1)


def test_summary_and_table_report_the_drop_share():
    rows = [dict(method="m", image=img, strokes=2 + i, iou=v, time=0.1, failed=False,
                 kind="initial" if i == 0 else "corrective")
            for img, ious in (("a", [0.5, 0.4, 0.6]), ("b", [0.5, 0.6, 0.7]))
            for i, v in enumerate(ious)]
    s = quality.summarise(rows, 20)["m"]
    assert (s["drops"], s["edits"]) == (1, 4) and s["drop_share"] == pytest.approx(0.25)
    text = quality.table({"m": s}, 20)
    assert "25.0% (1/4)" in text
    clicks = quality.table({"m": s}, 20, protocol="clicks")
    assert "IoU@5" not in clicks and "s / click" in clicks


def test_click_protocol_through_the_command_line(tmp_path, capsys):
    from scenes import make_data
    data = make_data(tmp_path / "data")
    out = tmp_path / "out"
    rc = quality.main(["--protocol", "clicks", "--quick", "--data", str(data), "--out", str(out),
                       "--methods", "rw", "watershed"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "bsds skipped" in text and "## grabcut (clicks)" in text
    table = (out / "clicks_grabcut.md").read_text()
    assert "| rw |" in table and "NoC@90" in table
    assert (out / "per_click.csv").is_file() and (out / "summary_clicks.json").is_file()
