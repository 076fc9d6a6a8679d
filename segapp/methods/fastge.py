"""FAST-GE: constrained spectral segmentation by a generalized eigenproblem of two Laplacians.

Cucuringu, Koutis, Chawla, Miller, Peng, "Simple and Scalable Constrained Clustering: A
Generalized Spectral Method", AISTATS 2016.

Pipeline (one :meth:`FastGE.update` per scribble edit):

1. data graph ``G_D`` of the image (``segapp.graphs.image``, §7.3), built once per image;
2. ML / CL cliques of the strokes with the merge weights ``d_i d_j / (d_min d_max)`` (§4.7),
   as exact diagonal + low-rank operators (``segapp.strokes.constraints``);
3. the ``m`` smallest pairs of ``L_G x = λ L_H x`` on ``dᵀx = 0`` (§4.3, ``segapp.solve.pencil``),
   from the graph's :class:`~segapp.solve.GraphSolver`, which picks and builds the solvers.
   By default (``eigensolver="harmonic"``, ``segapp.solve.harmonic``) as the Ritz pairs of the
   pencil on the strokes' harmonic potentials: the stiff must-link cliques make the wanted
   eigenvectors constant on each label's strokes, so they lie in the span of k − 1 Dirichlet
   solves with ``L_D`` — from a CHOLMOD factor of the Dirichlet matrix updated per edit
   (``linear_solver="auto"``, ``segapp.solve.direct``) where it is installed and ready, else
   by block CG preconditioned by smoothed-aggregation AMG (§4.5, ``segapp.solve.amg``), whose
   hierarchy is Galerkin-updated from edit to edit. Otherwise — and for soft strokes, a k-th
   vector or a graph part no stroke reaches — by LOBPCG (``segapp.solve.lobpcg``)
   preconditioned by AMG on ``L_D`` plus the strokes' sparsified must-link graph, started
   from the strokes' sources ``M u_a`` (or, with ``warm_start``, the previous eigenvectors
   plus a source for each label whose strokes changed);
4. embedding (Fig. 2), k-means anchored to the strokes, or the Cheeger sweep for k = 2
   (§4.6).

``m`` defaults to k − 1: cannot-link cliques between k labels create k − 1 very small
eigenvalues followed by a large gap, and asking LOBPCG for a k-th vector makes the slow k-th
Ritz value govern the stopping test (measured 133 vs 10 iterations in early experiments).
"""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from typing import Any, NamedTuple

import numpy as np

from ..solve import (DEFAULT_THETA, EIGENSOLVERS, EigenProblem, Eigenpairs, GraphSolver, Pencil,
                     SolveSettings, canonical_eigensolver)
from .answer_memory import AnswerMemory, strokes_key
from ..cancel import CancelToken
from ..errors import InvalidInputError
from ..strokes.constraints import Constraints, build_constraints
from ..strokes.reading import Strokes
from ..graphs import Graph
from ..options import SEED, Option, Settings
from ..partition.colour_model import ImageColours, strokes_differ_in_colour
from ..partition.islands import absorb_islands
from ..partition import (COLOUR_WEIGHT, MODEL_WEIGHT, STROKE_AGREEMENT, embed,
                         round_eigenvectors, rounding_confidence, stroke_agreement)
from ..appearance import ColourPalette, LabelModels
from ..appearance.models import BIN
from ..appearance.texture import BIN as TEXTURE_BIN, texture_features
from ..appearance.locality import RADIUS, REACH, locality_weights, reach_posteriors
from ..result import Segmentation
from .base import n_vectors
from .graph_method import GRAPH_OPTIONS, GraphMethod

#: Default ``appearance``, γ·n (issue 31; the scan behind it in docs/quality.md).
APPEARANCE = 3.0
#: The share of the carried suggestion in a label's first colour model (``carry``; the
#: painted pixels make the rest): benchmarks/carry.py, CHANGELOG.md.
CARRY_SHARE = 0.25
#: Default ``label_shares`` (Bayes' rule with the previous answer's shares; docs/quality.md).
LABEL_SHARES = 1.0
#: Default ``islands``: share of the image (screened on the dev sets, docs/quality.md).
ISLANDS = 0.05
#: Default ``island_keep``.
ISLAND_KEEP = 0.99
#: Default ``appearance_rounds``.
APPEARANCE_ROUNDS = 1

#: FAST-GE's options after the graph's. All are per-solve: the multigrid hierarchy follows
#: the strokes (updated or rebuilt per edit; a new ``amg_theta`` starts a new one). Bounds keep
#: a solve bounded in time and memory.
OPTIONS: tuple[Option, ...] = GRAPH_OPTIONS + (
    Option("constraint_weight", float, 1.0, "multiplies the must-link / cannot-link weights "
           "d_i d_j/(d_min d_max) of §4.7", "solve", low=1e-6, high=1e6),
    Option("n_vectors", int, None, "eigenvectors used for k labels (k − 1 or k)", "solve",
           low=1, high=100, none_ok=True, none_means="k − 1"),
    Option("k2_partition", str, "sweep", "two labels: Cheeger sweep cut or k-means", "solve",
           choices=("sweep", "kmeans")),
    # Issue 22 item 2: the ratio alone picks a poor first object/background cut (GrabCut-dev
    # first round 0.36 IoU where the sweep's order holds 0.64); 0 is FAST-GE's own sweep.
    Option("colour_weight", float, COLOUR_WEIGHT, "two-label sweep on a photo: weight of the "
           "colour term (two Gaussian colour models, nats per pixel) against log(cut ratio), "
           "used where the strokes' colours differ beyond noise; 0 = FAST-GE's ratio alone",
           "solve", low=0.0, high=100.0),
    # GrabCut-dev, 25 photos at full size, robot strokes, NoC@90 / drops of 450 strokes:
    # without the term 6.88 / 16; weight 0.5 6.08 / 18, 1 6.16 / 18, 2 6.16 / 20; the term
    # instead of colour_weight's (weight 1, 3) 7.28, 7.20. BSDS-dev at 1: 14.96 → 14.62;
    # clicks at 1: 8.76 → 7.40 (docs/quality.md "The default on the full dev sets").
    Option("model_weight", float, MODEL_WEIGHT, "two-label sweep: weight of the data term of "
           "the labels' own colour models (GrabCut's: −log of each pixel's posterior, nats "
           "per pixel) where the colour models are used; 0 = without it",
           "solve", low=0.0, high=100.0),
    # Issue 31: FAST-GE's ratio makes a first two-label cut the least cut around a stroke
    # (GrabCut-dev memorial: 0.9% of the photo, IoU 0.05). Full dev sets, 20 strokes, seed 0,
    # False → True: GrabCut-dev IoU 1st 0.571 → 0.616, NoC@90 5.64 → 5.28, drops 13 → 15 /
    # 450; BSDS-dev 0.626 → 0.639, 12.88 → 12.54, drops 12 → 12 / 385; clicks NoC@90 6.80 →
    # 6.24 (docs/quality.md "The first two-label cut").
    Option("balance", bool, True, "two-label answers with no previous answer to keep close "
           "to (the first; one whose previous answer the stability gate sets aside), where "
           "the strokes' colours differ: the sweep weighs each cut by its balance "
           "(normalized cut) instead of FAST-GE's ratio, whose least cut is then often a "
           "small region round a stroke", "solve"),
    # On by default (issue 10 item 4): fewer results made worse by a corrective stroke and
    # fewer strokes to 85/90% IoU on both dev sets and in the click protocol, with the gate
    # partition.PREVIOUS_GATE (docs/quality.md); a session's answer then depends on its edit
    # history, and undo gives back what was shown (answer_memory).
    Option("stable_refinement", bool, True, "after an edit that only adds strokes, keep the "
           "cut closest to the previous answer among near-equal ones while that answer is "
           "still a near-best cut (fewer results made worse by a stroke; the answer then "
           "depends on the edit history; undo gives back the answer shown)", "solve"),
    # Issue 31 (drops): the prefixes of the new vector are not every cut; the previous answer
    # and its local move (segapp.partition.local) as candidates, each kept only where it
    # scores better. Full dev sets, 20 strokes, drops / NoC@90: GrabCut 18/450 / 6.16 →
    # 14/450 / 6.16 (keep_better) → 13/450 / 6.48 (both); BSDS 14/385 / 14.62 → 12/385 /
    # 14.62 → 12/385 / 14.00; clicks 11/135 / 7.40 → 13/147 / 7.88 → 12/145 / 7.80. Off:
    # clicks get worse, the GrabCut NoC@90 too with the local move (docs/quality.md).
    Option("keep_better", bool, False, "stable refinement: the previous answer (the new "
           "strokes painted in) is itself a candidate of the rounding, kept where it scores "
           "better than every new cut in the rounding's objective", "solve"),
    Option("local_move", bool, False, "stable refinement: the previous answer changed only "
           "on the regions that touch a stroke contradicting it is a candidate of the "
           "rounding, kept where it scores at least as well as every new cut", "solve"),
    # Issue 31 (scenes' small labels, drops): Bayes' rule with the previous answer's label
    # shares in the solve's colour posteriors. Full dev sets, 20 strokes, NoC@90 / drops:
    # GrabCut 6.16 / 18/450 → 6.32 / 11/450; BSDS 14.62 / 14/385 → 14.12 / 12/385; clicks
    # 7.40 / 11/135 → 7.08 / 8/127. Every 2nd photo at 0.5: GrabCut 6.15 / 9/234, BSDS
    # 14.00 / 6/194 (docs/quality.md "Each label's share of the answer").
    Option("label_shares", float, LABEL_SHARES, "after an edit that only adds strokes, the "
           "labels' prior probabilities in the solve's colour posteriors: each label's share "
           "of the previous answer raised to this power (a small label's colours then claim a "
           "far patch only where they are likelier by more than the area ratio); 0 = equal",
           "solve", low=0.0, high=4.0),
    Option("amg_theta", float, DEFAULT_THETA, "strength threshold of the AMG aggregation",
           "solve", low=0.0, high=1.0),
    # "segapp" is the old name of "lobpcg" (saved settings and scripts); scipy's LOBPCG, for
    # comparison only, moved to benchmarks/solvers.py.
    Option("eigensolver", str, "harmonic", "harmonic: the strokes' harmonic potentials (k − 1 "
           "CG solves) + Rayleigh–Ritz of the pencil; lobpcg: our block LOBPCG on the pencil "
           "(segapp: its old name)", "solve", choices=EIGENSOLVERS + ("segapp",)),
    # Issue 21: the harmonic potentials from a factor of the Dirichlet matrix updated per edit
    # (segapp.solve.direct): an added stroke 0.152 s where CG took 0.598 s at 250K px (README, Speed).
    Option("linear_solver", str, "auto", "harmonic: how the potentials are solved: auto = "
           "from a factor of the Dirichlet matrix updated per edit (CHOLMOD) where installed, "
           "iteratively (CG with an AMG preconditioner) otherwise or until a large image's "
           "factor is ready; direct = always from a factor; iterative = never factor", "solve",
           choices=("auto", "direct", "iterative")),
    Option("cg_tol", float, 1e-4, "harmonic: stop the potentials' CG at this relative "
           "residual", "solve", low=1e-12, high=0.5),
    Option("maxiter", int, 300, "iteration cap of the CG or LOBPCG", "solve", low=1,
           high=1000),
    Option("eig_tol", float, 1e-3, "LOBPCG: stop when the Ritz values change by less than "
           "this (relative), twice", "solve", low=1e-12, high=0.5),
    Option("res_tol", float, 1e-6, "LOBPCG: stop when every relative residual is below this",
           "solve", low=0.0, high=1.0),
    Option("on_nonconvergence", str, "raise", "at maxiter: fail, or warn and use the vectors "
           "reached", "solve", choices=("raise", "warn")),
    # LOBPCG: off unless asked: after one added stroke the stroke potentials M·u_a (its cold
    # start) gave 5-8 iterations at 44K-250K px where the previous vectors gave 6-16, and
    # labels 100% equal to a cold solve instead of 99.8-99.95% (coffee, k = 4, 5; 2026-11-23).
    # Harmonic: on: the updated hierarchy needs 12-14 CG steps where a new one needs 12-13,
    # and saves its set-up (250K / 4: 0.73-0.77 s vs 0.93-1.0 s per edit; 1.1M / 5: 4.0-4.3 s
    # vs 5.4-8.1 s; labels 99.98-99.99% of a cold solve; 2026-11-24).
    Option("warm_start", bool, None, "reuse the previous edit: harmonic: its multigrid "
           "hierarchy (Galerkin-updated to the new strokes) and potentials; LOBPCG: its "
           "eigenvectors plus sources of the changed labels", "solve", none_ok=True,
           none_means="on for the harmonic solve, off for LOBPCG"),
    # Issue 31: each label's colours as a Gaussian mixture, a prior of the harmonic solve
    # (segapp.appearance, segapp.solve.harmonic "Appearance").
    Option("appearance", float, APPEARANCE, "weight of the labels' colour models in the "
           "solve: every unpainted pixel is pulled towards the labels whose colours "
           "(a Gaussian mixture of each label's CIE Lab colours) it has, with weight γ d_i, "
           "γ = appearance / pixels; 0 = FAST-GE's own solve (harmonic eigensolver only)",
           "solve", low=0.0, high=1e4),
    Option("appearance_rounds", int, APPEARANCE_ROUNDS, "EM rounds of the colour models per "
           "edit: the first learns from the painted pixels, each next one also from the "
           "answer before it", "solve", low=1, high=5),
    Option("locality", float, 0.0, "where the colour models first learn: besides the "
           "painted pixels, the unpainted ones near each label's strokes, within about this "
           f"share of the image's larger side (GrabCut's region: {RADIUS}); 0 = the painted "
           "pixels only (the default: on the dev photos the region lowered the first answer)",
           "solve", low=0.0, high=4.0),
    # Issue 31 item 2: every 2nd dev photo, full size, 20 strokes, NoC@90 BSDS / GrabCut:
    # 0 → 13.67 / 6.08; 0.05 → 13.33 / –; 0.1 → 12.75 / 5.46; 0.2 → 13.08 / –; the weight
    # also in the sweep's data term (0.1, 0.15): GrabCut 6.23, 6.54; floored at 0.1 / 0.03:
    # BSDS 13.75, GrabCut 6.15 / 6.31. Full sets: 0 → 14.62 / 6.16, 0.1 → 13.75 / 5.92,
    # 0.2 → 14.17 / 6.16 (docs/quality.md "How far a label's colours reach"). Off by
    # default: issue 10's noisy three-region image (35/255) 99.6% → 66% correct at 0.1.
    Option("reach", float, REACH, "how far from its strokes a label's colour model pulls: "
           "its prior at a pixel is weighted by exp(−d / (reach × the image's larger "
           "side)), d the distance to the label's nearest stroke; 0 = as strongly "
           "everywhere (the default: where colours are ambiguous, e.g. under noise, the "
           "weights give pixels the nearest stroke's label)", "solve", low=0.0, high=10.0),
    # Issue 31: texture beside colour in the labels' models (segapp.appearance.texture).
    # Every 2nd dev photo, full size, 20 strokes, NoC@90 BSDS / GrabCut: 0 → 13.58 / 6.46;
    # 0.25 → 13.08 / 6.77; 0.5 → 12.50 / 6.15; 0.75 → 13.00 / 6.69; 1 → 12.67 / 6.62;
    # 2 → 12.92 / 7.31. Full sets at 0.5: BSDS 14.12 → 13.38, drops 12 → 11 / 385; GrabCut
    # 6.32 → 6.08; clicks 7.08 → 7.68 (docs/quality.md "Texture beside colour").
    Option("islands", float, ISLANDS, "a label's patches with none of its strokes, each at "
           "most this share of the image, go to the labels around them (a spatial "
           "coherence prior on the rounding); 0 = every patch kept", "solve",
           low=0.0, high=1.0),
    Option("island_keep", float, ISLAND_KEEP, "such a patch stays where the solve's colour "
           "prior gives it its own label with a mean probability of at least this (its "
           "colours say it is that label); above 1, or without colour models, none stays",
           "solve",
           low=0.0, high=2.0),
    Option("texture", float, 0.0, "texture in the labels' appearance models: each pixel's "
           "local standard deviation of L* in Gaussian windows of 1.5 and 3 px, times this, "
           "joins its CIE Lab colour in the Gaussian mixtures (computed once per image); "
           "0 = colour only", "solve", low=0.0, high=100.0),
    # Issue 32 item 6: what a folder's finished images taught (segapp.appearance.carry).
    Option("carry", str, "", "a folder's learnt appearance (segapp-appearance JSON, "
           "FOLDER/segapp/appearance.json): the colour models' first round also learns from "
           "the answer its models suggest for the labels painted here; '' = none", "solve",
           file=True),
    SEED,
)


class LabelPriors(NamedTuple):
    """The labels' colour models as one edit uses them, (n, k) each, rows summing to 1."""

    #: the prior of the solve: the colour posteriors weighted by the strokes' reach
    #: (:func:`~segapp.appearance.locality.reach_posteriors`; the colour ones without it)
    solve: np.ndarray
    #: the colour posteriors ``P_a(i)``: the two-label sweep's data term
    colour: np.ndarray


class FastGE(GraphMethod):
    """FAST-GE on one image graph, keeping what can be reused between scribble edits."""

    name = "fastge"
    description = ("FAST-GE (Cucuringu et al. 2016): generalized eigenproblem L_G x = λ L_H x "
                   "from the strokes' harmonic potentials (or LOBPCG); the default")
    constrained = True
    options = OPTIONS
    prepares = True
    colours_ahead = True   # the first edit decides on the colour models from them

    @classmethod
    def from_colours(cls, colours: ImageColours) -> ColourPalette:
        """The image's colours quantised once, beside the graph (:attr:`palette`)."""
        return ColourPalette.of(colours.lab)

    def __init__(self, graph: Graph, settings: Settings | None = None, **options: Any) -> None:
        super().__init__(graph, settings, **options)
        #: The solve stage of this graph (:class:`~segapp.solve.GraphSolver`): it chooses and
        #: builds the eigensolver and the linear solver, and keeps their factors and
        #: hierarchies from edit to edit.
        self.solver = GraphSolver.of(graph)
        self._models: LabelModels | None = None
        self._textured: tuple[float, ColourPalette] | None = None   # (texture, palette)
        self._carried: tuple[tuple, np.ndarray] | None = None  # (file and labels, posteriors)
        #: Earlier answers: stable refinement's tie-breaker and what undo gives back.
        self.answers = AnswerMemory()

    @classmethod
    def direct_ahead(cls, settings: Settings) -> bool:
        """The harmonic eigensolver takes the direct solver's factor unless told not to."""
        return (canonical_eigensolver(settings["eigensolver"]) == "harmonic"
                and settings["linear_solver"] != "iterative")

    def prepare_next(self, cancel: CancelToken) -> None:
        """Work for the next edit, after this one's answer (:meth:`GraphSolver.prepare`)."""
        self.solver.prepare(cancel)

    def prepares_alongside(self) -> bool:
        """Whether the next edit's solve may run while :meth:`prepare` still does."""
        return self.solver.prepares_alongside()

    def prepared(self) -> bool:
        """Whether the next edit is answered from a factor (a fraction of a cold solve)."""
        return (self.solver.prepared() and self.settings["linear_solver"] != "iterative"
                and self.settings["eigensolver"] == "harmonic")

    # -- one edit --------------------------------------------------------------------------
    def _solve(self, strokes: Strokes, cancel: CancelToken,
               timings: dict[str, float]) -> Segmentation:
        """Eigenpairs and partition for the given strokes on the graph built once.

        With ``appearance`` (and the harmonic eigensolver, hard strokes, an image) this is a
        few rounds of expectation–maximisation: the labels' colour models learn from the
        painted pixels (first round) and from the answer before (later rounds), and each
        round solves the pencil with them as a prior and rounds it (:meth:`_prior`).
        """
        o = self.settings
        g = self.graph
        t = time.perf_counter()
        cons = build_constraints(strokes, g.degrees, constraint_weight=o["constraint_weight"])
        timings["constraints"] = time.perf_counter() - t
        pencil = Pencil.from_constraints(g.laplacian, g.degrees, cons)
        m = n_vectors(o["n_vectors"], cons.k)
        soft = strokes.soft
        key, shown = self._recall(cons, soft)
        rounds = self._appearance_rounds(cons, soft)
        # The factor (snapshot) of these strokes is made beside the colour models, which
        # change only the right-hand sides (segapp.solve.harmonic, "Appearance").
        ahead = (self.solver.ahead(self._problem(pencil, cons, shown[0] if shown is not None
                                                 else m, soft, None), cancel)
                 if rounds else nullcontext())
        with ahead:
            learned = None    # the answer the colour models learn from besides the strokes
            if shown is not None:
                # Undo, redo or the same strokes again: the answer shown then, with its
                # vectors (solved with the colour models it was solved with).
                m, labels, learned, priors, absorbed = shown
                prior = self._prior(cons, learned, timings, priors) if rounds else None
                lam, X, diag = self._solve_pencil(pencil, cons, m, soft, cancel, timings,
                                                  prior)
                cancel.check()
                V = embed(X, pencil)[2]
                agreement = stroke_agreement(np.searchsorted(cons.label_ids, labels),
                                             cons.sets)
            else:
                # the answer this edit adds to (unpacked once: the priors and the rounding)
                previous = self.answers.tie_breaker(cons) if o["stable_refinement"] else None
                priors = self._label_priors(cons, previous) if rounds else None
                for r in range(max(rounds, 1)):
                    if r:
                        learned = labels
                    prior = self._prior(cons, learned, timings, priors) if rounds else None
                    m, (lam, X, diag), (labels, V, agreement) = self._solve_and_round(
                        pencil, cons, m, soft, cancel, timings, prior, previous)
                    labels, absorbed = self._absorb_islands(labels, cons, prior, timings)
        self.answers.remember(cons, labels, key, m, learned, priors if rounds else None,
                              absorbed)
        codes = strokes.codes(labels)   # before the strokes are clamped
        sets, shape = cons.sets, g.shape
        # Computed when first read (0.02–0.16 s at 0.5 MP): an edit's answer does not wait.
        conf = lambda: rounding_confidence(codes, V, sets).reshape(shape)  # noqa: E731
        ids = cons.label_ids
        return Segmentation(labels, ids, V, np.asarray(lam), diagnostics=diag,
                            stroke_agreement=dict(zip(ids, agreement.tolist())), confidence=conf,
                            absorbed=absorbed)

    def _absorb_islands(self, labels: np.ndarray, cons: Constraints,
                        prior: LabelPriors | None, timings: dict[str, float]
                        ) -> tuple[np.ndarray, np.ndarray | None]:
        """The rounding's answer with its small stroke-free islands given to the labels
        around them (``islands``, :mod:`~segapp.partition.islands`), and their mask. An
        island stays where the solve's own prior (the colour posteriors with the labels'
        shares, and ``reach``) says it is its label (mean ≥ ``island_keep``); without colour
        models (``appearance=0``, soft strokes, LOBPCG) none stays. The colour posteriors
        with equal priors kept islands that the next stroke flipped more often (islands=0.1,
        GrabCut-dev: 15 drops in 450 strokes against 14)."""
        share, shape = self.settings["islands"], self.graph.shape
        if not share or len(shape) != 2:
            return labels, None
        t = time.perf_counter()
        out = absorb_islands(labels, shape, cons.sets, cons.label_ids, int(share * self.graph.n),
                             None if prior is None else prior.solve,
                             self.settings["island_keep"])
        timings["partition"] = timings.get("partition", 0.0) + time.perf_counter() - t
        return out

    # -- appearance (issue 31) -------------------------------------------------------------
    def _appearance_rounds(self, cons: Constraints, soft: bool) -> int:
        """EM rounds of the colour models for this edit; 0 where they do not apply: the
        option off, soft strokes or LOBPCG (no Dirichlet problem to add them to), no image,
        or two labels whose painted colours do not differ beyond the image's noise
        (:func:`~segapp.partition.colour_model.strokes_differ_in_colour`): their models would
        split pixels by noise and pull the whole image towards whichever stroke happens to
        be nearer the mean colour (a click on one noisy grey kept 18% of a 5×5 seed's answer)."""
        o = self.settings
        if (not o["appearance"] or soft or self._image is None
                or canonical_eigensolver(o["eigensolver"]) != "harmonic"):
            return 0
        sets = cons.sets
        if not all(strokes_differ_in_colour(self.colours, [sets[a], sets[b]])
                   for a in range(len(sets)) for b in range(a)):
            return 0
        return o["appearance_rounds"]

    @property
    def palette(self) -> ColourPalette:
        """The image's colours quantised once, with them (:class:`~segapp.appearance.ColourPalette`,
        :meth:`from_colours`); with ``texture`` > 0 the colours and the texture features
        (:func:`~segapp.appearance.texture.texture_features`), quantised once per value."""
        w = self.settings["texture"]
        if not w:
            return self.colours_made
        if self._textured is None or self._textured[0] != w:
            lab = self.colours.lab
            feats = texture_features(lab, self.graph.shape, w)
            widths = BIN[:lab.shape[1]] + (TEXTURE_BIN,) * feats.shape[1]
            self._textured = (w, ColourPalette.of(np.hstack([lab, feats]), widths))
            self._models = None
        return self._textured[1]

    @property
    def label_models(self) -> LabelModels:
        """The labels' colour models on :attr:`palette`, kept from edit to edit and refitted
        where a label's pixels changed (:class:`~segapp.appearance.LabelModels`)."""
        pal = self.palette
        if self._models is None or self._models.palette is not pal:
            noise = self.colours.noise
            extra = pal.colours.shape[1] - noise.size    # texture columns: the floor alone
            if extra:
                noise = np.concatenate([noise, np.zeros(extra)])
            self._models = LabelModels(pal, noise=noise)
        return self._models

    def _prior(self, cons: Constraints, learned: np.ndarray | None,
               timings: dict[str, float], priors: np.ndarray | None = None) -> LabelPriors:
        """The labels' colour posteriors and the solve's prior made from them with ``reach``:
        each label's mixture learns from its painted pixels and, given an earlier answer
        ``learned`` (user ids), from the pixels it gave the label, the painted ones then
        weighing as much as the rest of the label together (what the person painted is never
        outvoted by what the answer guessed). ``priors`` (k,): the labels' log prior
        probabilities in the solve's posteriors (:meth:`_label_priors`), equal ones if None."""
        t = time.perf_counter()
        pal, k = self.palette, cons.k
        painted = np.full(pal.n, -1, np.int64)
        for a, S in enumerate(cons.sets):
            painted[S] = a
        W = pal.bin_weights(painted, k)
        if learned is not None:
            given = np.searchsorted(cons.label_ids, learned).astype(np.int64)
            given[painted >= 0] = -1
            A = pal.bin_weights(given, k)
        elif self.settings["carry"]:
            # the folder's suggestion among the labels painted here, as a soft first answer
            # that makes CARRY_SHARE of each label's model (the painted pixels the rest)
            A = pal.bin_sums(self._carried_posteriors(cons) * (painted < 0)[:, None])
            A *= (CARRY_SHARE / (1.0 - CARRY_SHARE)) * W.sum(0) / np.maximum(A.sum(0), 1e-12)
        elif self.settings["locality"]:
            near = locality_weights(self.graph.shape, cons.sets, self.settings["locality"])
            near[painted >= 0] = 0.0
            A = pal.bin_sums(near)
        else:
            A = None
        if A is not None:
            scale = A.sum(0) / np.maximum(W.sum(0), 1e-12)
            W = A + W * np.maximum(scale, 1.0)
        colour = self.label_models.posteriors(W)
        # the solve's posteriors with the labels' prior probabilities (label_shares); the
        # sweep's data term keeps equal ones (the answer's shares there too: GrabCut-dev,
        # every 2nd photo, drops 7 / 234 against 6, NoC@90 the same 6.46)
        solve_colour = colour if priors is None else self.label_models.posteriors(W, priors)
        reach = self.settings["reach"]
        solve = (reach_posteriors(solve_colour, self.graph.shape, cons.sets, reach)
                 if reach > 0 else solve_colour)
        timings["appearance"] = timings.get("appearance", 0.0) + time.perf_counter() - t
        return LabelPriors(solve, colour)

    def _label_priors(self, cons: Constraints, before: np.ndarray | None
                      ) -> np.ndarray | None:
        """(k,) the labels' log prior probabilities in the solve's colour posteriors after an
        edit that only adds strokes: ``label_shares`` × log of each label's share of the
        previous answer ``before`` (the tie-breaker of stable refinement, user ids), or None
        (equal priors: the option off, stable refinement off, or no previous answer for
        these labels).

        Bayes' rule: ``P(a | colour) ∝ π_a p_a(colour)``. Equal priors say every label is as
        likely as any other at every pixel, so a label painted on a small region, whose
        mixture is narrow, claims every far patch of its colour from a large region whose
        broader mixture explains it less sharply. The answer's shares are the mixing
        weights' maximum-likelihood estimate (the M step of the EM of a mixture of labels);
        with them a small label claims a patch only where its colour is likelier by more
        than the area ratio. The first answer (nothing to estimate from) is unchanged."""
        o = self.settings
        if not o["label_shares"] or not o["stable_refinement"] or before is None:
            return None
        area = np.bincount(np.searchsorted(cons.label_ids, before), minlength=cons.k)
        return o["label_shares"] * np.log(np.maximum(area, 1) / before.size)

    def _carried_posteriors(self, cons: Constraints) -> np.ndarray:
        """(n, k): the ``carry`` file's label posteriors of the painted labels, kept while
        the file and the labels stay (:mod:`segapp.appearance.carry`)."""
        from ..appearance.carry import LearntAppearance

        path = self.settings["carry"]
        try:
            st = os.stat(path)
        except OSError as exc:
            raise InvalidInputError(f"carry: cannot read {path}: "
                                    f"{(exc.strerror or str(exc)).lower()}") from None
        key = (path, st.st_mtime_ns, st.st_size, tuple(cons.label_ids))
        if self._carried is None or self._carried[0] != key:
            learnt = LearntAppearance.read(path)
            self._carried = (key, learnt.posteriors(self.colours_made, list(cons.label_ids)))
        return self._carried[1]

    def _recall(self, cons: Constraints, soft: bool
                ) -> tuple[bytes | None, tuple[int, np.ndarray, np.ndarray | None] | None]:
        """The key of these strokes in :attr:`answers` and the ``(m, labels, learned)`` shown
        for them before, if any (undo, redo; :mod:`~segapp.methods.answer_memory`). Only with
        ``stable_refinement`` and hard strokes: otherwise the answer is history-free."""
        if not self.settings["stable_refinement"] or soft:
            return None, None
        key = strokes_key(cons, self.settings)
        return key, self.answers.recall(key)

    def _solve_and_round(self, pencil: Pencil, cons: Constraints, m: int, soft: bool,
                         cancel: CancelToken, timings: dict[str, float],
                         prior: LabelPriors | None = None, previous: np.ndarray | None = None
                         ) -> tuple[int, Eigenpairs, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Eigenpairs and their rounding, with one more vector while the strokes are not given
        back (:func:`needs_one_more_vector`); ``previous``: stable refinement's tie-breaker
        (the answer this edit adds to, user ids) or None. Returns m, the pairs, and labels,
        embedding, stroke agreement."""
        o = self.settings
        while True:
            pairs = self._solve_pencil(pencil, cons, m, soft, cancel, timings, prior)
            cancel.check()
            t = time.perf_counter()
            rounded = round_eigenvectors(pairs.vectors, pencil, cons,
                                         k2_partition=o["k2_partition"], seed=o["seed"],
                                         cancel=cancel, previous=previous,
                                         colours=self.colours if o["colour_weight"] else None,
                                         colour_weight=o["colour_weight"],
                                         posteriors=None if prior is None else prior.colour,
                                         model_weight=o["model_weight"],
                                         keep_better=o["keep_better"],
                                         local=o["local_move"], balance=o["balance"])
            timings["partition"] = timings.get("partition", 0.0) + time.perf_counter() - t
            if not needs_one_more_vector(rounded[2], m, cons.k):
                return m, pairs, rounded
            m += 1

    def _solve_pencil(self, pencil: Pencil, cons: Constraints, m: int, soft: bool,
                      cancel: CancelToken, timings: dict[str, float],
                      prior: LabelPriors | None = None) -> Eigenpairs:
        """The m smallest pairs of the pencil, by the solver the door picks
        (:meth:`~segapp.solve.GraphSolver.eigenpairs`): the harmonic potentials (with the
        colour models' ``prior.solve``, if any, weighing γ = appearance / n), or LOBPCG
        (warm-started if asked; it takes no prior)."""
        return self.solver.eigenpairs(self._problem(pencil, cons, m, soft, prior), cancel,
                                      timings)

    def _problem(self, pencil: Pencil, cons: Constraints, m: int, soft: bool,
                 prior: LabelPriors | None) -> EigenProblem:
        """The eigenproblem of this edit as the solve stage takes it."""
        o = self.settings
        settings = SolveSettings(
            eigensolver=o["eigensolver"], theta=o["amg_theta"], maxiter=o["maxiter"],
            eig_tol=o["eig_tol"], res_tol=o["res_tol"], cg_tol=o["cg_tol"],
            linear_solver=o["linear_solver"], warm_start=o["warm_start"],
            on_nonconvergence=o["on_nonconvergence"],
            advice="try a larger maxiter or a smaller constraint_weight")
        return EigenProblem(pencil, m, tuple(cons.sets), tuple(cons.label_ids), settings,
                            constraints=cons, soft=soft,
                            prior=None if prior is None else prior.solve,
                            prior_weight=o["appearance"] / self.graph.n)


def needs_one_more_vector(agreement: np.ndarray, m: int, k: int) -> bool:
    """Whether FAST-GE retries with m + 1 vectors: a label's strokes are not given back.

    Every label's strokes must come back as that label (issue 10). k − 1 vectors separate k
    stroke sets in exact arithmetic (each maps to a vertex of a simplex), but row
    normalisation can fold two labels onto one direction: one more vector (the k-th pair)
    then tells them apart. At most k.
    """
    return bool(agreement.min() < STROKE_AGREEMENT) and m < k
