"""Synthetic benchmark: the Four-Moons NoisyKnn graph of the FAST-GE paper (§7.2, Figures 3–4).

Cucuringu, Koutis, Chawla, Miller, Peng, "Simple and Scalable Constrained Clustering: A
Generalized Spectral Method", AISTATS 2016, §7.2: a graph from the ensemble
``NoisyKnn(n = 1500, k_g = 30, l_g = 15)``, a random set of labelled nodes, Rand index and
running time against the number of labelled nodes.

Protocol
--------
Points (the paper does not give its generator; Figure 3 only shows four moon-shaped clusters)
    Four interleaved half-moons in a row, the two-moons layout of scikit-learn's
    ``make_moons`` continued to four: moon ``j = 0..3`` is the unit half circle centred at
    ``(1.25 j, 0.4 (j mod 2))``, the upper half for even ``j`` and the lower half for odd
    ``j``, so each moon's ends reach into the hollow of its neighbours. The spacing 1.25 and
    offset 0.4 make the smallest distance between any two moon curves 0.5 (as between the
    two moons of ``make_moons``). Angles are uniform on ``[0, π]``; isotropic Gaussian noise
    of standard deviation ``--noise`` (0.1) is added to both coordinates. Classes are
    balanced: ``n // 4`` points per moon, the first ``n mod 4`` moons one more (375 each for
    n = 1500).
Graph ``NoisyKnn(n, k_g, l_g)``
    ``G = H_1 ∪ H_2`` on the same n vertices: ``H_1`` joins every point to its ``k_g``
    nearest neighbours (Euclidean; symmetrised by union, so every vertex has degree
    ``≥ k_g``), ``H_2`` is Erdős–Rényi, every unordered pair an edge with probability
    ``l_g / n`` independently (about ``n l_g / 2`` = 11 250 random edges, three quarters of
    them between different moons). No self loops.
Edge weights (``--weights``)
    ``binary`` (default): the union of two unweighted graphs, every edge weight 1. This is
    what the paper describes — G *is* the union of a kNN graph and an Erdős–Rényi graph, and
    its image experiments (§7.3) name their RBF kernel explicitly where §7.2 names none.
    ``gaussian``: kNN edges ``exp(−d² / 2σ²)`` with σ the median over the vertices of the
    distance to their ``k_g``-th neighbour; random edges (that are not also kNN edges) get
    the median kNN edge weight, so noise edges are as strong as a typical data edge.
Constraints
    ``m`` nodes drawn uniformly without replacement carry their true label (1..4), all others
    0 (segapp's label-map convention: same label = must-link, different = cannot-link, i.e.
    all ML/CL pairs among the labelled nodes, unweighted, as in the paper). A draw that misses
    a class is discarded and redrawn (every method needs all k labels to name k clusters).
    ``m`` ∈ {25, 50, 75, 100, 125, 150}.
Trials
    ``--trials`` (20) random trials. Trial ``t`` draws a new point set and a new graph
    (seeded by ``(--seed, t)``), shared by every label count and method of that trial; for
    each ``m`` a new labelled set (seeded by ``(--seed, t, m)``), shared by every method. So
    the spread over trials covers the graph noise and the choice of labelled nodes, and all
    methods see identical inputs.
Methods
    Every method registered in :data:`segapp.methods.REGISTRY` at run time (or ``--methods``),
    called as ``segapp.cluster(labels, graph=W, features=X, method=name, seed=trial)`` —
    ``seed`` only for methods that accept it — with their default options otherwise (the
    landmark methods' ``n_landmarks`` is 1000, which at n = 1500 selects 1000 of 1500 points;
    the number actually used is in the CSV column ``landmarks``). Graph methods use ``W``;
    landmark methods use only the 2-D points ``X``, which carry the Gaussian noise but *not*
    the random edges, so they do not face the graph noise the benchmark is about. A method
    that raises counts the trial as failed; its first error is printed once.
    Peer: ``rw``, the graph random walker (Grady 2006, "Random walks for image
    segmentation", PAMI): with ``L = D − W`` split into unlabelled ``U`` and labelled ``M``
    nodes, solve the combinatorial Dirichlet problem ``L_U X = −B M_s`` (``B = L[U, M]``,
    ``M_s`` the indicator columns of the k labels; one Jacobi-preconditioned conjugate-gradient
    solve per label to a relative residual of 1e-10 — a sparse LU gives the same labels but is
    ~20× slower here, the random edges make its factors nearly dense) and give every node the
    label of its largest potential. scikit-image's
    ``random_walker`` (the repository's usual peer) only takes images; this is its algorithm
    on the same graph.
Metrics
    Rand index (Rand 1971) and adjusted Rand index (Hubert & Arabie 1985) of the returned
    labels against the ground truth over all n nodes (labelled ones included), from the
    contingency table; wall time of the call (``time.perf_counter``, including the method's
    set-up on the graph: constraints, preconditioner, landmarks). Each method is called once
    untimed before the trials to load its code paths. BLAS runs on ``--blas-threads`` (1)
    threads for every method, as FAST-GE and CCSKL already do internally: on the shared
    2-core machine a second OpenBLAS thread that finds its core busy makes the landmark
    methods' dense eigensolves ~8× slower (measured: landmark 31 s vs 3.9 s, one call at
    n = 1500 with two other processes running), which would time the machine's load. Mean ± sample std over the successful
    trials, and the number of failed trials.
Output
    Three tables on stdout (RI, ARI, time with the ratio to ``rw``; rows = methods, columns =
    number of labelled nodes), ``<out>/synthetic.csv`` (one row per method, trial and label
    count) and ``<out>/synthetic.png`` (RI with std error bars, and time on a log scale,
    against the number of labelled nodes, as the paper's Figure 4).

Run ``python benchmarks/synthetic.py``; ``--quick`` (n = 300, 2 label counts, 2 trials) for a
smoke run.
"""

from __future__ import annotations

import argparse
import csv
import os
from contextlib import nullcontext
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.spatial import cKDTree
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import segapp  # noqa: E402
from segapp.methods import option_names  # noqa: E402

K = 4                                   #: number of moons (clusters)
MOON_SPACING, MOON_OFFSET = 1.25, 0.4   #: centre of moon j: (1.25 j, 0.4 (j mod 2))
LABEL_COUNTS = (25, 50, 75, 100, 125, 150)
RW = "rw"
RW_TITLE = "rw (graph random walker, Grady 2006)"


# -- data ----------------------------------------------------------------------------------
def four_moons(n: int, noise: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Four interleaved half-moons (module notes): points ``(n, 2)`` and classes ``0..3``."""
    y = np.repeat(np.arange(K), [n // K + (j < n % K) for j in range(K)])
    t = rng.uniform(0.0, np.pi, n)
    up = np.where(y % 2 == 0, 1.0, -1.0)
    X = np.c_[MOON_SPACING * y + np.cos(t), MOON_OFFSET * (y % 2) + up * np.sin(t)]
    return X + rng.normal(0.0, noise, X.shape), y


def knn_adjacency(X: np.ndarray, k: int) -> sp.csr_matrix:
    """Symmetric kNN graph (union: i ~ j if j is among i's k nearest or i among j's), distances."""
    dist, idx = cKDTree(X).query(X, k + 1)
    n = len(X)
    rows = np.repeat(np.arange(n), k)
    A = sp.csr_matrix((dist[:, 1:].ravel(), (rows, idx[:, 1:].ravel())), shape=(n, n))
    return A.maximum(A.T).tocsr()


def erdos_renyi(n: int, p: float, rng: np.random.Generator) -> sp.csr_matrix:
    """Symmetric 0/1 adjacency, every unordered pair ``i < j`` an edge with probability p."""
    i, j = np.triu_indices(n, 1)
    keep = rng.random(i.size) < p
    i, j = i[keep], j[keep]
    A = sp.csr_matrix((np.ones(i.size), (i, j)), shape=(n, n))
    return (A + A.T).tocsr()


def noisy_knn(X: np.ndarray, k_g: int, l_g: float, rng: np.random.Generator,
              weights: str = "binary") -> sp.csr_matrix:
    """``NoisyKnn(n, k_g, l_g)`` on the points X: kNN graph ∪ Erdős–Rényi(l_g / n) graph."""
    n = len(X)
    knn = knn_adjacency(X, k_g)
    noise = erdos_renyi(n, l_g / n, rng)
    if weights == "binary":
        W = ((knn + noise) > 0).astype(np.float64)
    elif weights == "gaussian":
        sigma = float(np.median(cKDTree(X).query(X, [k_g + 1])[0]))
        kw = knn.copy()
        kw.data = np.exp(-kw.data ** 2 / (2 * sigma ** 2))
        extra = noise - noise.multiply(knn > 0)            # random edges not already kNN edges
        W = kw + float(np.median(kw.data)) * extra
    else:
        raise ValueError(f"weights must be 'binary' or 'gaussian', got {weights!r}")
    W = sp.csr_matrix(W, dtype=np.float64)
    W.setdiag(0)
    W.eliminate_zeros()
    return W


@dataclass
class Instance:
    """One random Four-Moons problem: points, ground truth (0..K-1) and graph."""

    X: np.ndarray
    y: np.ndarray
    W: sp.csr_matrix

    def cross_fraction(self) -> float:
        """Share of the edges that join different moons."""
        i, j = sp.triu(self.W, 1).nonzero()
        return float(np.mean(self.y[i] != self.y[j]))


def make_instance(n: int, k_g: int, l_g: float, noise: float, weights: str,
                  seed: Sequence[int]) -> Instance:
    rng = np.random.default_rng(list(seed))
    X, y = four_moons(n, noise, rng)
    return Instance(X, y, noisy_knn(X, k_g, l_g, rng, weights))


def sample_labels(y: np.ndarray, m: int, rng: np.random.Generator,
                  max_draws: int = 1000) -> np.ndarray:
    """Label map (0 = unlabelled, ``y + 1`` on m random nodes) with every class present.

    Draws that miss a class are discarded and redrawn.
    """
    k = int(y.max()) + 1
    if m < k:
        raise ValueError(f"{m} labelled nodes cannot cover {k} classes")
    for _ in range(max_draws):
        idx = rng.choice(y.size, m, replace=False)
        if np.unique(y[idx]).size == k:
            labels = np.zeros(y.size, np.int64)
            labels[idx] = y[idx] + 1
            return labels
    raise RuntimeError(f"no draw of {m} nodes covered all {k} classes in {max_draws} tries")


# -- metrics -------------------------------------------------------------------------------
def _pairs(x: np.ndarray) -> float:
    return float(np.sum(x * (x - 1) / 2))


def pair_counts(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """Pair counts from the contingency table ``n_ij`` of two labelings (row sums a, column b).

    Returns ``(Σ C(n_ij, 2), Σ C(a_i, 2), Σ C(b_j, 2), C(n, 2))``.
    """
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"labelings differ in size: {a.size} vs {b.size}")
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1), np.int64)
    np.add.at(table, (ia, ib), 1)
    n = a.size
    return _pairs(table), _pairs(table.sum(1)), _pairs(table.sum(0)), n * (n - 1) / 2


def rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Share of node pairs on which two labelings agree (same cluster in both, or in neither)."""
    both, sa, sb, total = pair_counts(a, b)
    return 1.0 if total == 0 else (total + 2 * both - sa - sb) / total


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Rand index corrected for chance (Hubert & Arabie 1985): 1 = identical, 0 = chance level."""
    both, sa, sb, total = pair_counts(a, b)
    expected = sa * sb / total if total else 0.0
    maximum = (sa + sb) / 2
    if maximum == expected:      # both one cluster, or both all singletons: identical partitions
        return 1.0
    return (both - expected) / (maximum - expected)


# -- the peer: graph random walker ---------------------------------------------------------
def graph_random_walker(W: sp.spmatrix, labels: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Grady's random walker on a weighted graph: label ids (as in ``labels``) for every node.

    Solves ``L_U X = −B M`` (the combinatorial Dirichlet problem; one Jacobi-preconditioned
    conjugate-gradient solve per label, relative residual ``rtol``) and gives every unlabelled
    node the label of its largest potential. Nodes of a connected component without labelled
    nodes get potential 0 for every label (CG's minimum-norm answer to the singular but
    consistent system) and hence the smallest label id. RuntimeError if CG does not converge.
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    labels = np.asarray(labels)
    L = (sp.diags(np.asarray(W.sum(axis=1)).ravel()) - W).tocsr()
    marked = labels > 0
    U, M = np.flatnonzero(~marked), np.flatnonzero(marked)
    ids = np.unique(labels[M])
    out = labels.copy()
    if U.size == 0:
        return out
    seeds = (labels[M][:, None] == ids[None, :]).astype(np.float64)   # |M| × k indicators
    rhs = -(L[U][:, M] @ seeds)
    A = L[U][:, U].tocsr()
    diag = A.diagonal()
    jacobi = spla.LinearOperator(A.shape, matvec=lambda v: v / diag, dtype=np.float64)
    potentials = np.empty((U.size, ids.size))
    for s in range(ids.size):
        x, info = spla.cg(A, rhs[:, s], rtol=rtol, M=jacobi, maxiter=10 * U.size)
        if info != 0:
            raise RuntimeError(f"random walker: CG did not converge for label {ids[s]}")
        potentials[:, s] = x
    out[U] = ids[np.argmax(potentials, axis=1)]
    return out


# -- running -------------------------------------------------------------------------------
def method_options(name: str, seed: int, extra: dict[str, Any]) -> dict[str, Any]:
    """``seed`` and the ``extra`` options, each only if method ``name`` accepts it."""
    accepted = option_names(name)
    opts = {k: v for k, v in extra.items() if k in accepted}
    if "seed" in accepted:
        opts["seed"] = seed
    return opts


def run_method(name: str, inst: Instance, labels: np.ndarray, seed: int,
               extra: dict[str, Any]) -> tuple[np.ndarray, float, int | None]:
    """Labels, wall seconds and landmark count (None if not a landmark method) of one call."""
    if name == RW:
        t = time.perf_counter()
        pred = graph_random_walker(inst.W, labels)
        return pred, time.perf_counter() - t, None
    opts = method_options(name, seed, extra)
    t = time.perf_counter()
    res = segapp.cluster(labels, graph=inst.W, features=inst.X, method=name, **opts)
    seconds = time.perf_counter() - t
    return np.asarray(res.labels), seconds, getattr(res.diagnostics, "n_landmarks", None)


def one_trial(name: str, inst: Instance, labels: np.ndarray, trial: int,
              extra: dict[str, Any]) -> dict[str, Any]:
    """One CSV row; a raising method gives a failed row carrying its error."""
    row: dict[str, Any] = dict(method=name, trial=trial, n=inst.y.size,
                               n_labels=int(np.count_nonzero(labels)), ri=np.nan, ari=np.nan,
                               seconds=np.nan, failed=0, landmarks="", error="")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pred, seconds, landmarks = run_method(name, inst, labels, trial, extra)
    except Exception as exc:  # noqa: BLE001 — a failing method must not stop the benchmark
        row.update(failed=1, error=f"{type(exc).__name__}: {exc}")
        return row
    truth = inst.y + 1
    row.update(ri=rand_index(truth, pred), ari=adjusted_rand_index(truth, pred), seconds=seconds,
               landmarks="" if landmarks is None else landmarks)
    return row


def run(methods: list[str], n: int, k_g: int, l_g: float, noise: float, weights: str,
        counts: Sequence[int], trials: int, seed: int, extra: dict[str, Any],
        log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """All trials; prints each method's first error once and a progress line per trial."""
    rows: list[dict[str, Any]] = []
    reported: set[str] = set()
    for trial in range(trials):
        t0 = time.perf_counter()
        inst = make_instance(n, k_g, l_g, noise, weights, (seed, trial))
        if trial == 0:
            warm = sample_labels(inst.y, max(counts), np.random.default_rng([seed, 0, 0]))
            for name in methods:          # untimed: load code paths, caches
                one_trial(name, inst, warm, -1, extra)
        for m in counts:
            labels = sample_labels(inst.y, m, np.random.default_rng([seed, trial, m]))
            for name in methods:
                row = one_trial(name, inst, labels, trial, extra)
                rows.append(row)
                if row["failed"] and name not in reported:
                    reported.add(name)
                    log(f"  {name} failed (trial {trial}, {m} labels): {row['error']}")
        print(f"  trial {trial + 1}/{trials}: {time.perf_counter() - t0:.1f} s, "
              f"{inst.W.nnz // 2} edges, {inst.cross_fraction():.1%} between moons",
              file=sys.stderr, flush=True)
    return rows


# -- reporting -----------------------------------------------------------------------------
Summary = dict[tuple[str, int], tuple[float, float, int, int]]


def summarise(rows: list[dict[str, Any]], key: str) -> Summary:
    """(method, #labels) → (mean, sample std, successful trials, failed trials) of ``key``."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["method"], r["n_labels"]), []).append(r)
    out = {}
    for g, rs in groups.items():
        v = np.array([r[key] for r in rs if not r["failed"]], float)
        std = float(np.std(v, ddof=1)) if v.size > 1 else 0.0
        out[g] = (float(np.mean(v)) if v.size else np.nan, std, v.size, len(rs) - v.size)
    return out


def title(name: str) -> str:
    return RW_TITLE if name == RW else name


def table(rows: list[dict[str, Any]], methods: list[str], counts: Sequence[int], key: str,
          fmt: str = "{:.3f}±{:.3f}", ratio: bool = False) -> str:
    """Rows = methods, columns = #labelled nodes, cells mean±std (and the ratio to rw)."""
    s = summarise(rows, key)
    wname = max(len(title(m)) for m in methods)
    cell = len(fmt.format(9.0, 9.0)) + (9 if ratio else 0)
    head = f"{'method':<{wname}} | " + " ".join(f"{m:>{cell}}" for m in counts) + " | failed"
    lines = [head, "-" * len(head)]
    for name in methods:
        cells = []
        for m in counts:
            mean, std, ok, _ = s.get((name, m), (np.nan, 0.0, 0, 0))
            txt = fmt.format(mean, std) if ok else "-"
            if ratio and ok and (RW, m) in s and s[(RW, m)][2]:
                txt += f" ({mean / s[(RW, m)][0]:5.1f}×)"
            cells.append(f"{txt:>{cell}}")
        failed = sum(s.get((name, m), (0, 0, 0, 0))[3] for m in counts)
        total = sum(sum(s.get((name, m), (0, 0, 0, 0))[2:]) for m in counts)
        lines.append(f"{title(name):<{wname}} | " + " ".join(cells) + f" | {failed}/{total}")
    return "\n".join(lines)


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = ["method", "trial", "n", "n_labels", "ri", "ari", "seconds", "failed", "landmarks",
              "error"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def plot(rows: list[dict[str, Any]], methods: list[str], counts: Sequence[int], path: Path,
         caption: str) -> None:
    """Two panels as the paper's Figure 4: Rand index (± std) and time (log) vs #labels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ri, sec = summarise(rows, "ri"), summarise(rows, "seconds")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in methods:
        x = [m for m in counts if ri.get((name, m), (0, 0, 0))[2]]
        if not x:
            continue
        a1.errorbar(x, [ri[(name, m)][0] for m in x], yerr=[ri[(name, m)][1] for m in x],
                    marker="o", capsize=3, label=title(name))
        a2.errorbar(x, [sec[(name, m)][0] for m in x], yerr=[sec[(name, m)][1] for m in x],
                    marker="o", capsize=3, label=title(name))
    a1.set(xlabel="number of labelled nodes", ylabel="Rand index", title="Accuracy")
    a2.set(xlabel="number of labelled nodes", ylabel="seconds per call", title="Time",
           yscale="log")
    a1.legend(fontsize=8)
    a1.grid(alpha=0.3)
    a2.grid(alpha=0.3, which="both")
    fig.suptitle(caption, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    registered = list(segapp.methods.REGISTRY)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", nargs="+", default=registered + [RW],
                   help=f"subset of {' '.join(registered + [RW])} (default: all)")
    p.add_argument("--labels", nargs="+", type=int, default=list(LABEL_COUNTS),
                   help="numbers of labelled nodes")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=0, help="seed of the data (methods get seed=trial)")
    p.add_argument("--n", type=int, default=1500)
    p.add_argument("--kg", type=int, default=30, help="k_g, nearest neighbours per node")
    p.add_argument("--lg", type=float, default=15.0, help="l_g, random edges: probability l_g/n")
    p.add_argument("--noise", type=float, default=0.1, help="std of the Gaussian point noise")
    p.add_argument("--weights", choices=("binary", "gaussian"), default="binary")
    p.add_argument("--n-landmarks", type=int, help="for the landmark methods (default: theirs)")
    p.add_argument("--blas-threads", type=int, default=1,
                   help="BLAS threads for every method (0 = leave the library default)")
    p.add_argument("--quick", action="store_true", help="n=300, 25 and 50 labels, 2 trials")
    p.add_argument("--out", default=str(REPO / "benchmarks" / "out"))
    a = p.parse_args(argv)
    unknown = sorted(set(a.methods) - set(registered) - {RW})
    if unknown:
        p.error(f"unknown method(s) {', '.join(unknown)}; available: "
                f"{' '.join(registered + [RW])}")
    if a.seed < 0:
        p.error("--seed must be non-negative")
    if a.quick:
        a.n, a.labels, a.trials = 300, [25, 50], 2
    extra = {} if a.n_landmarks is None else {"n_landmarks": a.n_landmarks}
    caption = (f"Four-Moons NoisyKnn(n={a.n}, k_g={a.kg}, l_g={a.lg:g}), noise {a.noise:g}, "
               f"{a.weights} weights, {a.trials} trials, data seed {a.seed}, "
               f"BLAS threads {a.blas_threads or 'default'}")
    print(f"segapp {segapp.__version__}, {os.cpu_count()} CPUs; {caption}; "
          f"methods: {' '.join(a.methods)}")
    t = time.perf_counter()
    blas = (threadpool_limits(limits=a.blas_threads, user_api="blas") if a.blas_threads > 0
            else nullcontext())
    with blas:
        rows = run(a.methods, a.n, a.kg, a.lg, a.noise, a.weights, a.labels, a.trials, a.seed,
                   extra)
    elapsed = time.perf_counter() - t
    print("\nRand index (mean±std over trials) by number of labelled nodes")
    print(table(rows, a.methods, a.labels, "ri"))
    print("\nAdjusted Rand index")
    print(table(rows, a.methods, a.labels, "ari", "{:+.3f}±{:.3f}"))
    print(f"\nSeconds per call (mean±std; in brackets: mean / mean of {RW})")
    print(table(rows, a.methods, a.labels, "seconds", "{:.4f}±{:.4f}", ratio=True))
    used = sorted({r["landmarks"] for r in rows if r["landmarks"] != ""})
    if used:
        print(f"landmarks used by the landmark methods: {', '.join(map(str, used))} "
              f"of {a.n} points")
    out = Path(a.out)
    write_csv(rows, out / "synthetic.csv")
    plot(rows, a.methods, a.labels, out / "synthetic.png", caption)
    print(f"total {elapsed:.0f} s; wrote {out / 'synthetic.csv'} and {out / 'synthetic.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
