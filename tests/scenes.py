"""Synthetic data sets that several test modules share (so no test module imports another)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.linalg as sla
from PIL import Image


def blobs(seed: int = 0, n_per: int = 300, k: int = 4, labelled: int = 5):
    """k Gaussian blobs (unit spread, centres 8 apart) and a few labelled points per blob."""
    rng = np.random.default_rng(seed)
    centres = 8.0 * np.array([[0, 0], [1, 0], [0, 1], [1, 1], [2, 0], [2, 1]])[:k]
    X = np.concatenate([rng.normal(c, 1.0, (n_per, 2)) for c in centres])
    truth = np.repeat(np.arange(1, k + 1), n_per)
    lab = np.zeros(len(X), np.int64)
    for a in range(1, k + 1):
        lab[rng.choice(np.flatnonzero(truth == a), labelled, replace=False)] = a
    return X, truth, lab


def two_regions(H: int = 24, W: int = 28, seed: int = 0) -> np.ndarray:
    """A small RGB image: a red right half, a blue lower-left and a black upper-left quarter,
    with Gaussian noise (σ 0.05)."""
    rng = np.random.default_rng(seed)
    img = np.zeros((H, W, 3))
    img[:, W // 2:] = (0.8, 0.3, 0.2)
    img[H // 2:, :W // 2] = (0.2, 0.3, 0.8)
    return np.clip(img + rng.normal(0, 0.05, img.shape), 0, 1).astype(np.float32)


def noisy_image(seed: int = 0, shape: tuple[int, int] = (48, 64)):
    """Three regions (left, right, a disc on the left) in distinct colours plus noise."""
    H, W = shape
    rng = np.random.default_rng(seed)
    truth = np.ones(shape, np.int64)
    truth[:, W // 2:] = 2
    yy, xx = np.ogrid[:H, :W]
    truth[(yy - H / 2) ** 2 + (xx - W / 4) ** 2 < (H / 5) ** 2] = 3
    colours = np.array([[0, 0, 0], [0.75, 0.25, 0.2], [0.25, 0.65, 0.35], [0.2, 0.3, 0.8]])
    img = np.clip(colours[truth] + rng.normal(0, 0.08, (H, W, 3)), 0, 1).astype(np.float32)
    s = np.zeros(shape, np.int64)
    s[6, 4:20] = 1
    s[40, 4:20] = 1
    s[H // 2 - 8: H // 2 + 8, 3 * W // 4] = 2
    s[H // 2, W // 4 - 4: W // 4 + 5] = 3
    return img, truth, s


def _scene(rng: np.random.Generator, k: int, h: int = 60, w: int = 90):
    """Vertical bands of distinct colours with noise, and their label map."""
    gt = np.minimum(np.arange(w)[None, :] * k // w, k - 1).repeat(h, axis=0).astype(np.uint8)
    colours = rng.uniform(0, 1, (k, 3))
    img = colours[gt] + rng.normal(0, 0.03, (h, w, 3))
    return (np.clip(img, 0, 1) * 255).astype(np.uint8), gt


def make_data(root: Path) -> Path:
    rng = np.random.default_rng(0)
    bsds, grab = root / "bsds-dev", root / "grabcut-dev"
    for d in (bsds / "images", bsds / "gt", grab / "images", grab / "masks"):
        d.mkdir(parents=True)
    index = []
    for i, k in enumerate((2, 3)):
        img, gt = _scene(rng, k)
        Image.fromarray(img).save(bsds / "images" / f"s{i}.png")
        Image.fromarray(gt).save(bsds / "gt" / f"s{i}.png")
        index.append(dict(id=f"s{i}", k=k, image=f"images/s{i}.png", gt=f"gt/s{i}.png"))
    (bsds / "index.json").write_text(json.dumps(index))
    index = []
    for i in range(2):
        img, gt = _scene(rng, 2)
        mask = gt.copy()
        mask[:, 44:46] = 255            # void band at the boundary
        Image.fromarray(img).save(grab / "images" / f"g{i}.bmp")
        Image.fromarray(mask).save(grab / "masks" / f"g{i}.png")
        index.append(dict(id=f"g{i}", image=f"images/g{i}.bmp", mask=f"masks/g{i}.png"))
    (grab / "index.json").write_text(json.dumps(index))
    return root


# -- FAST-GE's pencil on a small image, built densely (test_pencil, test_harmonic) ----------
IDS = (2, 5, 7, 9)


def noisy_blocks(H=30, W=30, noise=0.08, seed=30):
    """Piecewise-constant colour image with 4 regions (two halves split, a disc) + noise."""
    rng = np.random.default_rng(seed)
    truth = np.zeros((H, W), int)
    truth[:, W // 2:] = 1
    truth[H // 2:, :W // 2] = 2
    yy, xx = np.mgrid[:H, :W]
    truth[(yy - 0.7 * H) ** 2 + (xx - 0.73 * W) ** 2 < (0.18 * H) ** 2] = 3
    colours = np.array([[0.8, 0.2, 0.2], [0.2, 0.7, 0.3], [0.2, 0.3, 0.8], [0.9, 0.9, 0.2]])
    img = np.clip(colours[truth] + rng.normal(0, noise, (H, W, 3)), 0, 1).astype(np.float32)
    return img, truth


def strokes(truth, ids=IDS):
    s = np.zeros(truth.shape, int)
    H, W = truth.shape
    s[H // 6, 3:10] = ids[0]
    s[H // 6, W - 10:W - 3] = ids[1]
    s[H - H // 6, 3:10] = ids[2]
    s[int(0.7 * H), int(0.73 * W) - 3:int(0.73 * W) + 3] = ids[3]
    for r, lab in enumerate(ids):                       # each stroke inside its own region
        assert np.all(truth[s == lab] == r)
    return s


def from_scratch(L_D, scribbles):
    """Dense (L_G, L_H) of §4.7 built without segapp's constraint or pencil code."""
    LD = L_D.toarray()
    d = np.diag(LD).copy()
    n = d.size
    vol = d.sum()
    dmin, dmax = np.percentile(d, 1.0), d.max()
    lab = np.asarray(scribbles).ravel()
    stroked = np.flatnonzero(lab)
    WML, WCL = np.zeros((n, n)), np.zeros((n, n))
    for i in stroked:
        for j in stroked:
            if i != j:
                w = d[i] * d[j] / (dmin * dmax)
                if lab[i] == lab[j]:
                    WML[i, j] = w
                else:
                    WCL[i, j] = w
    K = np.outer(d, d) / vol
    np.fill_diagonal(K, 0.0)

    def lap(Wm):
        return np.diag(Wm.sum(1)) - Wm

    LG = LD + lap(WML)
    LH = lap(K) / n + lap(WCL)
    return LG, LH, lap(WCL), d


def restricted_eigh(LG, LH, d, count):
    """Smallest ``count`` pairs of L_G x = λ L_H x on dᵀx = 0 (x returned in full space)."""
    Q = sla.null_space(d[None, :])
    lam, Y = sla.eigh(Q.T @ LG @ Q, Q.T @ LH @ Q, subset_by_index=[0, count - 1])
    return lam, Q @ Y


def voronoi_image(rng: np.random.Generator) -> np.ndarray:
    """3–5 flat regions (Voronoi cells), noise, sometimes grey; 16–32 × 16–32 px."""
    H, W = rng.integers(16, 33, size=2)
    k = rng.integers(3, 6)
    sites = rng.uniform([0, 0], [H, W], size=(k, 2))
    yy, xx = np.mgrid[:H, :W]
    regions = np.argmin((yy[..., None] - sites[:, 0]) ** 2 + (xx[..., None] - sites[:, 1]) ** 2,
                        axis=-1)
    img = rng.uniform(0, 1, (k, 3))[regions] + rng.normal(0, rng.choice([0.01, 0.05]),
                                                         (H, W, 3))
    img = np.clip(img, 0, 1).astype(np.float32)
    return img.mean(axis=2) if rng.random() < 0.2 else img


def disc_image(H: int = 90, W: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A bright disc on a dark ground, a little noise; the disc's true mask."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:H, :W]
    disc = (yy - 0.47 * H) ** 2 + (xx - 0.53 * W) ** 2 < (0.3 * min(H, W)) ** 2
    img = np.where(disc[..., None], [0.8, 0.6, 0.3], [0.2, 0.3, 0.5]).astype(np.float32)
    img += rng.normal(0, 0.01, img.shape).astype(np.float32)
    return np.clip(img, 0, 1), disc
