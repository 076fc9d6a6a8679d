"""The generalized eigenproblem L_G x = λ L_H x of FAST-GE (§4.2–4.4, §4.7) against dense solvers.

The reference pencil is assembled here from scratch, densely:

* ``L_G = L_D + L_ML`` with the ML clique built pair by pair (weights d_i d_j / (d_min d_max));
* ``L_H = L_K / n + L_CL`` with the demand graph ``K_ij = d_i d_j / vol`` (i ≠ j) and the CL
  clique built pair by pair;

and its smallest eigenpairs on the hyperplane ``dᵀx = 0`` come from ``scipy.linalg.eigh``
on an orthonormal basis of that hyperplane.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla

from segapp.strokes.constraints import build_constraints
from segapp.graphs.image import image_graph
from segapp.solve.lobpcg import lobpcg
from segapp.methods.fastge import FastGE
from segapp.solve.pencil import Pencil

from scenes import from_scratch, noisy_blocks, restricted_eigh, strokes

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def problem():
    img, truth = noisy_blocks()
    s = strokes(truth)
    # The pencil's algebra on a graph with the blocks' noise in it: the raw-colour graph
    # (the TV pre-filter flattens these 30×30 blocks so far that d_min/n falls below the
    # conditioning the exact-arithmetic checks below assume).
    g = image_graph(img, denoise=0)
    cons = build_constraints(s, g.degrees)
    pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
    LG, LH, LCL, d = from_scratch(g.laplacian, s)
    lam, V = restricted_eigh(LG, LH, d, 6)
    return dict(img=img, truth=truth, s=s, g=g, cons=cons, pencil=pencil, LG=LG, LH=LH,
                LCL=LCL, d=d, lam=lam, V=V)


def test_dense_pencil_matches_the_from_scratch_construction(problem):
    p = problem
    A, B = p["pencil"].dense()
    np.testing.assert_allclose(A, p["LG"], rtol=0, atol=1e-10 * np.abs(p["LG"]).max())
    np.testing.assert_allclose(B, p["LH"], rtol=0, atol=1e-10 * np.abs(p["LH"]).max())
    # the operator A is L_G itself (everywhere, not only on the hyperplane)
    X = np.random.default_rng(31).standard_normal((p["d"].size, 3))
    np.testing.assert_allclose(p["pencil"].A(X), p["LG"] @ X, rtol=1e-9,
                               atol=1e-10 * np.abs(p["LG"]).max())
    # both Laplacians annihilate the constants: no eigenvalue belongs to 1
    one = np.ones(p["d"].size)
    assert np.abs(p["LG"] @ one).max() < 1e-9 * np.abs(p["LG"]).max()
    assert np.abs(p["LH"] @ one).max() < 1e-9 * np.abs(p["LH"]).max()


def test_B_is_the_demand_part_of_L_H_on_the_hyperplane(problem):
    p = problem
    pencil, d, n = p["pencil"], p["d"], p["d"].size
    rng = np.random.default_rng(32)
    X = pencil.project(rng.standard_normal((n, 4)))
    scale = np.abs(p["LH"]).max()
    # L_H x = (L_CL + D/n) x for dᵀx = 0 …
    np.testing.assert_allclose(p["LH"] @ X, (p["LCL"] + np.diag(d) / n) @ X, rtol=0,
                               atol=1e-10 * scale)
    np.testing.assert_allclose(pencil.B(X), p["LH"] @ X, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(pencil.B(X[:, 0]), p["LH"] @ X[:, 0], rtol=0, atol=1e-10 * scale)
    # … but not off it: B1 = d/n while L_H 1 = 0 (so the identity is not trivially true)
    np.testing.assert_allclose(pencil.B(np.ones((n, 1)))[:, 0], d / n, rtol=0, atol=1e-10 * scale)
    assert np.abs(p["LH"] @ np.ones(n)).max() < 1e-10 * scale and (d / n).min() > 1e-8 * scale
    # B is symmetric positive definite (LOBPCG's requirement), L_H only semi-definite
    Bd = pencil.B(np.eye(n))
    np.testing.assert_allclose(Bd, Bd.T, atol=1e-12 * scale)
    assert np.linalg.eigvalsh(Bd).min() > 0.5 * d.min() / n


@pytest.mark.parametrize("block", [37, 10**6])
def test_ritz_grams_are_the_dense_pencils_on_the_projected_basis(problem, block, monkeypatch):
    """Rayleigh–Ritz's Gram matrices, summed over blocks of rows (a block size that splits
    the image unevenly, and one block), against ``Ypᵀ L_G Yp`` and ``Ypᵀ L_H Yp`` of the
    dense pencil assembled from scratch, plus the anchors' energy (:func:`anchor_gram`)."""
    from segapp.solve import harmonic

    p = problem
    pencil, n = p["pencil"], p["d"].size
    rng = np.random.default_rng(33)
    Y = rng.random((n, 4))
    w, P = rng.random(n), rng.dirichlet(np.ones(4), n)
    Yp = pencil.project(Y)
    monkeypatch.setattr(harmonic, "GRAM_ROWS", block)
    for anchors in (None, (w, P)):
        GA, GB = harmonic._ritz_grams(pencil, Y, Yp, pencil.A(Yp), anchors)
        GA_ref = Yp.T @ p["LG"] @ Yp
        if anchors is not None:
            GA_ref = GA_ref + harmonic.anchor_gram(Y, w, P)
        np.testing.assert_allclose(GA, GA_ref, rtol=1e-9, atol=1e-12 * np.abs(GA_ref).max())
        np.testing.assert_allclose(GB, Yp.T @ p["LH"] @ Yp, rtol=1e-9,
                                   atol=1e-12 * np.abs(GB).max())
    np.testing.assert_allclose(pencil.cl.gram(Y), Y.T @ pencil.cl.toarray() @ Y, rtol=1e-9,
                               atol=1e-12 * np.abs(pencil.cl.toarray()).max() * n)


def test_project_gives_degree_orthogonal_vectors(problem):
    pencil, d = problem["pencil"], problem["d"]
    n = d.size
    rng = np.random.default_rng(33)
    X = rng.standard_normal((n, 5)) + 3.0
    P = pencil.project(X)
    assert np.abs(d @ P).max() < 1e-12 * np.abs(d).sum() * np.abs(X).max()
    # it removes a constant per column only, and is idempotent
    shift = X - P
    np.testing.assert_allclose(shift, np.broadcast_to(shift[0], shift.shape), atol=1e-12)
    np.testing.assert_allclose(pencil.project(P), P, atol=1e-12)
    np.testing.assert_allclose(pencil.project(np.ones(n)), 0, atol=1e-12)
    # B-orthogonal to the constant vector (the constraint Y = 1 of LOBPCG)
    assert np.abs(np.ones(n) @ pencil.B(P)).max() < 1e-10 * np.abs(pencil.B(P)).max() * n


@pytest.mark.parametrize("m", [3, 4])
def test_fastge_eigenpairs_match_dense_generalized_eigh(problem, m):
    p = problem
    # eig_tol 1e-9, not smaller: with m = 4 the three small pairs' residuals stagnate at
    # ~1e-7 relative (numpy 2.4 / scipy 1.17) while their Ritz values move < 1e-9.
    method = FastGE(p["g"], eigensolver="lobpcg", n_vectors=m, eig_tol=1e-9, res_tol=1e-10, maxiter=500)  # tight eigenpairs: the labels-settled stop off
    res = method.update(p["s"])
    assert res.diagnostics.converged
    assert res.eigenvalues.shape == (m,)
    np.testing.assert_allclose(res.eigenvalues, p["lam"][:m], rtol=1e-6)
    # The returned vectors (float32, L_H-normalised) are eigenvectors of the dense pencil …
    V = res.eigenvectors.reshape(-1, m).astype(np.float64)
    LG, LH, d = p["LG"], p["LH"], p["d"]
    assert np.abs(d @ V).max() < 1e-5 * np.abs(d).max() * np.abs(V).sum(0).max()
    nG, nH = np.linalg.norm(LG, 2), np.linalg.norm(LH, 2)
    for j in range(m):
        v = V[:, j]
        r = LG @ v - res.eigenvalues[j] * (LH @ v)
        # normwise backward error, at float32 precision
        assert np.linalg.norm(r) <= 1e-5 * (nG + res.eigenvalues[j] * nH) * np.linalg.norm(v)
        # … the same as the dense solver's up to sign (the eigenvalues are simple)
        u = p["V"][:, j]
        cos = (u @ LH @ v) / np.sqrt((u @ LH @ u) * (v @ LH @ v))
        assert abs(cos) > 1 - 1e-5
    # … and L_H-orthonormal
    np.testing.assert_allclose(V.T @ LH @ V, np.eye(m), atol=1e-4)


def test_lobpcg_with_an_exact_preconditioner_from_a_random_block(problem):
    """The eigensolver alone (no AMG): random start, dense Cholesky preconditioner."""
    p = problem
    pencil, LG, LH, d = p["pencil"], p["LG"], p["LH"], p["d"]
    n = d.size
    fac = sla.cho_factor(LG + 1e-8 * np.diag(d))
    rng = np.random.default_rng(34)
    X0 = rng.standard_normal((n, 5))                  # 3 wanted + 2 guard vectors
    lam, X, diag = lobpcg(pencil.A, pencil.B, X0, nev=3, M=lambda R: sla.cho_solve(fac, R),
                          project=pencil.project, maxiter=300, res_tol=1e-11, eig_tol=1e-14)
    assert diag.converged and diag.iterations >= 1
    assert np.all(np.diff(lam) > 0)
    np.testing.assert_allclose(lam, p["lam"][:3], rtol=1e-6)
    np.testing.assert_allclose(diag.eigenvalues, lam)
    assert diag.residuals.shape == (3,) and diag.residuals.max() <= 1e-9
    # B-orthonormal (B = L_H on the hyperplane), on the hyperplane, and eigenvectors
    np.testing.assert_allclose(X.T @ pencil.B(X), np.eye(3), atol=1e-8)
    np.testing.assert_allclose(X.T @ LH @ X, np.eye(3), atol=1e-8)
    assert np.abs(d @ X).max() < 1e-8 * np.abs(d).sum() * np.abs(X).max()
    R = LG @ X - (LH @ X) * lam
    assert np.linalg.norm(R, axis=0).max() < 1e-6 * np.linalg.norm(LG @ X, axis=0).max()


def test_the_old_eigensolver_name_segapp_is_lobpcg(problem):
    p = problem
    ours = FastGE(p["g"], eigensolver="lobpcg", eig_tol=1e-12, res_tol=1e-10, maxiter=500).update(p["s"])
    old = FastGE(p["g"], eigensolver="segapp", eig_tol=1e-12, res_tol=1e-10, maxiter=500).update(p["s"])
    assert ours.eigenvalues.shape == (3,)
    np.testing.assert_array_equal(old.eigenvalues, ours.eigenvalues)
    np.testing.assert_array_equal(old.labels, ours.labels)


def test_unconstrained_pencil_is_normalized_cut_times_n():
    # Footnote 1 of §4.3: with H = K the problem is L x = λ D x (here H = K/n: λ scales by n).
    img, _ = noisy_blocks(16, 18, seed=35)
    g = image_graph(img, denoise=0)                   # raw colours, as the fixture above
    pencil = Pencil(g.laplacian, g.degrees)
    n, d = g.n, g.degrees
    A, B = pencil.dense()
    np.testing.assert_allclose(B, (np.diag(d) - np.outer(d, d) / d.sum()) / n, atol=1e-14)
    ref = sla.eigh(g.laplacian.toarray(), np.diag(d), eigvals_only=True, subset_by_index=[0, 3])
    assert abs(ref[0]) < 1e-10                        # the constant, excluded by dᵀx = 0
    fac = sla.cho_factor(g.laplacian.toarray() + 1e-6 * np.diag(d))
    lam, X, diag = lobpcg(pencil.A, pencil.B, np.random.default_rng(36).standard_normal((n, 3)),
                          M=lambda R: sla.cho_solve(fac, R), project=pencil.project,
                          maxiter=300, res_tol=1e-11, eig_tol=1e-14)
    assert diag.converged
    np.testing.assert_allclose(lam, n * ref[1:], rtol=1e-6)


def test_embedding_of_fig2_is_invariant_to_scaling_and_constant_shifts(problem):
    """partition.embed: steps 1–10 of Fig. 2 checked against the dense L_H built from scratch."""
    from segapp.partition import embed
    p = problem
    pencil, LH, d = p["pencil"], p["LH"], p["d"]
    n = d.size
    X = p["V"][:, :3]                                    # dense eigenvectors (dᵀx = 0)
    U, lengths, V = embed(X, pencil)
    # steps 4–5: dᵀv = 0 and vᵀ L_H v = 1
    assert np.abs(d @ V).max() < 1e-10 * np.abs(d).sum() * np.abs(V).max()
    np.testing.assert_allclose(np.einsum("ij,ij->j", V, LH @ V), 1.0, rtol=1e-9)
    # steps 8–10: rows of U on the unit sphere, l = row norms of V
    np.testing.assert_allclose(lengths, np.linalg.norm(V, axis=1), rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(U * lengths[:, None], V, rtol=1e-12, atol=1e-15)
    # x ↦ a·x + c·1 (another representative of the same eigenvector) embeds identically
    scaled = X * np.array([1e3, -2.0, 0.01]) + np.array([5.0, -1.0, 0.3])
    U2, l2, V2 = embed(scaled, pencil)
    signs = np.array([1.0, -1.0, 1.0])
    np.testing.assert_allclose(V2, V * signs, rtol=1e-7, atol=1e-10 * np.abs(V).max())
    np.testing.assert_allclose(l2, lengths, rtol=1e-7)
    assert U.shape == (n, 3)
