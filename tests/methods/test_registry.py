"""segapp.methods' registry: every method by name, imported only when asked for."""

from __future__ import annotations

import subprocess
import sys

import pytest

from segapp import methods
from segapp.errors import InvalidInputError

NAMES = ["fastge", "ncut", "landmark", "ensemble", "scacs", "ccskl", "scpc"]


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120).stdout.strip()


def test_import_segapp_loads_no_method_module():
    out = _fresh("import sys, segapp; "
                 "print(' '.join(sorted(m for m in sys.modules if m.startswith('segapp.methods.'))))")
    assert out == ""


def test_asking_for_one_method_loads_only_its_modules():
    out = _fresh("import sys, segapp.methods as M; M.options_of('fastge'); "
                 "print(' '.join(sorted(m for m in sys.modules if m.startswith('segapp.methods.'))))")
    assert set(out.split()) == {"segapp.methods.fastge", "segapp.methods.graph_method",
                                "segapp.methods.base", "segapp.methods.answer_memory"}


def test_registry_order_names_and_classes():
    assert list(methods.REGISTRY) == NAMES and len(methods.REGISTRY) == len(NAMES)
    for name in NAMES:
        cls = methods.get(name)
        assert cls is methods.REGISTRY[name] and cls.name == name
        assert methods.options_of(name) is cls.options
    assert [n for n, _ in methods.available_methods()] == NAMES


def test_unknown_method_lists_the_available_ones():
    with pytest.raises(InvalidInputError, match="unknown method 'nope'; available: fastge, ncut"):
        methods.get("nope")


def test_a_registered_class_must_carry_its_name():
    registry = methods._Registry({"ncut": "fastge:FastGE"})
    with pytest.raises(RuntimeError, match="registered as 'ncut'"):
        registry["ncut"]
