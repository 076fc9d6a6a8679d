"""Segmentation methods, one module each, behind one interface.

The interface is :class:`segapp.methods.base.Method`: built once per image
(``from_image``) or per graph / feature matrix (``from_data``), then
``update(scribbles, cancel=None, confidence=None) -> Segmentation`` for every edit.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInputError
from ..options import Option
from .ccskl import CCSKL
from .ensemble import ClusterEnsemble
from .fastge import FastGE
from .landmark_fastge import LandmarkFastGE
from .ncut import NCut
from .scacs import SCACS
from .scpc import SCPC

REGISTRY: dict[str, type] = {cls.name: cls for cls in (FastGE, NCut, LandmarkFastGE,
                                                       ClusterEnsemble, SCACS, CCSKL, SCPC)}


def available_methods() -> list[tuple[str, str]]:
    """``(name, one-line description)`` of every method, the default first."""
    return [(name, cls.description) for name, cls in REGISTRY.items()]


def get(name: str) -> type:
    """The method class registered as ``name``."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise InvalidInputError(
            f"unknown method {name!r}; available: {', '.join(REGISTRY)}") from None


def options_of(name: str) -> tuple[Option, ...]:
    """The option declarations of method ``name`` (:class:`segapp.options.Option`), in order.

    Everything about an option — type, default, range, help, stage (``"setup"``: pass it to
    :class:`segapp.Session`; ``"solve"``: to :meth:`segapp.Session.update`) — is here; the
    command line, ``segapp methods``, the app's settings panel and ``docs/options.md`` are
    generated from it.
    """
    return get(name).options


def option_names(name: str) -> set[str]:
    """Names of the options method ``name`` accepts.

    Lets a caller with settings for several methods (the desktop app) pass each only its own.
    """
    return {o.name for o in options_of(name)}


def create_from_data(name: str, *, graph=None, features=None, **options: Any):
    """Instantiate method ``name`` on a graph and/or feature vectors (see :mod:`.base`)."""
    return get(name).from_data(graph=graph, features=features, **options)
