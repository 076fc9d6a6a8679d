"""CCSKL and SC-PC: their pieces against independent references (explicit pair loops, a
brute-force QP, dense eigendecompositions, a dense Ẑ, the paper's worked example), accuracy on
data with known clusters, constraints, determinism and bad inputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

import segapp
from segapp.graphs.features import ArrayFeatures
from segapp.graphs.landmark import sparse_code
from segapp.strokes.reading import read_strokes
from segapp.errors import Cancelled, InvalidInputError
from segapp.graphs.image import image_graph
from segapp.methods import REGISTRY, get, option_names
from segapp.methods import ccskl as cc
from segapp.solve import GraphSolver
from segapp.methods import scpc as sc
from scenes import blobs, noisy_image  # noqa: E402  (tests/ is on sys.path)

NAMES = ("ccskl", "scpc")


def knn_graph(X: np.ndarray, k: int = 10) -> sp.csr_matrix:
    """Symmetric Gaussian k-NN graph (bandwidth: mean k-th neighbour distance)."""
    from scipy.spatial import cKDTree
    dist, ind = cKDTree(X).query(X, k + 1)
    s = dist[:, -1].mean()
    n = len(X)
    W = sp.csr_matrix((np.exp(-dist[:, 1:].ravel() ** 2 / (2 * s * s)),
                       (np.repeat(np.arange(n), k), ind[:, 1:].ravel())), shape=(n, n))
    return W.maximum(W.T).tocsr()


def data_for(name: str, X: np.ndarray) -> dict:
    return {"graph": knn_graph(X)} if name == "ccskl" else {"features": X}


# -- CCSKL: the QP ---------------------------------------------------------------------------
def pair_loop_qp(F, sets, weights):
    """A, b, c of (12)–(14) by an explicit loop over every entry of C (ordered pairs)."""
    n, m = F.shape
    label = np.zeros(n, int)
    w = np.zeros(n)
    for a, (S, u) in enumerate(zip(sets, weights)):
        label[S], w[S] = a + 1, u
    A, b, c = np.zeros((m, m)), np.zeros(m), 0.0
    for i in range(n):
        for j in range(n):
            if i == j:
                cij2, t = 1.0, 1.0
            elif label[i] and label[j]:
                cij2, t = w[i] * w[j], float(label[i] == label[j])
            else:
                continue
            y = F[i] * F[j]
            A += 2 * cij2 * np.outer(y, y)
            b -= 2 * cij2 * t * y
            c += cij2 * t * t
    return A, b, c


def frobenius_cost(F, beta, sets, weights):
    """‖C ∘ (K − T)‖²_F with K = F diag(β) Fᵀ formed densely (eq. (8))."""
    n = F.shape[0]
    K = (F * beta) @ F.T
    C, T = np.eye(n), np.eye(n)
    w = np.zeros(n)
    lab = np.zeros(n, int)
    for a, (S, u) in enumerate(zip(sets, weights)):
        lab[S], w[S] = a + 1, u
    for i, j in itertools.product(np.flatnonzero(lab), repeat=2):
        if i != j:
            C[i, j] = np.sqrt(w[i] * w[j])
            T[i, j] = float(lab[i] == lab[j])
    return float(np.sum((C * (K - T)) ** 2))


def test_kernel_qp_matches_the_pair_loop_and_the_frobenius_cost():
    rng = np.random.default_rng(0)
    F = np.linalg.qr(rng.standard_normal((14, 4)))[0]
    sets = [np.array([0, 3, 5]), np.array([1, 7]), np.array([9, 10, 12])]
    weights = [rng.uniform(0.2, 1, S.size) for S in sets]
    A, b = cc.kernel_qp(F, sets, weights)
    A0, b0, c0 = pair_loop_qp(F, sets, weights)
    np.testing.assert_allclose(A, A0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b, b0, rtol=1e-12, atol=1e-14)
    for _ in range(3):
        z = rng.uniform(0, 3, 4)
        np.testing.assert_allclose(0.5 * z @ A @ z + b @ z + c0,
                                   frobenius_cost(F, z, sets, weights), rtol=1e-10)
    # unweighted: the default weights are ones
    A1, b1 = cc.kernel_qp(F, sets)
    A2, b2, _ = pair_loop_qp(F, sets, [np.ones(S.size) for S in sets])
    np.testing.assert_allclose(A1, A2, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b1, b2, rtol=1e-12, atol=1e-14)


def brute_force_ordered_qp(A, b):
    """Enumerate every active set of β_1 ≥ … ≥ β_m ≥ 0; keep the best feasible KKT point."""
    m = b.size
    G = np.zeros((m, m))                       # rows: β_i − β_{i+1} ≥ 0, β_m ≥ 0
    for i in range(m - 1):
        G[i, i], G[i, i + 1] = 1, -1
    G[m - 1, m - 1] = 1
    best, best_val = None, np.inf
    for r in range(m + 1):
        for act in itertools.combinations(range(m), r):
            Ga = G[list(act)]
            K = np.block([[A, Ga.T], [Ga, np.zeros((r, r))]])
            sol = np.linalg.lstsq(K, np.concatenate([-b, np.zeros(r)]), rcond=None)[0]
            z = sol[:m]
            if np.all(G @ z >= -1e-10):
                val = 0.5 * z @ A @ z + b @ z
                if val < best_val - 1e-15:
                    best, best_val = z, val
    return best, best_val


@pytest.mark.parametrize("seed", range(6))
def test_ordered_qp_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = 4
    M = rng.standard_normal((8, m))
    A = M.T @ M + 0.1 * np.eye(m)
    b = rng.standard_normal(m) * 3           # random signs: some constraints become active
    z = cc.solve_ordered_qp(A, b)
    z0, v0 = brute_force_ordered_qp(A, b)
    assert np.all(np.diff(z) <= 1e-12) and z[-1] >= -1e-12
    np.testing.assert_allclose(0.5 * z @ A @ z + b @ z, v0, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(z, z0, rtol=1e-6, atol=1e-8)


def test_ordered_qp_on_a_real_kernel_problem_against_brute_force():
    img, truth, s = noisy_image()
    g = image_graph(img)
    spec = cc.smoothest_eigenvectors(g, 5)
    sets = read_strokes(s, g.n).sets
    A, b = cc.kernel_qp(spec.F, sets)
    z = cc.solve_ordered_qp(A, b)
    z0, v0 = brute_force_ordered_qp(A, b)
    np.testing.assert_allclose(0.5 * z @ A @ z + b @ z, v0, rtol=1e-8)
    np.testing.assert_allclose(z, z0, rtol=1e-5, atol=1e-8 * np.abs(z0).max())


# -- CCSKL: the spectrum ---------------------------------------------------------------------
def test_smoothest_eigenvectors_lobpcg_path_matches_dense(monkeypatch):
    img, truth, s = noisy_image()
    g = image_graph(img[:30, :40])
    d = g.degrees
    Lbar = g.laplacian.toarray() / np.sqrt(np.outer(d, d))
    mu0, V0 = sla.eigh(Lbar, subset_by_index=[0, 5])
    monkeypatch.setattr(cc, "DENSE_MAX", 10 ** 6)
    dense = cc.smoothest_eigenvectors(g, 6)
    assert dense.diagnostics is None
    np.testing.assert_allclose(dense.mu, np.maximum(mu0, 0), atol=1e-10)
    monkeypatch.setattr(cc, "DENSE_MAX", 10)
    it = cc.smoothest_eigenvectors(g, 6, eig_tol=1e-9, res_tol=1e-8, maxiter=500)
    assert it.diagnostics is not None and it.diagnostics.converged
    np.testing.assert_allclose(it.mu, mu0, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(it.F.T @ it.F, np.eye(6), atol=1e-8)      # orthonormal
    # same invariant subspace as the dense eigenvectors
    cosines = sla.svdvals(V0.T @ it.F)
    assert cosines.min() > 1 - 1e-6


def test_stroke_potentials_against_a_direct_solve():
    """Y_a = 1 on label a's strokes, 0 on the others, harmonic (L Y_a = 0) everywhere else."""
    img, truth, s = noisy_image()
    g = image_graph(img[:30, :40])
    sets = read_strokes(s[:30, :40], g.n).sets
    Y = GraphSolver(g.laplacian, g.degrees).potentials(sets, tol=cc.POTENTIAL_TOL)
    fixed = np.zeros(g.n, bool)
    fixed[np.concatenate(sets)] = True
    L = g.laplacian.tocsr()
    free = np.flatnonzero(~fixed)
    for a, S in enumerate(sets):
        ref = np.zeros(g.n)
        ref[S] = 1.0
        rhs = -(L[free][:, S] @ np.ones(S.size))
        ref[free] = sp.linalg.spsolve(L[free][:, free].tocsc(), rhs)
        # CG to a 1e-6 residual; the weak edges between regions cost ~30× in the error
        np.testing.assert_allclose(Y[:, a], ref, atol=1e-4)
    np.testing.assert_allclose(Y.sum(axis=1), 1.0, atol=1e-4)   # one connected graph


def test_must_link_basis():
    """Orthonormal, each D^{-1/2}f constant on every label's strokes, the potentials inside its
    span, ordered Ritz values fᵀL̄f."""
    img, truth, s = noisy_image()
    g = image_graph(img[:30, :40])
    sets = read_strokes(s[:30, :40], g.n).sets
    F = cc.smoothest_eigenvectors(g, 8).F
    Y = GraphSolver(g.laplacian, g.degrees).potentials(sets, tol=cc.POTENTIAL_TOL)
    B, theta = cc.must_link_basis(g, F, Y, sets)
    sqrt_d = np.sqrt(g.degrees)
    np.testing.assert_allclose(B.T @ B, np.eye(B.shape[1]), atol=1e-10)
    for S in sets:
        vals = B[S] / sqrt_d[S, None]
        assert np.abs(vals - vals.mean(axis=0)).max() < 1e-6 * np.abs(B).max()
    Psi = Y * sqrt_d[:, None]
    np.testing.assert_allclose(B @ (B.T @ Psi), Psi, atol=1e-8)
    Lbar = g.laplacian.toarray() / np.outer(sqrt_d, sqrt_d)
    np.testing.assert_allclose(np.einsum("ij,ij->j", B, Lbar @ B), theta, atol=1e-10)
    assert np.all(np.diff(theta) >= -1e-12)


def test_ccskl_extension_only_when_the_kernel_fails():
    """extend=False is the paper's CCSKL; where it keeps the strokes the extension never runs."""
    img, truth, s = noisy_image()
    res = segapp.segment(img, s, method="ccskl")
    paper = segapp.segment(img, s, method="ccskl", extend=False)
    assert not res.diagnostics.must_link_basis and res.diagnostics.stroke_weight == 1.0
    assert "potentials" not in res.timings
    assert np.array_equal(res.labels, paper.labels)


# -- SC-PC: the pieces ------------------------------------------------------------------------
def test_lookup_reproduces_the_papers_worked_example():
    # §2.3: x1 appears twice, x2 and x3 once; min 0.4, max 0.7 → lookupVec = (0.7, 1)
    np.testing.assert_allclose(sc.lookup_values(np.array([2, 1, 1]), 0.4, 0.7), [1.0, 0.7, 0.7])
    np.testing.assert_allclose(sc.lookup_values(np.array([3, 3]), 0.2, 0.5), [0.5, 0.5])  # m = 1
    # ranks, not values: a frequency of 50 does not blow the affinity up
    v = sc.lookup_values(np.array([1, 50, 2]), 0.1, 0.3)
    np.testing.assert_allclose(v, [0.1 + 0.1, 0.1 + 0.3, 0.1 + 0.2])


def lm_dense(code):
    """The plain Nadaraya–Watson Ẑ = Z D^{-1/2}, dense, by a loop."""
    Z = np.zeros((code.n, code.p))
    for i in range(code.n):
        for a in range(code.r):
            Z[i, code.idx[i, a]] += code.w[i, a] / np.sqrt(code.colsum[code.idx[i, a]])
    return Z


def dense_reference_zhat(code, points, comp, sets, l):
    """Ẑ of eqs. (3)–(6) built densely by loops, independently of constrained_code."""
    base = lm_dense(code)
    Z = base.copy()
    n = code.n
    stroke = np.concatenate(sets)
    label = {int(i): a for a, S in enumerate(sets) for i in S}
    for a in range(len(sets)):
        T = np.flatnonzero(comp == a)
        neigh = {}
        vals = []
        for j in T:                                  # l best non-stroke points of landmark j
            cand = [i for i in range(n) if base[i, j] > 0 and i not in label]
            cand.sort(key=lambda i: (-base[i, j], i))
            for i in cand[:l]:
                neigh[i] = neigh.get(i, 0) + 1
                vals.append(base[i, j])
        if not neigh:
            continue
        levels = sorted(set(neigh.values()))
        lo, hi = min(vals), max(vals)
        for i, f in neigh.items():
            v = hi if len(levels) == 1 else lo + (levels.index(f) + 1) * (hi - lo) / (len(levels) - 1)
            Z[i, T] = v
    for i in stroke:
        Z[i] = (comp == label[int(i)]).astype(float)
    return Z


def test_constrained_code_matches_a_dense_construction():
    rng = np.random.default_rng(3)
    X, truth, lab = blobs(seed=3, n_per=40, k=3, labelled=4)
    X = X + 1e-6 * rng.standard_normal(X.shape)      # no ties in the neighbour ranking
    feats = ArrayFeatures(X)
    strokes = read_strokes(lab, len(X), None)
    points, comp = sc.choose_landmarks(strokes, 1000, rng)
    code = sparse_code(feats, feats.rows(points), 4)
    zc, propagated = sc.constrained_code(code, comp, strokes, 3)
    Z = dense_reference_zhat(code, points, comp, strokes.sets, 3)
    dense = zc.apply(np.eye(code.p))
    np.testing.assert_allclose(dense, Z, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(zc.apply(np.eye(code.p), rows=np.array([0, 5, 77])), Z[[0, 5, 77]],
                               atol=1e-14)
    np.testing.assert_allclose(zc.gram(), Z.T @ Z, rtol=1e-10, atol=1e-13)
    base = lm_dense(code)
    changed = np.any(Z != base, axis=1) & (lab == 0)
    assert propagated > 0 and changed.sum() == propagated   # the non-stroke rows eq. (6) set


def test_choose_landmarks_caps_and_keeps_every_label():
    lab = np.zeros(1000, int)
    lab[:600], lab[600:603] = 1, 2
    strokes = read_strokes(lab, 1000, None)
    pts, comp = sc.choose_landmarks(strokes, 50, np.random.default_rng(0))
    assert pts.size <= 50 and set(comp) == {0, 1}
    assert np.all(lab[pts] == comp + 1)
    pts, comp = sc.choose_landmarks(strokes, 10_000, np.random.default_rng(0))
    assert pts.size == 603                      # under the cap: every stroke pixel


# -- both: accuracy, constraints, determinism ------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_blobs_accuracy(name):
    X, truth, lab = blobs()
    res = segapp.cluster(lab, method=name, **data_for(name, X))
    assert res.labels.shape == truth.shape and res.label_ids == (1, 2, 3, 4)
    assert np.mean(res.labels == truth) >= 0.95
    assert np.all(res.labels[lab > 0] == lab[lab > 0])
    assert res.eigenvectors.shape[0] == truth.size and res.method == name


@pytest.mark.parametrize("name", NAMES)
def test_noisy_image_accuracy_and_strokes_kept(name):
    img, truth, s = noisy_image()
    res = segapp.segment(img, s, method=name)
    assert res.labels.shape == truth.shape and res.labels.dtype == np.int32
    assert np.mean(res.labels == truth) >= 0.95
    assert np.all(res.labels[s > 0] == s[s > 0])
    assert res.eigenvectors.shape[:2] == truth.shape and res.eigenvectors.dtype == np.float32
    assert "total" in res.timings


def test_ccskl_reuses_its_spectrum_between_edits():
    img, truth, s = noisy_image()
    sess = segapp.Session(img, method="ccskl")
    first = sess.update(s)
    assert "eigensolver" in first.timings
    s2 = s.copy()
    s2[20, 50:60] = 2
    second = sess.update(s2)
    assert "eigensolver" not in second.timings and "qp" in second.timings
    beta = second.diagnostics.beta
    assert np.all(np.diff(beta) <= 1e-12) and beta[-1] >= 0     # (16) holds


@pytest.mark.parametrize("name", NAMES)
def test_seed_determinism(name):
    img, truth, s = noisy_image(1)
    a = segapp.segment(img, s, method=name, seed=5)
    b = segapp.segment(img, s, method=name, seed=5)
    assert np.array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.eigenvectors, b.eigenvectors)


# -- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_bad_inputs(name):
    X, truth, lab = blobs(k=3, n_per=50)
    cls = get(name)
    data = data_for(name, X)
    with pytest.raises(InvalidInputError, match="unknown option"):
        cls.from_data(**data, bogus=1)
    with pytest.raises(InvalidInputError, match="no strokes"):
        cls.from_data(**data).update(np.zeros(len(X), int))
    with pytest.raises(InvalidInputError, match="only label 1"):
        cls.from_data(**data).update(np.where(lab == 1, 1, 0))
    with pytest.raises(InvalidInputError):
        cls.from_data(**data).update(lab[:-1])
    with pytest.raises(Cancelled):
        cls.from_data(**data).update(lab, cancel=lambda: True)
    if name == "ccskl":
        with pytest.raises(InvalidInputError, match="graph"):
            cls.from_data(features=X)
        with pytest.raises(InvalidInputError, match="n_eigenvectors"):
            cls.from_data(**data, n_eigenvectors=2).update(lab)      # k = 3 > m
        for bad in (0, 2.5, len(X) + 1):
            with pytest.raises(InvalidInputError, match="n_eigenvectors"):
                cls.from_data(**data, n_eigenvectors=bad)
        with pytest.raises(InvalidInputError, match="confidence"):
            cls.from_data(**data).update(lab, confidence=np.full(len(X), 2.0))
        with pytest.raises(InvalidInputError, match="row_normalise"):
            cls.from_data(**data, row_normalise="yes")
    else:
        with pytest.raises(InvalidInputError, match="feature"):
            cls.from_data(graph=data_for("ccskl", X)["graph"])
        for bad in (dict(n_neighbours=0), dict(n_nearest=1), dict(n_landmarks=1)):
            with pytest.raises(InvalidInputError):
                cls.from_data(**data, **bad)


def test_registry_lists_every_method_of_the_papers():
    assert set(REGISTRY) >= {"fastge", "ncut", "landmark", "ensemble", "scacs", "ccskl", "scpc"}
    for name in NAMES:
        cls = REGISTRY[name]
        assert cls.name == name and cls.constrained and cls.description
        assert "seed" in option_names(name)


def test_ccskl_paper_literal_embedding_is_available():
    """row_normalise=False: k-means on the rows of FΛ^{1/2} exactly as Algorithm 1 prints it."""
    X, truth, lab = blobs()
    lit = segapp.cluster(lab, graph=knn_graph(X), method="ccskl", row_normalise=False)
    assert np.mean(lit.labels == truth) >= 0.95
    img, truth, s = noisy_image()
    a = segapp.segment(img, s, method="ccskl", row_normalise=False)
    b = segapp.segment(img, s, method="ccskl")
    np.testing.assert_array_equal(a.eigenvectors, b.eigenvectors)   # same kernel, other k-means


def test_scpc_memory_does_not_grow_with_the_painted_pixels():
    """Issue 32: a fill of 120K pixels made SC-PC hold 6.8 GB for 174 s — eq. (3) wrote each
    painted pixel's row, |T_a| ≈ 970 entries, out. Aggregated (V Eᵀ + K), a 150 × 200 image
    with 60% of its pixels painted needs the memory of the image, not of painted × landmarks
    (before: ~18,000 × ~600 entries, over 400 MB in the CSR and its temporaries)."""
    import tracemalloc

    import segapp
    rng = np.random.default_rng(0)
    img = np.zeros((150, 200, 3))
    img[:, 120:] = (0.2, 0.5, 0.9)
    img = np.clip(img + rng.normal(0, 0.03, img.shape), 0, 1)
    s = np.zeros((150, 200), np.int64)
    s[:, :110] = 1                                      # a fill: 16,500 painted pixels
    s[20:130, 160] = 2
    tracemalloc.start()
    try:
        res = segapp.segment(img, s, method="scpc")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80e6, peak
    assert (res.labels[:, :110] == 1).all() and (res.labels[:, 130:] == 2).mean() > 0.9
