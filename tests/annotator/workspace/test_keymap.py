"""The keymap of the workspace, adjudication and the release review: label keys and command keys
never meet, for the default taxonomy and for a long one; a key means one action on every screen;
each script binds every command of its screen; docs/workspace.md shows the same tables the help
overlays are rendered from."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotator.models.corpus import default_taxonomy
from annotator.selectors.keymap import (
    ADJUDICATION,
    KEYS,
    LABEL_KEYS,
    REVIEW,
    WORKSPACE,
    adjudication_keymap,
    key_name,
    keymap_markdown,
    review_keymap,
    workspace_keymap,
)

ROOT = Path(__file__).resolve().parents[3]
# Key ids the script's keyId() can produce besides digits: lower-case characters, named keys, Ctrl+z.
NAMED = {"ArrowRight", "ArrowLeft", "ArrowUp", "ArrowDown", "Enter", "Shift+Enter", "Escape", "Delete", "Backspace",
         "Ctrl+z"}


def many_labels(n: int) -> list[dict]:
    return [{"label": f"L{i:02d}", "key": "abcdefghijklmnopqrstuvwxyz0123456789"[i]} for i in range(n)]


KEYMAPS = {
    "workspace aware": lambda t: workspace_keymap(t, aware=True),
    "workspace blind": lambda t: workspace_keymap(t, aware=False),
    "adjudication": adjudication_keymap,
    "review": lambda t: review_keymap([d["label"] for d in t]),
}


@pytest.mark.parametrize("taxonomy", [default_taxonomy(), many_labels(36)], ids=["default", "36 labels"])
@pytest.mark.parametrize("screen", list(KEYMAPS))
def test_label_keys_and_command_keys_never_intersect(taxonomy, screen):
    km = KEYMAPS[screen](taxonomy)
    label_keys = [lk.key for lk in km.labels if lk.key]
    command_keys = [k for c in km.commands for k in c.keys]
    assert set(label_keys).isdisjoint(command_keys)
    assert len(set(label_keys)) == len(label_keys) and len(set(command_keys)) == len(command_keys)
    data = km.data()
    assert set(data["labels"]).isdisjoint(data["commands"])
    assert [lk.label for lk in km.labels] == [d["label"] for d in taxonomy]  # every label listed, in order
    assert len(label_keys) == min(len(taxonomy), len(LABEL_KEYS))


def test_a_key_means_one_action_on_every_screen():
    owner = {}
    for action, keys in KEYS.items():
        for k in keys:
            assert owner.setdefault(k, action) == action, f"{k} is bound to {owner[k]} and {action}"
    for screen in KEYMAPS.values():
        for key, action in screen(default_taxonomy()).data()["commands"].items():
            assert owner[key] == action
    # the decisions every screen shares sit on the same letters
    for actions in (WORKSPACE, ADJUDICATION, REVIEW):
        assert {"accept", "reject", "help"} <= {c.action for c in actions}
    assert (key_name("accept"), key_name("reject"), key_name("undo"), key_name("help")) == ("a", "r", "u", "?")


def test_the_default_taxonomy_has_a_key_for_every_label_and_a_long_one_says_which_have_none():
    assert [lk.key for lk in workspace_keymap(default_taxonomy(), aware=False).labels] == [
        "1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "Shift+1", "Shift+2"]
    keys = [lk.key for lk in workspace_keymap(many_labels(36), aware=False).labels]
    assert keys[:20] == list(LABEL_KEYS) and keys[20:] == [""] * 16  # past the twentieth: buttons only


def test_every_command_key_is_one_the_script_can_name():
    for action, keys in KEYS.items():
        for k in keys:
            assert k in NAMED or (len(k) == 1 and k == k.lower() and not k.isdigit()), (action, k)


def test_suggestions_are_named_only_where_they_are_shown():
    blind = workspace_keymap(default_taxonomy(), aware=False)
    aware = {c.action for c in workspace_keymap(default_taxonomy(), aware=True).commands}
    assert aware - {c.action for c in blind.commands} == {"accept", "reject"}
    assert "suggestion" not in repr(blind.data()).lower() + " ".join(c.help for c in blind.commands).lower()
    assert key_name("reopen") == "o" and key_name("word-next") == "→"


def handlers(script: str) -> set[str]:
    js = (ROOT / "static/js" / script).read_text()
    block = re.search(r"var HANDLERS = \{\n(.*?)\n\s*\};", js, re.S).group(1)
    return set(re.findall(r'^\s+"([a-z-]+)": function', block, re.M))


@pytest.mark.parametrize("script, commands", [("workspace.js", WORKSPACE), ("adjudication.js", ADJUDICATION),
                                              ("review.js", REVIEW)], ids=["workspace", "adjudication", "review"])
def test_each_script_binds_every_command_of_its_keymap(script, commands):
    assert handlers(script) == {c.action for c in commands}


def test_docs_show_the_keymaps_the_pages_are_made_from():
    docs = (ROOT / "docs/workspace.md").read_text()
    start, end = "<!-- keymap: generated from annotator/selectors/keymap.py -->\n", "\n<!-- /keymap -->"
    assert start in docs and end in docs, "docs/workspace.md lost its keymap markers"
    shown = docs[docs.index(start) + len(start):docs.index(end)]
    expected = keymap_markdown(default_taxonomy())
    assert shown == expected, "docs/workspace.md's keymap is stale; put this between the markers:\n" + expected
