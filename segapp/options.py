"""Method options, declared once: name, type, default, range, help and stage.

Every method class lists its options as :class:`Option` declarations (``cls.options``;
:func:`segapp.methods.options_of` by name). Everything else is generated from them: the
validation of every value that reaches a method (:meth:`Option.check`), the command line's
flags and ``--help`` (:mod:`segapp.cli`), ``segapp methods``, the desktop app's settings panel
and the table in ``docs/options.md`` (:func:`markdown`; ``tests/test_options.py`` checks that
the file matches).

Stages
------
``"setup"`` options shape what a method builds once per image — the pixel graph, landmarks, a
multigrid hierarchy or spectrum kept across edits — so changing one needs a new
:class:`segapp.Session`. ``"solve"`` options only affect the solve of one edit and are passed to
:meth:`segapp.Session.update`, which re-solves without rebuilding anything.

Declarations and values
-----------------------
A method *class* declares its options (``cls.options``: :class:`Option` s); a method or session
*instance* holds their values in effect as :class:`Settings` (``method.settings``,
``session.settings``): read-only, every value checked once when it is made; an update's solve
options give a new :class:`Settings` in which only they are checked (:meth:`Settings.with_solve`).
The working resolution ``max_pixels`` is a :class:`segapp.Session` option (:data:`WORKING_PIXELS`),
not a method's.

Validation
----------
Types are strict, so a wrong value fails at once with a one-line
:class:`~segapp.errors.InvalidInputError` naming the option, never deep in the solver: a bool is
not an integer, a string is not a number, an integral float (``2.0``) is not an integer; floats
must be finite. Ranges are inclusive and bound every option that drives time or memory (graph
radius, iteration caps, restarts, landmark counts), so that no accepted value can hang the
program; the bounds are part of the help text.

Rules between options
---------------------
What one option's range cannot say — a condition between two options, or between an option
and the data (k, the number of labels; n, the number of pixels or points) — is a :class:`Rule`,
declared once here in :data:`RULES`. A rule applies to every method that declares all the
options it names (:func:`rules_for`). It is checked where what it needs is known: between
options when the settings are made (:meth:`Settings.resolve`'s callers, before any work), on n
when the method is built, on k when the strokes are read. ``--help``, ``segapp methods`` and
``docs/options.md`` print the same text the refusal gives.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

import numpy as np

from .errors import InvalidInputError
from .inputs.resolution import DEFAULT_MAX_PIXELS

Stage = Literal["setup", "solve"]
STAGES: tuple[str, ...] = ("setup", "solve")

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(x: float) -> str:
    """A bound or default as written in help texts (``1e-06``, ``0.4``, ``5000``)."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if abs(x) < 1e6 and float(x).is_integer():
        return str(int(x))
    return f"{x:g}"


@dataclass(frozen=True)
class Option:
    """One option of a method.

    Attributes
    ----------
    name : str
        Python name (``constraint_weight``); the flag is ``--constraint-weight``.
    type : type
        ``int``, ``float``, ``bool`` or ``str``.
    default : Any
        Value used when the option is not given (``None`` only if ``none_ok``).
    help : str
        One line for ``--help``, the settings panel, ``segapp methods`` and the docs. Ranges and
        the meaning of None are appended by :meth:`describe`, not written here.
    stage : {"setup", "solve"}
        ``setup``: needs a new graph / hierarchy (a new Session); ``solve``: per edit.
    low, high : float, optional
        Inclusive bounds (numbers only).
    choices : tuple, optional
        The allowed values.
    none_ok : bool
        Whether None is allowed (e.g. ``sigma=None``: data-driven).
    none_means : str
        What None stands for, for the help text (``"data-driven"``, ``"k − 1"``).
    refusal : str
        The message refusing a bad value (``{value!r}`` is filled in) where one predates the
        declaration and is kept word for word; otherwise it is generated (:meth:`expects`).
    file : bool
        A string option naming a file that must exist when the value is checked ('' = none).
    """

    name: str
    type: type
    default: Any
    help: str
    stage: Stage
    low: float | None = None
    high: float | None = None
    choices: tuple | None = None
    none_ok: bool = False
    none_means: str = ""
    refusal: str = ""
    file: bool = False

    def __post_init__(self) -> None:
        if self.type not in (int, float, bool, str):
            raise TypeError(f"option {self.name}: type must be int, float, bool or str")
        if self.stage not in STAGES:
            raise TypeError(f"option {self.name}: stage must be 'setup' or 'solve'")
        try:
            ok = type(self.check(self.default)) is type(self.default)
        except InvalidInputError:
            ok = False
        if not ok:
            raise TypeError(f"option {self.name}: default {self.default!r} fails its own check")

    # -- names -----------------------------------------------------------------------------
    @property
    def basic(self) -> bool:
        """What a person tunes (:data:`BASIC`): the app shows it under "Basic", every other
        option under "Advanced"."""
        return self.name in BASIC

    @property
    def flag(self) -> str:
        """Command-line flag: ``--`` + the name with ``-`` for ``_``."""
        return "--" + self.name.replace("_", "-")

    # -- validation ------------------------------------------------------------------------
    def expects(self) -> str:
        """What a valid value is, as a phrase: ``an integer in [1, 5000]``."""
        if self.type is bool:
            what = "True or False"
        elif self.choices is not None:
            what = "one of " + ", ".join(map(repr, self.choices))
        elif self.type is str:
            what = "the path of an existing file, or ''" if self.file else "a string"
        else:
            what = "an integer" if self.type is int else "a finite number"
            if self.low is not None and self.high is not None:
                what += f" in [{_number(self.low)}, {_number(self.high)}]"
            elif self.low is not None:
                what += f" ≥ {_number(self.low)}"
            elif self.high is not None:
                what += f" ≤ {_number(self.high)}"
        return what + (" or None" if self.none_ok else "")

    def _fail(self, value: Any) -> InvalidInputError:
        if self.refusal:
            return InvalidInputError(self.refusal.format(value=value))
        return InvalidInputError(f"{self.name} must be {self.expects()}; got {_short(value)}")

    def check(self, value: Any) -> Any:
        """The validated value (ints as ``int``, numbers as ``float``) or InvalidInputError.

        Raises
        ------
        segapp.errors.InvalidInputError
            One line naming the option, what it accepts and what it got.
        """
        if value is None:
            if self.none_ok:
                return None
            raise self._fail(value)
        if self.type is bool:
            if isinstance(value, (bool, np.bool_)):
                return bool(value)
            raise self._fail(value)
        if isinstance(value, (bool, np.bool_)):
            raise self._fail(value)
        v: Any
        if self.type is int:
            if not isinstance(value, (int, np.integer)):
                raise self._fail(value)
            v = int(value)
        elif self.type is float:
            if not isinstance(value, (int, float, np.integer, np.floating)):
                raise self._fail(value)
            v = float(value)
            if not math.isfinite(v):
                raise self._fail(value)
        else:
            if not isinstance(value, str) or (self.file and value and not os.path.isfile(value)):
                raise self._fail(value)
            v = value
        if self.choices is not None and v not in self.choices:
            raise self._fail(value)
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            raise self._fail(value)
        return v

    def parse(self, text: str) -> Any:
        """The value written as text (command line, settings files), then :meth:`check`-ed.

        ``none`` (any case) is None where allowed; booleans are true/false, yes/no, on/off, 1/0.
        """
        t = str(text).strip()
        if self.none_ok and t.lower() in ("none", "auto"):
            return None
        value: Any
        try:
            if self.type is bool:
                if t.lower() not in _TRUE + _FALSE:
                    raise ValueError
                value = t.lower() in _TRUE
            elif self.type is int:
                value = int(t)
            elif self.type is float:
                value = float(t)
            else:
                value = t
        except ValueError:
            raise self._fail(t) from None
        return self.check(value)

    # -- documentation ---------------------------------------------------------------------
    def default_text(self) -> str:
        """The default as written on the command line (``none (k − 1)``, ``true``, ``0.4``)."""
        if self.default is None:
            return "none" + (f" ({self.none_means})" if self.none_means else "")
        if isinstance(self.default, bool):
            return str(self.default).lower()
        if isinstance(self.default, float):
            return _number(self.default)
        return str(self.default)

    def range_text(self) -> str:
        """Allowed values, compactly: ``1–5000``, ``sweep | kmeans``, ``true | false``."""
        if self.type is bool:
            text = "true | false"
        elif self.choices is not None:
            text = " | ".join(map(str, self.choices))
        elif self.low is not None or self.high is not None:
            lo = "−∞" if self.low is None else _number(self.low)
            hi = "∞" if self.high is None else _number(self.high)
            text = f"{lo}–{hi}"
        else:
            text = "any"
        if self.none_ok:
            text += " | none"
        return text

    def describe(self) -> str:
        """The help line with the range and default: what ``--help`` prints."""
        extra = f"; none: {self.none_means}" if self.none_means and self.default is not None \
            else ""
        return f"{self.help} [{self.range_text()}; default {self.default_text()}{extra}]"


# -- option sets ----------------------------------------------------------------------------
def by_name(options: Iterable[Option]) -> dict[str, Option]:
    return {o.name: o for o in options}


def defaults(options: Iterable[Option]) -> dict[str, Any]:
    """``{name: default}``."""
    return {o.name: o.default for o in options}


def override(options: Sequence[Option], **changes: Mapping[str, Any]) -> tuple[Option, ...]:
    """A copy of ``options`` with some fields of named options replaced.

    ``override(OPTS, seed={"stage": "solve"}, landmark_selection={"default": "random"})``
    — how a method reuses a shared set with its own defaults or stages.
    """
    unknown = set(changes) - {o.name for o in options}
    if unknown:
        raise KeyError(f"no such option(s): {', '.join(sorted(unknown))}")
    return tuple(replace(o, **changes[o.name]) if o.name in changes else o for o in options)


def without(options: Sequence[Option], *names: str) -> tuple[Option, ...]:
    """``options`` minus the named ones."""
    unknown = set(names) - {o.name for o in options}
    if unknown:
        raise KeyError(f"no such option(s): {', '.join(sorted(unknown))}")
    return tuple(o for o in options if o.name not in names)


def pick(options: Sequence[Option], *names: str) -> tuple[Option, ...]:
    """The named options of ``options``, in the order given (to share a declaration)."""
    known = by_name(options)
    missing = [n for n in names if n not in known]
    if missing:
        raise KeyError(f"no such option(s): {', '.join(missing)}")
    return tuple(known[n] for n in names)


#: Largest seed: numpy's generators take any non-negative integer; 32 bits keep it portable.
MAX_SEED = 2**32 - 1

#: Options every method has (each family declares its stage and help through :func:`override`).
SEED = Option("seed", int, 0, "random seed (k-means starts)", "solve", low=0, high=MAX_SEED)
KMEANS_RESTARTS = Option("kmeans_restarts", int, 10,
                         "k-means restarts from random k-means++ starts (plus one from the strokes)",
                         "solve", low=0, high=100)

#: The options a person tunes (:attr:`Option.basic`): how coarse the graph is, how strongly
#: the strokes pull, how much is smoothed, how many landmarks or partitions. Solver internals
#: (tolerances, iteration caps, AMG strength, seeds, k-means sampling) are "advanced".
BASIC: frozenset[str] = frozenset({
    "sigma_scale", "denoise", "constraint_weight", "max_pixels", "n_landmarks",
    "n_partitions", "beta0", "n_eigenvectors", "n_neighbours"})

#: The working resolution (a :class:`segapp.Session` option, not a method's): a Session segments
#: a larger image on a reduced copy of at most this many pixels (:mod:`segapp.inputs.resolution`).
#: Not to be confused with ``pixel_limit`` (:data:`segapp.io.DEFAULT_PIXEL_LIMIT`), the size above
#: which an image *file* is refused before it is decoded. The app offers these few values (and
#: only for the methods that use a reduced copy); a Session takes any :data:`WORKING_PIXELS`.
#: The largest, the direct solver's limit (:data:`segapp.solve.direct.MAX_FACTORED_PIXELS`),
#: solves photos of up to 4 MP at full resolution: the answer a one-shot full solve gives,
#: at seconds per edit and about 2.5 KB per pixel (docs/edges.md).
MAX_PIXELS = Option("max_pixels", int, DEFAULT_MAX_PIXELS,
                    "working resolution: larger images are segmented on a reduced copy of at "
                    "most this many pixels (more: finer boundaries, slower)", "setup",
                    choices=(125_000, 250_000, 500_000, 1_000_000, 2_000_000, 4_000_000))

#: ``max_pixels`` as :class:`segapp.Session` and :func:`segapp.segment` take it: any integer ≥ 4
#: (a 2 × 2 working grid), or None for full resolution.
WORKING_PIXELS = replace(MAX_PIXELS, choices=None, low=4, none_ok=True,
                         none_means="always full resolution",
                         refusal="max_pixels must be an integer ≥ 4 or None, got {value!r}")


#: Largest ``n_partitions × n_landmarks`` of the cluster ensemble: its base partitions run one
#: after another, each a landmark FAST-GE whose cost grows as p³. At 0.25 MP: 16 × 1000 took
#: 20 CPU-s, 8 × 2000 50 CPU-s; 64 × 1000 (the old high) ran over 150 s on the loaded 2-core
#: machine (issue 23).
MAX_LANDMARK_RUNS = 16_000


@dataclass(frozen=True)
class Rule:
    """A condition between options, or between options and the data (module notes).

    Attributes
    ----------
    names : tuple of str
        The options it involves; it applies to every method that declares all of them.
    text : str
        The rule as a person reads it, starting with the first option's name; the refusal,
        ``--help``, ``segapp methods`` and ``docs/options.md`` all print it.
    holds : callable
        ``holds(values, k, n)``: whether the values (a mapping by option name) satisfy it, k
        the number of labels and n the number of pixels or points (None while unknown).
    needs : str
        What besides the options it needs: ``""``, ``"k"`` or ``"n"``; it is checked once
        that is known.
    """

    names: tuple[str, ...]
    text: str
    holds: Callable[[Mapping[str, Any], int | None, int | None], bool]
    needs: Literal["", "k", "n"] = ""

    def check(self, values: Mapping[str, Any], k: int | None = None,
              n: int | None = None) -> None:
        """Raise InvalidInputError (the rule's text and the values met) if it is broken."""
        if (self.needs == "k" and k is None) or (self.needs == "n" and n is None):
            return
        if self.holds(values, k, n):
            return
        got = [f"{name}={values[name]!r}" for name in self.names]
        got += [f"k={k}"] if self.needs == "k" else [f"n={n}"] if self.needs == "n" else []
        raise InvalidInputError(f"{self.text}; got {', '.join(got)}")


#: Every rule between options (module notes): the place they are declared.
RULES: tuple[Rule, ...] = (
    Rule(("n_vectors",), "n_vectors must be k − 1 or k, k the number of labels (fewer cannot "
         "separate k labels, more bring in the bulk of the spectrum)",
         lambda v, k, n: v["n_vectors"] is None or k - 1 <= v["n_vectors"] <= k, "k"),
    Rule(("n_landmarks",), "n_landmarks must be at least k, the number of labels",
         lambda v, k, n: v["n_landmarks"] >= k, "k"),
    Rule(("n_eigenvectors",), "n_eigenvectors must be at least k, the number of labels",
         lambda v, k, n: v["n_eigenvectors"] >= k, "k"),
    Rule(("n_eigenvectors",), "n_eigenvectors must be at most n, the number of pixels of the "
         "image the method works on (or of graph vertices): lower it for tiny images",
         lambda v, k, n: v["n_eigenvectors"] <= n, "n"),
    Rule(("projection_dim", "projection_nnz"), "projection_dim must be at least projection_nnz "
         "(each column of the projection has projection_nnz non-zeros in distinct rows)",
         lambda v, k, n: v["projection_dim"] is None or v["projection_dim"] >= v["projection_nnz"]),
    Rule(("n_partitions", "n_landmarks"), f"n_partitions × n_landmarks must be at most "
         f"{MAX_LANDMARK_RUNS} (the base partitions' work)",
         lambda v, k, n: v["n_partitions"] * v["n_landmarks"] <= MAX_LANDMARK_RUNS),
)


def rules_for(options: Iterable[Option]) -> tuple[Rule, ...]:
    """The rules that apply to a method declaring ``options``."""
    names = {o.name for o in options}
    return tuple(r for r in RULES if names.issuperset(r.names))


def check_rules(rules: Iterable[Rule], values: Mapping[str, Any], k: int | None = None,
                n: int | None = None) -> None:
    """Every rule whose needs are met (:meth:`Rule.check`)."""
    for rule in rules:
        rule.check(values, k, n)


def _unknown(options: Sequence[Option], values: Mapping[str, Any], owner: str) -> None:
    known = by_name(options)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InvalidInputError(
            f"unknown option(s) {', '.join(unknown)} for method {owner!r}; valid: "
            f"{', '.join(sorted(known))}")


def resolve(options: Sequence[Option], values: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """Every option of ``options`` with its checked value (``values`` over the defaults).

    Raises
    ------
    segapp.errors.InvalidInputError
        An unknown name (the message lists the valid ones) or a bad value.
    """
    _unknown(options, values, owner)
    return {o.name: o.check(values[o.name]) if o.name in values else o.default for o in options}


def split(options: Sequence[Option], values: Mapping[str, Any],
          owner: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(setup, solve)``: the given values, checked and sorted by stage."""
    _unknown(options, values, owner)
    known = by_name(options)
    setup = {k: known[k].check(v) for k, v in values.items() if known[k].stage == "setup"}
    solve = {k: known[k].check(v) for k, v in values.items() if known[k].stage == "solve"}
    return setup, solve


def check_solve(options: Sequence[Option], values: Mapping[str, Any],
                owner: str) -> dict[str, Any]:
    """Checked solve-stage values; a set-up option here is an error (it needs a new Session)."""
    setup, solve = split(options, values, owner)
    if setup:
        raise InvalidInputError(
            f"{', '.join(sorted(setup))}: set-up option(s) of method {owner!r} (they shape "
            "what is built once per image); create a new Session to change them")
    return solve


class Settings(Mapping[str, Any]):
    """The option values in effect for a method or a session, checked once; read-only.

    Built by :meth:`resolve` (every given value checked, defaults filled in); an update's
    solve options give a new object by :meth:`with_solve`, which checks only those. Methods
    declare their options on the class (``cls.options``, :class:`Option` s) and hold their
    values here (``method.settings``), so the two are never the same name.
    """

    __slots__ = ("_values", "declared", "owner")

    def __init__(self, values: Mapping[str, Any], declared: Sequence[Option],
                 owner: str) -> None:
        # Trusted: values already checked against ``declared`` (use :meth:`resolve`).
        self._values = dict(values)
        self.declared = tuple(declared)
        self.owner = owner

    @classmethod
    def resolve(cls, declared: Sequence[Option], given: Mapping[str, Any],
                owner: str) -> "Settings":
        """Every declared option with its checked value (``given`` over the defaults).

        Raises
        ------
        segapp.errors.InvalidInputError
            An unknown name (the message lists the valid ones) or a bad value.
        """
        return cls(resolve(declared, given, owner), declared, owner)

    def with_solve(self, changes: Mapping[str, Any]) -> "Settings":
        """These settings with solve-stage ``changes`` (checked here; a set-up option is an
        error: it needs a new Session)."""
        if not changes:
            return self
        return Settings({**self._values, **check_solve(self.declared, changes, self.owner)},
                        self.declared, self.owner)

    def stage(self, stage: Stage) -> dict[str, Any]:
        """``{name: value}`` of the options of one stage, in declaration order."""
        return {o.name: self._values[o.name] for o in self.declared if o.stage == stage}

    def pick(self, declared: Sequence[Option], owner: str, **values: Any) -> "Settings":
        """The settings of a part (its declarations are a subset of ours, with the same
        checks), with ``values`` set by the caller (already valid)."""
        return Settings({**{o.name: self._values[o.name] for o in declared}, **values},
                        declared, owner)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Settings({self.owner!r}, {self._values!r})"


# -- documentation --------------------------------------------------------------------------
def markdown(methods: Sequence[tuple[str, str, Sequence[Option]]]) -> str:
    """The options page (``docs/options.md``) for ``(name, description, options)`` triples."""
    out = ["# Method options", "",
           "Generated from the declarations in the method modules (`segapp.options`); do not "
           "edit by hand — regenerate with `segapp methods --markdown > docs/options.md` "
           "(`tests/test_options.py` checks that this file is current).", "",
           "*Stage*: `setup` options shape what is built once per image (graph, landmarks, "
           "hierarchy, spectrum): pass them to `Session(image, method, **setup)`; `solve` "
           "options are per edit: `session.update(scribbles, **solve)` re-solves without "
           "rebuilding. On the command line every option is a flag (`--constraint-weight 2`); "
           "`segapp segment --method NAME --help` lists a method's flags.", ""]
    for name, description, options in methods:
        out += [f"## `{name}`", "", description, "",
                "| option | flag | type | default | allowed | stage | meaning |",
                "|---|---|---|---|---|---|---|"]
        for o in options:
            meaning = o.help + (f" (none: {o.none_means})" if o.none_means and
                                o.default is not None else "")
            cells = [f"`{o.name}`", f"`{o.flag}`", o.type.__name__, o.default_text(),
                     o.range_text(), o.stage, meaning]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out.append("")
        rules = rules_for(options)
        if rules:
            out += ["Rules between options:", ""]
            out += [f"- {r.text} (checked {_WHEN[r.needs]})" for r in rules]
            out.append("")
    return "\n".join(out)


#: When a rule is checked, by what it needs.
_WHEN = {"": "before any work", "n": "when the image is known",
         "k": "when the strokes are read"}


def rules_text(options: Iterable[Option]) -> str:
    """The rules of a method as one paragraph (``--help``), or ""."""
    rules = rules_for(options)
    return ("rules: " + "; ".join(r.text for r in rules) + ".") if rules else ""
