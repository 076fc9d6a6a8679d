"""Tests of the benchmark's simulated annotator and metrics (synthetic label maps only)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from benchmarks.robot import (Robot, binary_iou, iou, largest_error_component,
                              least_confident_area, mean_iou, noc, paint)


def three_regions() -> np.ndarray:
    """80×120 map: left band 0, right band 1, a disc of 2 inside band 1, thin strip of 0."""
    gt = np.zeros((80, 120), np.int32)
    gt[:, 60:] = 1
    yy, xx = np.mgrid[:80, :120]
    gt[(yy - 40) ** 2 + (xx - 95) ** 2 <= 12 ** 2] = 2
    return gt


def boundary_free(stroke_mask: np.ndarray, area: np.ndarray) -> bool:
    """Stroke inside ``area`` and not touching its boundary pixels (4-neighbours outside)."""
    inner = ndi.binary_erosion(np.pad(area, 1), structure=ndi.generate_binary_structure(2, 1))
    return bool(np.all(inner[1:-1, 1:-1][stroke_mask]))


def test_first_round_one_stroke_per_region_inside():
    gt = three_regions()
    strokes = Robot(seed=0).first_round(gt)
    assert [s.label for s in strokes] == [1, 2, 3]
    for s in strokes:
        area = gt == s.label - 1
        assert s.mask.any()
        assert np.all(area[s.mask]), "stroke leaves its region"
        assert boundary_free(s.mask, area), "stroke touches a region boundary"
        assert s.radius == 2
        assert 5 <= s.length <= 50


def test_first_round_lengths_shrink_with_region():
    gt = three_regions()
    strokes = Robot(seed=0).first_round(gt)
    # The disc (area ~450 px) gets a shorter stroke than the big bands.
    assert strokes[2].length < strokes[0].length
    assert strokes[2].length <= 0.6 * np.sqrt((gt == 2).sum()) + 1


def test_margin_is_kept():
    gt = three_regions()
    for s in Robot(seed=0, margin=3).first_round(gt):
        depth = ndi.distance_transform_edt(np.pad(gt == s.label - 1, 1))[1:-1, 1:-1]
        assert depth[s.mask].min() >= 4   # 3 clear pixels, then the stroke


def test_stroke_in_thin_and_non_convex_regions():
    gt = np.zeros((60, 60), np.int32)
    gt[30, 5:55] = 1                    # one-pixel line
    gt[5:25, 5:8] = 2                   # three-pixel bar
    gt[40:55, 10:50] = 3                # L-shape: bar + leg
    gt[40:58, 10:14] = 3
    for s in Robot(seed=1).first_round(gt):
        area = gt == s.label - 1
        assert np.all(area[s.mask])
        if s.label == 2:                # the line: one-pixel brush along the line
            assert s.radius == 0 and s.mask.sum() >= 4


def test_corrective_stroke_in_largest_error_with_right_label():
    gt = three_regions()
    pred = gt + 1
    pred[5:15, 5:15] = 2               # 100 px of region 0 wrongly labelled 2
    pred[50:75, 20:50] = 2             # 750 px of region 0 wrongly labelled 2 (largest)
    pred[30:35, 70:75] = 1             # 25 px of region 1 wrongly labelled 1
    region, comp = largest_error_component(gt, pred)
    assert region == 0 and comp.sum() == 750
    s = Robot(seed=0).corrective(gt, pred, np.zeros_like(gt))
    assert s.label == 1 and s.kind == "corrective"
    assert np.all(comp[s.mask]), "corrective stroke leaves the error component"
    assert s.length <= 30


def test_corrective_skips_painted_pixels_and_stops_when_right():
    gt = three_regions()
    assert Robot().corrective(gt, gt + 1, np.zeros_like(gt)) is None
    pred = gt + 1
    pred[50:75, 20:50] = 2
    scribbles = np.zeros_like(gt)
    scribbles[50:75, 20:50] = 1        # already painted (method ignored the stroke)
    assert Robot().corrective(gt, pred, scribbles) is None


def test_error_split_by_region_and_void_ignored():
    gt = np.zeros((40, 40), np.int32)
    gt[:, 20:] = 1
    pred = np.full_like(gt, 3)         # everything wrong; halves belong to different regions
    pred[:, :5] = 1
    region, comp = largest_error_component(gt, pred)
    assert region == 1 and comp.sum() == 40 * 20   # region 1's half beats 40×15 of region 0
    valid = np.ones_like(gt, bool)
    valid[:, 20:] = False
    region, comp = largest_error_component(gt, pred, valid=valid)
    assert region == 0 and comp.sum() == 40 * 15


def test_determinism_with_seed():
    gt = np.zeros((50, 50), np.int32)
    gt[:, 25:] = 1                      # symmetric halves: many tied DT maxima
    a = [s.mask for s in Robot(seed=3).first_round(gt)]
    b = [s.mask for s in Robot(seed=3).first_round(gt)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_paint_copies():
    gt = three_regions()
    s = Robot().first_round(gt)[0]
    base = np.zeros_like(gt)
    out = paint(base, s)
    assert base.sum() == 0 and np.all(out[s.mask] == 1)


def test_iou_hand_computed():
    p = np.zeros((4, 4), bool)
    t = np.zeros((4, 4), bool)
    p[0, :3] = True                     # 3 px
    t[0, 1:] = True                     # 3 px, overlap 2, union 4
    assert iou(p, t) == pytest.approx(0.5)
    valid = np.ones((4, 4), bool)
    valid[0, 0] = False                 # drop the p-only pixel: overlap 2, union 3
    assert iou(p, t, valid) == pytest.approx(2 / 3)
    assert iou(np.zeros((2, 2)), np.zeros((2, 2))) == 1.0


def test_binary_and_mean_iou_hand_computed():
    gt = np.array([[0, 0, 1, 1]] * 2)
    labels = np.array([[1, 2, 2, 2]] * 2)
    assert binary_iou(labels, gt) == pytest.approx(4 / 6)
    # region 0: IoU(labels==1, gt==0) = 2/4; region 1: 4/6.
    assert mean_iou(labels, gt) == pytest.approx((0.5 + 4 / 6) / 2)
    mask = np.array([[0, 0, 1, 1], [0, 255, 1, 255]])
    valid = mask != 255
    assert binary_iou(labels, (mask == 1).astype(int), valid) == pytest.approx(3 / 4)


def test_noc_hand_computed():
    curve = [0.5, 0.8, 0.86, 0.84, 0.91]
    assert noc(curve, 0.85, 20, first=1) == (3, True)
    assert noc(curve, 0.90, 20, first=3) == (7, True)     # k = 3 strokes in the first round
    assert noc(curve, 0.95, 20, first=1) == (20, False)
    assert noc(curve, 0.90, 5, first=3) == (5, False)     # reached only after the cap


@pytest.mark.parametrize("seed", range(5))
def test_random_maps_strokes_connected_and_inside(seed):
    """Voronoi-like maps with ragged boundaries: every stroke is one blob inside its region."""
    rng = np.random.default_rng(seed)
    h, w, k = 90, 130, int(rng.integers(2, 7))
    centres = rng.uniform((0, 0), (h, w), (k, 2))
    yy, xx = np.mgrid[:h, :w]
    jitter = ndi.gaussian_filter(rng.normal(0, 40, (h, w)), 3)
    d = np.hypot(yy[..., None] - centres[:, 0], xx[..., None] - centres[:, 1])
    gt = np.argmin(d + jitter[..., None], axis=2).astype(np.int32)
    robot = Robot(seed=seed)
    strokes = robot.first_round(gt)
    assert len(strokes) == len(np.unique(gt))
    pred = np.ones_like(gt)              # everything labelled 1: corrections for regions 1..k-1
    scribbles = np.zeros_like(gt)
    for s in strokes:
        scribbles = paint(scribbles, s)
    for s in strokes + [robot.corrective(gt, pred, scribbles)]:
        area = gt == s.label - 1
        assert boundary_free(s.mask, area)
        assert ndi.label(s.mask, structure=np.ones((3, 3)))[1] == 1


def test_least_confident_area_by_hand_and_the_unsure_stroke():
    """The area comes from the confidence alone (largest total doubt among the 4-connected
    components below 1/2); the ground truth only names the label painted there."""
    gt = three_regions()
    conf = np.ones(gt.shape, np.float32)
    conf[5:15, 5:15] = 0.0             # 100 px, doubt 1 each: total 100
    conf[50:75, 70:76] = 0.4           # 150 px, doubt 0.6 each: total 90
    conf[20:30, 100:103] = 0.6         # above 1/2: never a target
    region, area = least_confident_area(conf, gt)
    assert region == 0 and area.sum() == 100 and area[5:15, 5:15].all()
    painted = np.zeros_like(gt)
    painted[5:15, 5:15] = 1            # once painted, the next area is the other one
    region, area = least_confident_area(conf, gt, painted)
    assert region == 1 and area.sum() == 150
    # a component straddling two regions: the stroke goes into the larger part, its label
    conf[:] = 1.0
    conf[30:50, 50:66] = 0.1           # columns 50-59 region 0 (200 px), 60-65 region 1 (120)
    region, area = least_confident_area(conf, gt)
    assert region == 0 and area.sum() == 200
    s = Robot(seed=0).where_unsure(gt, conf, np.zeros_like(gt))
    assert s.label == 1 and s.kind == "unsure" and np.all(area[s.mask])
    assert Robot().where_unsure(gt, np.ones(gt.shape), np.zeros_like(gt)) is None


def test_unsure_robot_loop_uses_the_labellers_confidence():
    from benchmarks import quality
    gt = three_regions()
    smp = quality.Sample("t", np.zeros(gt.shape + (3,), np.float32), gt, None, False)
    calls = []

    def labeller(scribbles):
        calls.append(scribbles.copy())
        conf = np.ones(gt.shape, np.float32)
        conf[50:75, 5:40] = 0.2 if len(calls) == 1 else 1.0   # unsure once, then sure
        labeller.confidence = conf
        return gt + 1
    recs = quality.run_interactive(smp, labeller, max_strokes=10, robot_rule="unsure")
    assert [r["kind"] for r in recs] == ["initial", "unsure"]
    added = (calls[1] > 0) & (calls[0] == 0)
    assert added.any() and np.all(gt[added] == 0) and np.all(calls[1][added] == 1)
    assert added[50:75, 5:40].sum() == added.sum()


def test_quality_cli_reports_the_unsure_robot_beside_the_oracle(tmp_path):
    """``--robot both``: every segapp variant gets a NAME+unsure row in the same table."""
    import json

    from benchmarks import quality
    from scenes import make_data
    data = make_data(tmp_path / "data")
    out = tmp_path / "out"
    assert quality.main(["--data", str(data), "--dataset", "grabcut", "--methods", "fastge",
                         "rw", "--robot", "both", "--max-strokes", "4", "--limit", "1",
                         "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())["summaries"]["grabcut"]
    assert set(summary) == {"fastge", "rw", "fastge+unsure"}
    assert summary["fastge+unsure"]["images"] == summary["fastge"]["images"] == 1
    table = (out / "quality_grabcut.md").read_text()
    assert "fastge+unsure" in table
