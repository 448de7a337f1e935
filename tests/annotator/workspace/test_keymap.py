"""The workspace keymap (issue 24): label keys and command keys never meet, for the default
taxonomy and for a long one; the script binds every command; docs/workspace.md shows the same
table the help overlay is rendered from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotator.models.corpus import default_taxonomy
from annotator.selectors.keymap import COMMANDS, LABEL_KEYS, key_name, workspace_keymap

ROOT = Path(__file__).resolve().parents[3]
# Key ids the script's keyId() can produce besides digits: lower-case characters, named keys, Ctrl+z.
NAMED = {"ArrowRight", "ArrowLeft", "ArrowUp", "ArrowDown", "Enter", "Escape", "Delete", "Backspace", "Ctrl+z"}


def many_labels(n: int) -> list[dict]:
    return [{"label": f"L{i:02d}", "key": "abcdefghijklmnopqrstuvwxyz0123456789"[i]} for i in range(n)]


@pytest.mark.parametrize("taxonomy", [default_taxonomy(), many_labels(36)], ids=["default", "36 labels"])
@pytest.mark.parametrize("aware", [True, False], ids=["aware", "blind"])
def test_label_keys_and_command_keys_never_intersect(taxonomy, aware):
    km = workspace_keymap(taxonomy, aware=aware)
    label_keys = [lk.key for lk in km.labels if lk.key]
    command_keys = [k for c in km.commands for k in c.keys]
    assert set(label_keys).isdisjoint(command_keys)
    assert len(set(label_keys)) == len(label_keys) and len(set(command_keys)) == len(command_keys)
    data = km.data()
    assert set(data["labels"]).isdisjoint(data["commands"])
    assert [lk.label for lk in km.labels] == [d["label"] for d in taxonomy]  # every label listed, in order
    assert len(label_keys) == min(len(taxonomy), len(LABEL_KEYS))


def test_the_default_taxonomy_has_a_key_for_every_label_and_a_long_one_says_which_have_none():
    assert [lk.key for lk in workspace_keymap(default_taxonomy(), aware=False).labels] == [
        "1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "Shift+1", "Shift+2"]
    keys = [lk.key for lk in workspace_keymap(many_labels(36), aware=False).labels]
    assert keys[:20] == list(LABEL_KEYS) and keys[20:] == [""] * 16  # past the twentieth: buttons only


def test_every_command_key_is_one_the_script_can_name():
    for c in COMMANDS:
        for k in c.keys:
            assert k in NAMED or (len(k) == 1 and k == k.lower() and not k.isdigit()), (c.action, k)


def test_suggestions_are_named_only_where_they_are_shown():
    blind = workspace_keymap(default_taxonomy(), aware=False)
    aware = {c.action for c in workspace_keymap(default_taxonomy(), aware=True).commands}
    assert aware - {c.action for c in blind.commands} == {"accept", "reject"}
    assert "suggestion" not in repr(blind.data()).lower() + " ".join(c.help for c in blind.commands).lower()
    assert key_name("reopen") == "o" and key_name("word-next") == "→"


def test_the_script_binds_every_command_of_the_keymap():
    js = (ROOT / "static/js/workspace.js").read_text()
    block = js[js.index("var HANDLERS = {"):js.index("\n  };", js.index("var HANDLERS = {"))]
    assert set(re.findall(r'^\s{4}"([a-z-]+)": function', block, re.M)) == {c.action for c in COMMANDS}


def keymap_markdown() -> str:
    """The keymap as docs/workspace.md shows it: the aware item's commands, then the default labels."""
    km = workspace_keymap(default_taxonomy(), aware=True)
    rows = ["| Key | Action |", "| --- | --- |"]
    rows += [f"| {' / '.join(f'`{k}`' for k in c.shown)} | {c.help}{' (aware items only)' if c.aware_only else ''} |"
             for c in km.commands]
    rows += ["", "| Key | Label (default taxonomy) |", "| --- | --- |"]
    rows += [f"| `{lk.key}` | {lk.label} |" for lk in km.labels]
    return "\n".join(rows)


def test_docs_show_the_keymap_the_page_is_made_from():
    docs = (ROOT / "docs/workspace.md").read_text()
    start, end = "<!-- keymap: generated from annotator/selectors/keymap.py -->\n", "\n<!-- /keymap -->"
    assert start in docs and end in docs, "docs/workspace.md lost its keymap markers"
    shown = docs[docs.index(start) + len(start):docs.index(end)]
    assert shown == keymap_markdown(), "docs/workspace.md's keymap is stale; put this between the markers:\n" + \
        keymap_markdown()
