"""The docs name what exists: every path and name docs/architecture.md gives is in the code,
every flag README and docs/ pass to ``segapp`` is one of its parsers' flags, every
``segapp.…`` name they give can be imported, and every link between them reaches its page and
heading.

(docs/gui.md's shortcut table and plain words are checked in ``tests/gui/test_docs.py``;
docs/options.md is generated and compared in ``tests/test_options.py``.)
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import segapp
from segapp import methods
from segapp.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(segapp.__file__).resolve().parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: Pages a user reads (options.md is generated from the declarations, CHANGELOG is history).
USER_DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md")
                                           if p.name != "options.md")]

CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^[\w./-]+(\.py|\.yaml|/)$")


def resolve(token: str) -> Path | None:
    """The file or folder a path token of the page names (relative to ``segapp/``, the
    repository, or — a bare module name — anywhere in ``segapp/`` or ``tests/``), or None."""
    token = token.removeprefix("../")
    for base in (PACKAGE, ROOT, PACKAGE.parent):
        if (base / token).exists():
            return base / token
    if "/" not in token:
        found = sorted(PACKAGE.rglob(token)) or sorted((ROOT / "tests").rglob(token))
        return found[0] if found else None
    return None


def path_tokens(text: str) -> list[str]:
    return [t for t in CODE.findall(text) if PATH.match(t) and not t.startswith(("-", "."))]


def defines(source: str, name: str) -> bool:
    """Whether ``source`` defines ``name`` (a class, function, method or module constant)."""
    return re.search(rf"^\s*(class|def)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*[:=]",
                     source, re.MULTILINE) is not None


def table_claims(text: str) -> list[tuple[str, str]]:
    """``(path, name)`` for each table cell naming a module then, in backticks, its names:
    ``solve/direct.py (`DirichletFactor`, `cold_pixels`)`` or ``session.py `Session.update```."""
    claims = []
    for row in re.findall(r"^\|.*\|$", text, re.MULTILINE):
        for cell in row.strip("|").split("|"):
            current = None
            for token in CODE.findall(cell):
                if PATH.match(token) and token.endswith(".py"):
                    current = token
                elif current is not None and re.fullmatch(r"[A-Za-z_][\w.]*(\(\))?", token):
                    claims.append((current, token.removesuffix("()")))
    return claims


def test_every_path_named_in_architecture_exists():
    missing = [t for t in path_tokens(ARCHITECTURE.read_text()) if resolve(t) is None]
    assert not missing, missing


def test_every_name_in_architecture_tables_is_defined_where_it_says():
    claims = table_claims(ARCHITECTURE.read_text())
    assert len(claims) > 60          # the tables were parsed at all
    wrong = []
    for path, name in claims:
        file = resolve(path)
        assert file is not None and file.is_file(), path
        source = file.read_text()
        if not all(defines(source, part) for part in name.split(".")):
            wrong.append(f"{path}: {name}")
    assert not wrong, wrong


def test_the_checker_sees_a_name_that_is_not_there():
    assert table_claims("| x | `solve/direct.py` (`DirichletFactor`, `NoSuchThing`) |") == \
        [("solve/direct.py", "DirichletFactor"), ("solve/direct.py", "NoSuchThing")]
    source = resolve("solve/direct.py").read_text()
    assert defines(source, "DirichletFactor") and not defines(source, "NoSuchThing")


def cli_flags() -> set[str]:
    """Every flag of ``segapp`` and its commands, for every method's flags."""
    flags: set[str] = set()

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            flags.update(s for s in action.option_strings if s.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    for name, _ in methods.available_methods():
        walk(build_parser(name))
    return flags


def documented_commands(text: str) -> list[str]:
    """The ``segapp …`` command lines of a page: in shell blocks and in inline code."""
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL):
        joined = block.replace("\\\n", " ")
        lines += [ln.split("#")[0] for ln in joined.splitlines() if ln.startswith("segapp ")]
    lines += [t for t in CODE.findall(text) if t.startswith("segapp ")]
    return lines


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: p.name)
def test_every_flag_given_to_segapp_in_the_docs_exists(page):
    known = cli_flags()
    used = {f for line in documented_commands(page.read_text())
            for f in re.findall(r"(?<![\w-])--[a-z][\w-]*", line)}
    assert not used - known, sorted(used - known)


def test_the_flag_check_reads_commands():
    commands = documented_commands((ROOT / "README.md").read_text())
    assert any("--scribbles" in c for c in commands)
    assert "--no-such-flag" not in cli_flags()


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub makes for ``page``: lower case, punctuation dropped,
    spaces to hyphens."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", [*USER_DOCS, ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_every_link_between_the_docs_reaches_a_page_and_heading(page):
    broken = []
    text = page.read_text()
    if page.name == "CHANGELOG.md":      # quoted history keeps its links as they were
        text = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(">"))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(target)
    assert not broken, broken


def dotted_names(text: str) -> set[str]:
    """The ``segapp.…`` names the page gives in inline code (a call's arguments dropped)."""
    names = set()
    for token in CODE.findall(text):
        m = re.match(r"(segapp(?:\.[A-Za-z_]\w*)+)", token)
        if m:
            names.add(m.group(1))
    return names


def reachable(name: str) -> bool:
    """Whether ``segapp.a.b.C.d`` is a module or an attribute reached from one."""
    import importlib

    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: p.name)
def test_every_segapp_name_in_the_docs_exists(page):
    missing = sorted(n for n in dotted_names(page.read_text())
                     if not reachable(n))
    assert not missing, missing


def test_the_name_check_sees_a_missing_name():
    assert reachable("segapp.partition.PREVIOUS_GATE")
    assert not reachable("segapp.partition.NO_SUCH_NAME")
