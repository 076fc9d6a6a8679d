"""Command-line flags generated from the option declarations: one per method option.

Shared by ``segapp segment`` (:mod:`segapp.cli`) and ``segapp batch``
(:mod:`segapp.cli.batch`): ``--method``, ``--max-pixels``, the flags of the chosen method's
options (every other method's accepted but hidden, so using one is reported as "not an option
of this method"), ``-O KEY=VALUE``, and :func:`method_options` to read them back, checked.
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from ..errors import InvalidInputError
from ..options import WORKING_PIXELS, Option, rules_text

DEFAULT_METHOD = "fastge"

#: Prefix of the argparse destinations of method options (keeps them apart from the others).
_DEST = "opt_"


def _flag_type(option: Option):
    def parse(text: str) -> Any:
        try:
            return option.parse(text)
        except InvalidInputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    parse.__name__ = option.name
    return parse


def _metavar(option: Option) -> str:
    if option.choices is not None:
        text = "{" + ",".join(map(str, option.choices)) + "}"
    else:
        text = {int: "N", float: "X", str: "TEXT"}[option.type]
    return text + ("|none" if option.none_ok else "")


def _add_option_flag(group: Any, option: Option, hidden: bool) -> None:
    """One flag per option: ``--name VALUE``, or ``--name/--no-name`` for booleans.

    ``default=SUPPRESS``: an option not given stays out of the namespace (the method's default
    applies), so ``--n-vectors none`` and no flag at all remain different.
    """
    help_text = argparse.SUPPRESS if hidden else option.describe().replace("%", "%%")
    dest = _DEST + option.name
    if option.type is bool:
        group.add_argument(option.flag, dest=dest, action=argparse.BooleanOptionalAction,
                           default=argparse.SUPPRESS, help=help_text)
    else:
        group.add_argument(option.flag, dest=dest, type=_flag_type(option),
                           default=argparse.SUPPRESS, metavar=_metavar(option), help=help_text)


def method_from_argv(argv: Sequence[str]) -> str:
    """The ``--method`` / ``-m`` value of a ``segment`` command line (to build its flags)."""
    method = DEFAULT_METHOD
    for i, arg in enumerate(argv):
        if arg in ("--method", "-m") and i + 1 < len(argv):
            method = argv[i + 1]
        elif arg.startswith("--method="):
            method = arg.split("=", 1)[1]
        elif arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--"):
            method = arg[2:]
    return method


def add_method_arguments(parser: argparse.ArgumentParser, method: str) -> None:
    """``--method``, ``--max-pixels`` and the flags of ``method``'s options (every other
    method's flags hidden); shared by ``segment`` and ``batch``."""
    from ..methods import REGISTRY, options_of
    parser.add_argument("--method", "-m", default=DEFAULT_METHOD, metavar="NAME",
                        help=f"segmentation method: {', '.join(REGISTRY)} (default "
                             f"{DEFAULT_METHOD}; see 'segapp methods')")
    # The Session option max_pixels (0 on the command line: None, full resolution).
    parser.add_argument(WORKING_PIXELS.flag, dest=WORKING_PIXELS.name, type=int, default=None,
                        metavar="N",
                        help="segment larger images on a reduced copy of this many pixels and "
                             "bring the result back to full resolution (default "
                             f"{WORKING_PIXELS.default}; 0 = always full resolution)")
    known = options_of(method) if method in REGISTRY else ()
    opts = parser.add_argument_group(
        f"options of method {method} (see 'segapp methods {method}')", rules_text(known) or None)
    seen = set()
    for option in known:
        _add_option_flag(opts, option, hidden=False)
        seen.add(option.name)
    for other in REGISTRY:
        for option in options_of(other):
            if option.name not in seen:
                _add_option_flag(opts, option, hidden=True)
                seen.add(option.name)
    if "color" in seen:   # the paper's grey-value graph, under its old name
        opts.add_argument("--grey", dest=_DEST + "color", action="store_false",
                          default=argparse.SUPPRESS,
                          help="same as --no-color" if "color" in {o.name for o in known}
                          else argparse.SUPPRESS)
    opts.add_argument("-O", "--option", dest="extra", action="append", type=_option_pair,
                      default=[], metavar="KEY=VALUE",
                      help="an option by its python name (repeatable), e.g. -O seed=3")


def _option_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip().replace("-", "_"), value.strip()


def method_options(args: argparse.Namespace) -> dict[str, Any]:
    """The method options given on the command line (with ``max_pixels`` if given), checked
    against the method's declarations.

    Raises
    ------
    InvalidInputError
        A flag of another method, an unknown ``-O`` name, or a bad ``-O`` value.
    """
    from ..methods import get
    from ..options import by_name
    method = args.method
    own = by_name(get(method).options)
    out: dict[str, Any] = {}
    for key, value in vars(args).items():
        if key.startswith(_DEST):
            name = key[len(_DEST):]
            if name not in own:
                flag = "--" + name.replace("_", "-")
                raise InvalidInputError(
                    f"{flag} is not an option of method {method!r} (its options: "
                    f"'segapp segment --method {method} --help')")
            out[name] = value
    for name, text in args.extra:
        if name not in own:
            raise InvalidInputError(
                f"unknown option {name!r} for method {method!r}; valid: {', '.join(own)}")
        out[name] = own[name].parse(text)
    if args.max_pixels is not None:
        out[WORKING_PIXELS.name] = args.max_pixels or None
    return out
