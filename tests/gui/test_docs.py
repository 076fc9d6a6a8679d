"""docs/gui.md matches the app: its shortcut table lists exactly the actions' shortcuts."""

from __future__ import annotations

import re
from pathlib import Path

from segapp.gui import actions

DOC = Path(__file__).resolve().parents[2] / "docs" / "gui.md"
MOUSE = {"Wheel", "Ctrl+Wheel", "Middle-drag", "Space+drag"}


def documented_keys() -> set[str]:
    text = DOC.read_text()
    table = text.split("## Keyboard shortcuts", 1)[1].split("\n## ", 1)[0]
    keys: set[str] = set()
    for row in re.findall(r"^\| (.+?) \| .+ \|$", table, re.MULTILINE):
        if row in ("key", "---"):
            continue
        for part in re.split(r" / |, | or ", row):
            part = part.strip()
            if part == "1 … 9":
                keys.update(str(i) for i in range(1, 10))
            elif part:
                keys.add(part)
    return keys - MOUSE


def action_keys() -> set[str]:
    return {k for spec in actions.SPECS for k in spec.keys}


def test_the_documented_shortcuts_are_the_actions_shortcuts():
    assert documented_keys() == action_keys()


def test_every_shortcut_belongs_to_one_action_only():
    keys = [k for spec in actions.SPECS for k in spec.keys]
    assert len(keys) == len(set(keys))


def test_the_window_offers_the_same_shortcuts(window):
    from PySide6.QtGui import QKeySequence

    shown = {k.toString(QKeySequence.SequenceFormat.PortableText)
             for a in window.actions_by_name.values() for k in a.shortcuts()}
    assert shown == {QKeySequence(k).toString(QKeySequence.SequenceFormat.PortableText)
                     for k in action_keys()}
    assert {name for name, _ in actions.GESTURES} <= {row[0] for row in window.shortcut_table()}


def test_every_plain_word_on_screen_is_explained_in_the_guide():
    """Issue 32: each term the window uses (an option's plain name, a method's label) is in
    docs/gui.md, beside the technical name it stands for."""
    from segapp.gui import words

    text = DOC.read_text()
    for name, (label, _what) in words.OPTION_WORDS.items():
        assert f"**{label}**" in text and f"`{name}`" in text, name
    for name, label in words.METHOD_WORDS.items():
        assert label in text and f"`{name}`" in text, name
    for term in ("Segmented in", "Vector j (cost ×r)", "soft mask", "Shown", "Locked"):
        assert term in text, term
