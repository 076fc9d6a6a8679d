"""segapp.solve.amg: the block V-cycle is a fixed symmetric positive definite operator (what LOBPCG's
theory asks of a preconditioner, as the module promises), checked against its dense matrix on
small graphs; and it is a convergent multigrid cycle for the matrix it was built on."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp

from segapp.cancel import CancelToken
from segapp.solve.amg import (AMG_SHIFT, MAX_COARSE, AMGPreconditioner, CholeskySolve,
                              build_hierarchy)
from segapp.errors import Cancelled
from segapp.graphs.image import image_graph

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def image(seed: int, H: int = 30, W: int = 34) -> np.ndarray:
    """Two regions and a disc with noise: weights from the floor to ~1, as on photos."""
    rng = np.random.default_rng(seed)
    img = np.zeros((H, W, 3))
    img[:, W // 2:] = (0.8, 0.3, 0.2)
    yy, xx = np.mgrid[:H, :W]
    img[(yy - H / 2) ** 2 + (xx - W / 4) ** 2 < (H / 4) ** 2] = (0.2, 0.3, 0.9)
    return np.clip(img + rng.normal(0, 0.06, img.shape), 0, 1)


def shifted_laplacian(seed: int, **graph_options) -> sp.csr_matrix:
    g = image_graph(image(seed), denoise=0, **graph_options)
    return (g.laplacian + sp.diags(AMG_SHIFT * g.degrees)).tocsr()


CASES = [(0, {}, 1), (1, {"connectivity": 4}, 1), (2, {"radius": 2}, 1), (3, {}, 2)]


@pytest.fixture(scope="module", params=CASES, ids=["c8", "c4", "r2", "c8-2sweeps"])
def cycle(request):
    seed, options, sweeps = request.param
    A = shifted_laplacian(seed, **options)
    M = AMGPreconditioner(A, sweeps=sweeps)
    dense = M(np.eye(A.shape[0]))                 # the cycle's matrix, column by column
    return A, M, dense


def test_the_hierarchy_has_coarse_levels(cycle):
    A, M, _ = cycle
    assert A.shape[0] > MAX_COARSE and len(M.levels) >= 2   # a real V-cycle, not one dense solve
    assert all(level.P is not None for level in M.levels[:-1]) and M.levels[-1].P is None
    assert isinstance(M.coarse, CholeskySolve)     # shifted: the coarsest level is SPD
    assert 1.0 < M.operator_complexity < 3.0


def test_v_cycle_is_symmetric(cycle):
    _, M, dense = cycle
    rng = np.random.default_rng(5)
    n = dense.shape[0]
    for _ in range(20):
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        xMy, yMx = x @ M(y), y @ M(x)
        assert abs(xMy - yMx) <= 1e-10 * (abs(xMy) + np.linalg.norm(x) * np.linalg.norm(M(x)))
    assert np.abs(dense - dense.T).max() <= 1e-10 * np.abs(dense).max()


def test_v_cycle_is_positive_definite(cycle):
    _, M, dense = cycle
    rng = np.random.default_rng(6)
    X = rng.standard_normal((dense.shape[0], 50))
    assert np.all(np.einsum("ij,ij->j", X, M(X)) > 0)
    assert sla.eigvalsh((dense + dense.T) / 2)[0] > 0


def test_v_cycle_is_a_convergent_cycle_for_its_matrix(cycle):
    """Symmetric smoothing around a Galerkin coarse correction: ``I − MA`` is A-symmetric with
    spectrum in [0, 1), so ``MA`` has its eigenvalues in (0, 1]."""
    A, _, dense = cycle
    L = np.linalg.cholesky(A.toarray())
    mu = sla.eigvalsh(L.T @ dense @ L)            # similar to M A
    assert mu[0] > 0 and mu[-1] <= 1 + 1e-8


def test_a_block_is_cycled_column_by_column(cycle):
    _, M, _ = cycle
    rng = np.random.default_rng(7)
    B = rng.standard_normal((M.levels[0].A.shape[0], 4))
    np.testing.assert_allclose(M(B), np.column_stack([M(b) for b in B.T]), rtol=1e-12,
                               atol=1e-12 * np.abs(M(B)).max())


def test_galerkin_operators_are_symmetric_and_shrink():
    A = shifted_laplacian(0)
    ops, Ps = build_hierarchy(A, theta=0.03)
    for fine, P, coarse in zip(ops, Ps, ops[1:]):
        assert coarse.shape[0] < fine.shape[0] == P.shape[0] and P.shape[1] == coarse.shape[0]
        np.testing.assert_allclose(coarse.toarray(), (P.T @ fine @ P).toarray(), atol=1e-12)
        assert abs(coarse - coarse.T).max() <= 1e-12 * abs(coarse).max()


def test_cancel_stops_set_up_and_application():
    A = shifted_laplacian(0)
    with pytest.raises(Cancelled):
        AMGPreconditioner(A, cancel=CancelToken(lambda: True))
    M = AMGPreconditioner(A)
    with pytest.raises(Cancelled):
        M(np.ones(A.shape[0]), CancelToken(lambda: True))
    applications = M.applications
    M(np.ones(A.shape[0]))
    assert M.applications == applications + 1


def _operators(M: AMGPreconditioner) -> list[sp.csr_matrix]:
    return [level.A for level in M.levels]


def _prolongators(M: AMGPreconditioner) -> list[sp.csr_matrix]:
    return [level.P for level in M.levels[:-1]]


def _galerkin(A: sp.csr_matrix, Ps: list[sp.csr_matrix]) -> list[sp.csr_matrix]:
    ops = [A]
    for P in Ps:
        ops.append((P.T @ ops[-1] @ P).tocsr())
    return ops


def _assert_same(got: list[sp.csr_matrix], want: list[sp.csr_matrix]) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert abs(a - b).max() <= 1e-12 * abs(b).max()


def test_galerkin_update_equals_the_galerkin_products_of_the_new_matrix():
    """Rows made Dirichlet (decoupled), twice in a row as strokes are added: every level's
    operator is PᵀA'P of the new matrix with the updated P_0, multiplied out here."""
    from segapp.solve.harmonic import dirichlet_matrix
    g = image_graph(image(5, 70, 74), denoise=0)
    shift = sp.diags(AMG_SHIFT * g.degrees)
    rng = np.random.default_rng(0)
    fixed = [np.zeros(g.n, bool)]
    fixed[0][rng.choice(g.n, 40, replace=False)] = True
    for _ in range(2):                                       # two strokes added
        more = fixed[-1].copy()
        more[rng.choice(g.n, 60, replace=False)] = True
        fixed.append(more)
    A = [dirichlet_matrix(g.laplacian, f) + shift for f in fixed]
    M = AMGPreconditioner(A[0])
    assert len(M.levels) >= 3
    built = M.levels[0].P.toarray()
    for step in (1, 2):
        new = fixed[step] & ~fixed[step - 1]
        M.galerkin_update(A[step] - A[step - 1], decoupled=np.flatnonzero(new))
        P0 = M.levels[0].P.toarray()
        np.testing.assert_array_equal(P0[fixed[step] & ~fixed[0]], 0.0)
        np.testing.assert_array_equal(P0[~fixed[step]], built[~fixed[step]])
        _assert_same(_operators(M), _galerkin(sp.csr_matrix(A[step]), _prolongators(M)))
