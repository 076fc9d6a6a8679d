"""``benchmarks/synthetic.py``: the NoisyKnn Four-Moons generator, Rand / adjusted Rand index
against hand-worked examples and pair counting, the graph random walker against a dense
solve, and a ``--quick`` run of the harness (including a method that raises)."""

from __future__ import annotations

import csv
from itertools import combinations

import numpy as np
import pytest
import scipy.sparse as sp

import segapp.methods
from segapp.options import SEED
from benchmarks import synthetic as syn


# -- data ----------------------------------------------------------------------------------
def test_four_moons_balanced_and_interleaved():
    X, y = syn.four_moons(1502, 0.0, np.random.default_rng(0))
    assert X.shape == (1502, 2)
    assert np.bincount(y).tolist() == [376, 376, 375, 375]
    centres = np.c_[syn.MOON_SPACING * y, syn.MOON_OFFSET * (y % 2)]
    assert np.allclose(np.linalg.norm(X - centres, axis=1), 1.0)      # noise 0: on the arcs
    up = X[:, 1] - centres[:, 1]
    assert np.all(up[y % 2 == 0] >= -1e-12) and np.all(up[y % 2 == 1] <= 1e-12)
    # neighbouring moons overlap in x (interleaved), and no two curves come closer than 0.5
    for j in range(3):
        assert X[y == j, 0].max() > X[y == j + 1, 0].min()
    gap = min(np.min(np.linalg.norm(X[y == i][:, None] - X[y == j][None], axis=2))
              for i, j in combinations(range(4), 2))
    assert 0.49 < gap < 0.52


def test_knn_adjacency_matches_brute_force():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 2))
    k = 7
    A = syn.knn_adjacency(X, k)
    D = np.linalg.norm(X[:, None] - X[None], axis=2)
    nearest = np.argsort(D, axis=1)[:, 1:k + 1]
    want = np.zeros_like(D, bool)
    want[np.repeat(np.arange(120), k), nearest.ravel()] = True
    want |= want.T
    assert np.array_equal(A.toarray() > 0, want)
    assert np.allclose(A.toarray()[want], D[want])                    # entries are distances


def test_noisy_knn_structure():
    n, k_g, l_g = 400, 30, 15
    X, y = syn.four_moons(n, 0.1, np.random.default_rng(2))
    W = syn.noisy_knn(X, k_g, l_g, np.random.default_rng(3))
    assert W.shape == (n, n) and abs(W - W.T).max() == 0               # symmetric
    assert W.diagonal().max() == 0                                      # no self loops
    assert set(np.unique(W.data)) == {1.0}                              # binary weights
    assert np.diff(W.indptr).min() >= k_g                               # ≥ k_g neighbours
    # exactly kNN ∪ Erdős–Rényi (same random stream)
    union = (syn.knn_adjacency(X, k_g) + syn.erdos_renyi(n, l_g / n, np.random.default_rng(3))) > 0
    assert (W != union).nnz == 0


def test_erdos_renyi_edge_count_and_spread():
    n, l_g = 1500, 15.0
    counts = []
    for seed in range(3):
        A = syn.erdos_renyi(n, l_g / n, np.random.default_rng(seed))
        assert abs(A - A.T).max() == 0 and A.diagonal().max() == 0
        counts.append(A.nnz // 2)
    p = l_g / n
    pairs = n * (n - 1) / 2
    sd = np.sqrt(pairs * p * (1 - p))                                    # ≈ 105
    for c in counts:
        assert abs(c - n * l_g / 2) < 5 * sd + l_g                       # expectation ≈ n l_g / 2
    assert len(set(counts)) == 3                                         # random, not fixed
    A = syn.erdos_renyi(n, l_g / n, np.random.default_rng(0))
    i, j = sp.triu(A, 1).nonzero()
    # pairs drawn uniformly: 3/4 of them have their smaller end in the first half
    assert abs(np.mean(i < n // 2) - 0.75) < 0.03


def test_gaussian_weights():
    X, _ = syn.four_moons(300, 0.1, np.random.default_rng(4))
    knn = syn.knn_adjacency(X, 10)
    W = syn.noisy_knn(X, 10, 15, np.random.default_rng(5), weights="gaussian")
    assert abs(W - W.T).max() < 1e-15 and W.diagonal().max() == 0
    assert W.data.min() > 0 and W.data.max() <= 1
    on_knn = np.asarray(W[knn > 0]).ravel()
    random_only = W - W.multiply(knn > 0)
    assert np.allclose(random_only.data, np.median(on_knn))
    with pytest.raises(ValueError):
        syn.noisy_knn(X, 10, 15, np.random.default_rng(5), weights="cosine")


def test_sample_labels_covers_every_class():
    y = np.r_[np.zeros(97, int), 1, 2, 3]               # three singleton classes: many redraws
    for seed in range(5):
        lab = syn.sample_labels(y, 50, np.random.default_rng(seed))
        assert np.count_nonzero(lab) == 50
        assert set(lab[lab > 0]) == {1, 2, 3, 4}
        assert np.all(lab[lab > 0] == y[lab > 0] + 1)
    with pytest.raises(ValueError):
        syn.sample_labels(y, 3, np.random.default_rng(0))


# -- metrics -------------------------------------------------------------------------------
def brute_rand(a, b) -> float:
    pairs = list(combinations(range(len(a)), 2))
    return sum((a[i] == a[j]) == (b[i] == b[j]) for i, j in pairs) / len(pairs)


def test_rand_hand_examples():
    # 2×2 contingency [[2, 1], [0, 3]]: 10 of 15 pairs agree; Σ C(n_ij,2) = 4,
    # Σ C(a_i,2) = 6, Σ C(b_j,2) = 7, expected 6·7/15 = 2.8, max 6.5 → ARI 1.2/3.7 = 12/37
    truth, pred = [0, 0, 0, 1, 1, 1], [5, 5, 7, 7, 7, 7]
    assert syn.pair_counts(truth, pred) == (4, 6, 7, 15)
    assert syn.rand_index(truth, pred) == pytest.approx(2 / 3)
    assert syn.adjusted_rand_index(truth, pred) == pytest.approx(12 / 37)
    # split one cluster: RI 5/6, ARI (1 − 1/3) / (3/2 − 1/3) = 4/7
    assert syn.rand_index([0, 0, 1, 1], [0, 0, 1, 2]) == pytest.approx(5 / 6)
    assert syn.adjusted_rand_index([0, 0, 1, 1], [0, 0, 1, 2]) == pytest.approx(4 / 7)
    # [[2, 0], [1, 1]]: RI 1/2 and exactly chance level
    assert syn.rand_index([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(0.5)
    assert syn.adjusted_rand_index([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(0.0)


def test_rand_properties():
    rng = np.random.default_rng(6)
    a = rng.integers(0, 4, 40)
    b = rng.integers(0, 3, 40)
    perm = np.array([3, 0, 2, 1])
    assert syn.rand_index(a, a) == 1 and syn.adjusted_rand_index(a, a) == 1
    assert syn.rand_index(a, perm[a] + 10) == 1 and syn.adjusted_rand_index(a, perm[a]) == 1
    assert syn.rand_index(a, b) == pytest.approx(brute_rand(a, b))
    assert syn.rand_index(a, b) == pytest.approx(syn.rand_index(b, a))
    assert syn.adjusted_rand_index(a, b) == pytest.approx(syn.adjusted_rand_index(b, a))
    assert syn.adjusted_rand_index(perm[a], b) == pytest.approx(syn.adjusted_rand_index(a, b))
    assert syn.adjusted_rand_index(a, b) < 1
    assert syn.adjusted_rand_index(np.zeros(5), np.ones(5)) == 1       # one cluster each
    # independent labelings: ARI ≈ 0 on average, RI not (it rewards chance agreement)
    aris = [syn.adjusted_rand_index(rng.integers(0, 4, 300), rng.integers(0, 4, 300))
            for _ in range(40)]
    assert abs(np.mean(aris)) < 0.01
    assert syn.rand_index(rng.integers(0, 4, 3000), rng.integers(0, 4, 3000)) == pytest.approx(
        0.625, abs=0.01)                                                 # 1/4·1/4 + 3/4·3/4
    with pytest.raises(ValueError):
        syn.rand_index([0, 1], [0, 1, 1])


# -- peer ----------------------------------------------------------------------------------
def test_graph_random_walker_two_cliques():
    n = 10
    block = np.ones((n, n)) - np.eye(n)
    W = sp.lil_matrix(sp.block_diag([block, block]))
    W[0, n] = W[n, 0] = 0.1                                              # one weak bridge
    labels = np.zeros(2 * n, int)
    labels[3], labels[n + 5] = 7, 2                                      # any label ids
    out = syn.graph_random_walker(W.tocsr(), labels)
    assert out.tolist() == [7] * n + [2] * n


def test_graph_random_walker_matches_dense_dirichlet():
    X, y = syn.four_moons(200, 0.1, np.random.default_rng(7))
    W = syn.noisy_knn(X, 10, 0.0, np.random.default_rng(8), weights="gaussian")  # no random edges
    labels = syn.sample_labels(y, 20, np.random.default_rng(9))
    L = np.diag(np.asarray(W.sum(1)).ravel()) - W.toarray()
    U, M = labels == 0, labels > 0
    seeds = (labels[M][:, None] == np.arange(1, 5)[None]).astype(float)
    pot = np.linalg.solve(L[np.ix_(U, U)], -L[np.ix_(U, M)] @ seeds)
    want = labels.copy()
    want[U] = 1 + np.argmax(pot, axis=1)
    assert np.array_equal(syn.graph_random_walker(W, labels), want)
    assert syn.rand_index(y + 1, want) > 0.9


def test_graph_random_walker_unseeded_component_gets_first_label():
    W = sp.block_diag([np.ones((3, 3)) - np.eye(3)] * 2).tocsr()
    out = syn.graph_random_walker(W, np.array([5, 3, 0, 0, 0, 0]))
    assert out[:2].tolist() == [5, 3] and out[3:].tolist() == [3, 3, 3]


# -- harness -------------------------------------------------------------------------------
def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_quick_main_writes_csv_and_plot(tmp_path, capsys):
    assert syn.main(["--quick", "--methods", "fastge", "rw", "--out", str(tmp_path)]) == 0
    rows = read_rows(tmp_path / "synthetic.csv")
    assert len(rows) == 2 * 2 * 2                               # methods × counts × trials
    assert {(r["method"], r["n_labels"]) for r in rows} == {
        (m, c) for m in ("fastge", "rw") for c in ("25", "50")}
    assert all(r["failed"] == "0" and r["n"] == "300" for r in rows)
    ri = {m: np.array([float(r["ri"]) for r in rows if r["method"] == m]) for m in ("fastge", "rw")}
    assert np.all((ri["rw"] > 0) & (ri["rw"] <= 1))
    assert np.all((ri["fastge"] > 0.8) & (ri["fastge"] <= 1))
    assert (tmp_path / "synthetic.png").stat().st_size > 1000
    out = capsys.readouterr().out
    assert "Rand index" in out and "Adjusted Rand index" in out and syn.RW_TITLE in out
    # the time table: per method a row, per count its mean seconds over the trials (from the
    # CSV) and the ratio to rw's mean in the same run (rw against itself: 1.0×)
    times = out[out.index("Seconds per call"):]
    rows_of = {m: next(ln for ln in times.splitlines() if ln.startswith(m + " "))
               for m in ("fastge", "rw")}
    for count in ("25", "50"):
        mean = {m: np.mean([float(r["seconds"]) for r in rows
                            if r["method"] == m and r["n_labels"] == count])
                for m in ("fastge", "rw")}
        assert np.isfinite(mean["fastge"]) and np.isfinite(mean["rw"])
        for m in ("fastge", "rw"):
            cell = f"{mean[m]:.4f}±"
            ratio = f"({mean[m] / mean['rw']:5.1f}×)"
            assert cell in rows_of[m] and ratio in rows_of[m], (m, count, cell, ratio, rows_of[m])
    assert rows_of["rw"].count("(  1.0×)") == 2


class Boom:
    name = "boom"
    description = "always raises"
    options = (SEED,)

    @classmethod
    def from_data(cls, **_):
        raise ValueError("kaboom")


def test_failing_method_is_counted_and_reported_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(segapp.methods.REGISTRY, "boom", Boom)
    assert syn.main(["--quick", "--methods", "boom", "rw", "--out", str(tmp_path)]) == 0
    rows = read_rows(tmp_path / "synthetic.csv")
    boom = [r for r in rows if r["method"] == "boom"]
    assert len(boom) == 4 and all(r["failed"] == "1" and "kaboom" in r["error"] for r in boom)
    assert all(r["failed"] == "0" for r in rows if r["method"] == "rw")
    out = capsys.readouterr().out
    assert out.count("kaboom") == 1
    assert any(line.startswith("boom ") and line.endswith("| 4/4") for line in out.splitlines())


def test_unknown_method_is_an_error(tmp_path):
    with pytest.raises(SystemExit):
        syn.main(["--quick", "--methods", "nosuch", "--out", str(tmp_path)])
