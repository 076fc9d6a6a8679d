"""Landmark methods (landmark FAST-GE, cluster ensemble, SCACS): the shared landmark machinery
against dense references, accuracy on data with known clusters, constraints, determinism and
bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

import segapp
from segapp.graphs import landmark as lm
from segapp.graphs.features import ArrayFeatures, ImageFeatures
from segapp.strokes.reading import Strokes
from segapp.strokes.constraints import build_constraints
from segapp.errors import Cancelled, InvalidInputError
from segapp.methods import REGISTRY, get
from segapp.methods.ensemble import ClusterEnsemble, sparse_projection
from segapp.partition import anchored_kmeans
from segapp.methods.landmark_fastge import LandmarkFastGE
from segapp.methods.scacs import SCACS, must_link_laplacian
from segapp.solve.pencil import Pencil
from scenes import blobs, noisy_image  # noqa: E402  (tests/ is on sys.path)

NAMES = ("landmark", "ensemble", "scacs")


# -- data ----------------------------------------------------------------------------------
# -- shared machinery ----------------------------------------------------------------------
def dense_zhat(code: lm.SparseCode) -> np.ndarray:
    n, p = code.n, code.p
    Z = np.zeros((n, p))
    np.add.at(Z, (np.repeat(np.arange(n), code.r), code.idx.ravel()), code.w.ravel())
    return Z / np.sqrt(code.colsum)


def small_code(seed: int = 0, n: int = 150, p: int = 25, r: int = 4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    feats = ArrayFeatures(X)
    L = lm.select_landmarks(feats, p, method="random", rng=rng)
    # the coding works in the units of feats.rows (X over a power of two: exact)
    return X / feats.unit, lm.sparse_code(feats, L, r)


def test_sparse_code_is_nadaraya_watson():
    X, code = small_code()
    d = np.linalg.norm(X[:, None, :] - code.landmarks[None], axis=2)
    nearest = np.argsort(d, axis=1)[:, : code.r]
    assert np.array_equal(np.sort(code.idx, 1), np.sort(nearest, 1))
    k = np.exp(-np.take_along_axis(d, code.idx.astype(int), 1) ** 2 / (2 * code.sigma ** 2))
    np.testing.assert_allclose(code.w, k / k.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert code.sigma == pytest.approx(np.sort(d, 1)[:, : code.r].mean(), rel=1e-6)


def test_landmark_graph_degrees_gram_and_basis():
    X, code = small_code()
    Zh = dense_zhat(code)
    n = code.n
    np.testing.assert_allclose(Zh @ (Zh.T @ np.ones(n)), 1.0, atol=1e-5)    # W 1 = 1
    np.testing.assert_allclose(code.gram(), Zh.T @ Zh, atol=1e-6)
    rows = np.array([3, 17, 40, 41])
    u = np.array([1.0, 0.5, 2.0, 1.0])
    np.testing.assert_allclose(code.weighted_gram(rows, u), Zh[rows].T @ (u[:, None] * Zh[rows]),
                               atol=1e-6)
    np.testing.assert_allclose(code.weighted_sum(rows, u), Zh[rows].T @ u, atol=1e-6)
    Y = np.random.default_rng(1).normal(size=(code.p, 3))
    np.testing.assert_allclose(code.apply(Y), Zh @ Y, atol=1e-5)
    basis = lm.LandmarkBasis.build(code)
    Phi = Zh @ basis.T
    np.testing.assert_allclose(Phi.T @ Phi, np.eye(basis.size), atol=1e-4)
    L = np.eye(n) - Zh @ Zh.T
    np.testing.assert_allclose(Phi.T @ L @ Phi, np.diag(1 - basis.lam), atol=1e-4)
    np.testing.assert_allclose(basis.e, Phi.T @ np.ones(n), atol=1e-4)
    H = basis.complement()
    np.testing.assert_allclose(H.T @ H, np.eye(basis.size - 1), atol=1e-10)
    assert np.abs(basis.e @ H).max() < 1e-8


def test_image_features_rule():
    rng = np.random.default_rng(0)
    img = rng.random((30, 40, 3)).astype(np.float32)
    f = ImageFeatures(img, spatial_weight=2.0)
    F = f.rows(np.arange(f.n))
    assert F.shape == (1200, 5)
    assert F[:, :3].var(0).sum() == pytest.approx(1.0, rel=1e-3)     # colour: unit variance
    assert F[:, 3:].var(0).sum() == pytest.approx(4.0, rel=1e-3)     # position: ω²
    np.testing.assert_allclose(f.chunk(100, 130), F[100:130])
    assert ImageFeatures(img[:, :, 0]).dim == 3


def test_landmark_pencil_is_the_projection_of_fastge():
    """Our p×p pencil = Ẑᵀ L_G Ẑ, Ẑᵀ L_H Ẑ built by the engine's own dense FAST-GE pencil."""
    X, truth, lab = blobs(n_per=40, k=3, labelled=3)
    m = LandmarkFastGE.from_data(features=X, n_landmarks=30, landmark_selection="random")
    res = m.update(lab)
    Zh = dense_zhat(m.code)
    n = m.code.n
    W = Zh @ Zh.T
    W = W - np.diag(np.diag(W))   # self-loops do not change the Laplacian
    d = W.sum(1) + np.diag(Zh @ Zh.T)  # degrees of W with loops = 1
    np.testing.assert_allclose(d, 1.0, atol=1e-6)
    L = np.diag(W.sum(1)) - W
    cons = build_constraints(lab, np.ones(n))
    LG, LH = Pencil(sp.csr_matrix(L), np.ones(n), cons.ml, cons.cl).dense()
    A, B = Zh.T @ LG @ Zh, Zh.T @ LH @ Zh
    # restrict to the complement of the constant vector (y with 1ᵀẐy = 0)
    c = Zh.T @ np.ones(n)
    Q = sla.null_space(c[None, :])
    R = sla.null_space((Zh @ Q))  # directions Ẑ maps to 0 (none expected)
    assert R.shape[1] == 0
    lam = sla.eigh(Q.T @ A @ Q, Q.T @ B @ Q, eigvals_only=True)[:2]
    np.testing.assert_allclose(res.eigenvalues, lam, rtol=1e-4, atol=1e-9)


# -- accuracy -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_blobs_accuracy(name):
    X, truth, lab = blobs()
    res = segapp.cluster(lab, features=X, method=name, n_landmarks=150, n_partitions=4) \
        if name == "ensemble" else segapp.cluster(lab, features=X, method=name, n_landmarks=150)
    assert res.labels.shape == truth.shape
    assert np.mean(res.labels == truth) >= 0.95
    assert res.label_ids == (1, 2, 3, 4)
    assert res.eigenvectors.dtype == np.float32 and res.eigenvectors.shape[0] == truth.size


@pytest.mark.parametrize("name", NAMES)
def test_noisy_image_accuracy_and_strokes_kept(name):
    img, truth, s = noisy_image()
    res = segapp.segment(img, s, method=name, n_landmarks=200)
    assert res.labels.shape == truth.shape and res.labels.dtype == np.int32
    assert np.mean(res.labels == truth) >= 0.95
    assert np.all(res.labels[s > 0] == s[s > 0])            # every stroke pixel keeps its label
    assert res.diagnostics.stroke_agreement == 1.0
    assert res.eigenvectors.dtype == np.float32
    assert res.eigenvectors.shape[:2] == truth.shape
    assert res.method == name
    for stage in ("total",):
        assert stage in res.timings


def test_landmark_two_labels_and_label_ids():
    img, truth, s = noisy_image()
    s2 = np.where(s == 2, 9, np.where(s > 0, 4, 0))     # regions 1+3 → label 4, region 2 → 9
    t2 = np.where(truth == 2, 9, 4)
    res = segapp.segment(img, s2, method="landmark", n_landmarks=200)
    assert res.label_ids == (4, 9)
    assert np.mean(res.labels == t2) >= 0.95
    assert res.eigenvectors.shape == (*truth.shape, 1)


def test_landmark_session_reuses_graph():
    img, truth, s = noisy_image()
    sess = segapp.Session(img, method="landmark", n_landmarks=200)
    first = sess.update(s)
    assert {"landmarks", "coding", "basis", "constraints", "eigensolver",
            "partition"} <= set(first.timings)
    s2 = s.copy()
    s2[20, 40:50] = 2
    second = sess.update(s2)
    assert "coding" not in second.timings and "eigensolver" in second.timings
    assert np.mean(second.labels == truth) >= 0.95


def test_scacs_beta_rule():
    X, truth, lab = blobs(k=3)
    m = SCACS.from_data(features=X, n_landmarks=100, beta0=None)     # §5.2's β₀ formula
    res = m.update(lab)
    ex = res.diagnostics.extra
    c, n = np.count_nonzero(lab), len(lab)
    assert ex["beta0"] == pytest.approx(0.5 + 0.4 * c / n)
    assert SCACS.from_data(features=X).update(lab).diagnostics.extra["beta0"] == 0.1
    assert ex["beta"] == pytest.approx(ex["beta0"] * ex["gamma_k-1"])
    # γ_{k−1} against a dense Q̂ x = γ Ŝ x
    Zh = dense_zhat(m.code)
    Q = np.zeros((n, n))
    idx = np.flatnonzero(lab)
    Q[np.ix_(idx, idx)] = np.where(lab[idx][:, None] == lab[idx][None, :], 1.0, -1.0)
    S = Zh.T @ Zh
    gam = np.sort(sla.eigh(Zh.T @ Q @ Zh, S, eigvals_only=True))[::-1]
    assert ex["gamma_k-1"] == pytest.approx(gam[1], rel=1e-6)
    assert np.all(res.eigenvalues > 0)


def test_scacs_must_link_laplacian_against_pair_loop():
    """Φᵀ L_ML Φ against ½ Σ_{i,j same label} u_i u_j (φ_i − φ_j)(φ_i − φ_j)ᵀ by a loop."""
    X, code = small_code(n=80, p=20)
    basis = lm.LandmarkBasis.build(code)
    Phi = dense_zhat(code) @ basis.T
    sets = [np.array([2, 9, 30]), np.array([5, 40]), np.array([11, 12, 60, 70])]
    rng = np.random.default_rng(3)
    weights = [rng.uniform(0.3, 1.0, S.size) for S in sets]
    ref = np.zeros((basis.size, basis.size))
    for S, u in zip(sets, weights):
        for i, ui in zip(S, u):
            for j, uj in zip(S, u):
                d = Phi[i] - Phi[j]
                ref += 0.5 * ui * uj * np.outer(d, d)
    got = must_link_laplacian(basis, Strokes((1, 2, 3), sets, weights))
    np.testing.assert_allclose(got, ref, atol=1e-8 * np.abs(ref).max())


def test_scacs_must_link_ladder():
    """must_link=0 is the paper's SCACS; where it keeps the strokes the ladder never starts."""
    img, truth, s = noisy_image()
    res = segapp.segment(img, s, method="scacs", n_landmarks=200)
    paper = segapp.segment(img, s, method="scacs", n_landmarks=200, must_link=0.0)
    assert res.diagnostics.extra["must_link"] == paper.diagnostics.extra["must_link"] == 0.0
    assert np.array_equal(res.labels, paper.labels)
    with pytest.raises(InvalidInputError, match="must_link"):
        segapp.segment(img, s, method="scacs", must_link=-1.0)


def test_ensemble_consensus_pieces():
    rng = np.random.default_rng(0)
    R = sparse_projection(12, 30, 3, rng)
    assert np.all(np.count_nonzero(R, axis=0) == 3)
    np.testing.assert_allclose(np.abs(R[R != 0]), 1 / np.sqrt(3))
    # weighted k-means on duplicated points = k-means on the distinct points with counts
    Y = np.array([[0.0, 0], [0.1, 0], [5, 5], [5.2, 5]])
    codes, centres, _ = anchored_kmeans(Y, [np.array([0]), np.array([2])],
                                     weights=np.array([1.0, 3, 1, 1]), rng=rng)
    assert codes.tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(centres, [[0.075, 0], [5.1, 5]])   # weighted means
    X, truth, lab = blobs(k=3)
    res = ClusterEnsemble.from_data(features=X, n_landmarks=100, n_partitions=3).update(lab)
    assert res.eigenvectors.shape == (len(X), 3)
    np.testing.assert_allclose(res.eigenvectors.sum(1), 1.0, rtol=1e-6)   # vote fractions
    assert res.diagnostics.extra["partitions"] == 3


# -- determinism ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_seed_determinism(name):
    img, truth, s = noisy_image(1)
    opts = dict(n_landmarks=120, seed=7, landmark_selection="random")
    if name == "ensemble":
        opts["n_partitions"] = 3
    a = segapp.segment(img, s, method=name, **opts)
    b = segapp.segment(img, s, method=name, **opts)
    assert np.array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.eigenvectors, b.eigenvectors)
    c = segapp.segment(img, s, method=name, **{**opts, "seed": 8})
    assert np.mean(c.labels == truth) >= 0.9


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_bad_inputs(name):
    X, truth, lab = blobs(k=3, n_per=50)
    cls = get(name)
    with pytest.raises(InvalidInputError, match="unknown option"):
        cls.from_data(features=X, bogus=1)
    with pytest.raises(InvalidInputError, match="feature"):
        cls.from_data(graph=sp.identity(len(X), format="csr"))
    with pytest.raises(InvalidInputError, match="no strokes"):
        cls.from_data(features=X).update(np.zeros(len(X), int))
    one = np.where(lab == 1, 1, 0)
    with pytest.raises(InvalidInputError, match="only label 1"):
        cls.from_data(features=X).update(one)
    with pytest.raises(InvalidInputError, match="k must not exceed|landmarks"):
        cls.from_data(features=X, n_landmarks=2, n_nearest=2).update(lab)
    for bad in (dict(n_landmarks=1), dict(n_nearest=1), dict(landmark_selection="grid"),
                dict(sigma=-1.0), dict(sigma_rule="x"), dict(seed=-1), dict(spatial_weight="a"),
                dict(kmeans_sample=0)):
        with pytest.raises(InvalidInputError):
            cls.from_data(features=X, **bad)
    with pytest.raises(InvalidInputError, match="NaN"):
        cls.from_data(features=np.full((10, 2), np.nan))
    with pytest.raises(InvalidInputError):
        cls.from_data(features=X).update(lab[:-1])
    with pytest.raises(InvalidInputError, match="confidence"):
        cls.from_data(features=X).update(lab, confidence=np.full(len(X), 2.0))


def test_method_specific_bad_options():
    X, truth, lab = blobs(k=3, n_per=50)
    for bad in (dict(beta0=1.5), dict(beta0=0.0), dict(beta0="x")):
        with pytest.raises(InvalidInputError, match="beta0"):
            SCACS.from_data(features=X, **bad)
    for bad in (dict(constraint_weight=0.0), dict(n_vectors=0)):
        with pytest.raises(InvalidInputError):
            LandmarkFastGE.from_data(features=X, **bad)
    with pytest.raises(InvalidInputError, match="n_vectors"):
        LandmarkFastGE.from_data(features=X, n_vectors=5).update(lab)
    for bad in (dict(n_partitions=0), dict(projection_dim=1, projection_nnz=2)):
        with pytest.raises(InvalidInputError):
            ClusterEnsemble.from_data(features=X, **bad)


@pytest.mark.parametrize("name", NAMES)
def test_cancel(name):
    X, truth, lab = blobs(k=3, n_per=50)
    with pytest.raises(Cancelled):
        get(name).from_data(features=X).update(lab, cancel=lambda: True)
    calls = []

    def late():  # cancel only after the set-up stages ran
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(Cancelled):
        get(name).from_data(features=X, n_landmarks=60).update(lab, cancel=late)


def test_registry():
    names = list(REGISTRY)
    assert names[0] == "fastge"
    for name in NAMES:
        cls = REGISTRY[name]
        assert cls.name == name and cls.constrained and cls.description
        assert "seed" in cls.defaults
        assert cls.__module__.startswith("segapp.methods.")
        assert segapp.methods.option_names(name) == set(cls.defaults)
