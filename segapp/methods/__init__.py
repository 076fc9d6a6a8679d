"""Segmentation methods, one module each, behind one interface.

The interface is :class:`segapp.methods.base.Method`: built once per image
(``from_image``) or per graph / feature matrix (``from_data``), then
``update(scribbles, cancel=None, confidence=None) -> Segmentation`` for every edit.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any

from ..errors import InvalidInputError
from ..options import Option

#: Where each method lives, the default first (``--method`` lists them in this order).
#: A method's module is imported the first time its class is asked for, so ``import segapp``
#: does not load seven method modules (and their scipy / scikit-image / PyAMG imports).
_LOCATIONS: dict[str, str] = {
    "fastge": "fastge:FastGE",
    "ncut": "ncut:NCut",
    "landmark": "landmark_fastge:LandmarkFastGE",
    "ensemble": "ensemble:ClusterEnsemble",
    "scacs": "scacs:SCACS",
    "ccskl": "ccskl:CCSKL",
    "scpc": "scpc:SCPC",
}


class _Registry(MutableMapping):
    """``{name: method class}`` whose classes are imported on first access."""

    def __init__(self, locations: dict[str, str]) -> None:
        self._entries: dict[str, Any] = dict(locations)   # "module:Class" until loaded

    def __getitem__(self, name: str) -> type:
        entry = self._entries[name]
        if isinstance(entry, str):
            module, cls = entry.split(":")
            entry = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
            if entry.name != name:  # the table and the class must agree
                raise RuntimeError(f"{module}.{cls}.name is {entry.name!r}, registered as {name!r}")
            self._entries[name] = entry
        return entry

    def __setitem__(self, name: str, cls: type) -> None:
        self._entries[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"REGISTRY({', '.join(self._entries)})"


REGISTRY: MutableMapping[str, type] = _Registry(_LOCATIONS)


def available_methods() -> list[tuple[str, str]]:
    """``(name, one-line description)`` of every method, the default first."""
    return [(name, cls.description) for name, cls in REGISTRY.items()]


def get(name: str) -> type:
    """The method class registered as ``name``."""
    if not isinstance(name, str):      # a list would fail as "unhashable", a TypeError
        raise InvalidInputError(f"method must be a method name (str), got "
                                f"{type(name).__name__}; available: {', '.join(REGISTRY)}")
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
