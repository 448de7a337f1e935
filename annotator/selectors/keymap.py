"""The workspace's keymap, defined once: the item page hands it to ``static/js/workspace.js`` as
data (the script binds nothing else), the ``?`` help overlay and the buttons' key hints are
rendered from it, and a test holds the table in docs/workspace.md to it.

Labels live on the digit row and commands on letters and named keys, so the two can never meet,
whatever the taxonomy: label N (in taxonomy order) is digit N for the first ten (1–9, then 0) and
Shift+digit for the next ten; labels past the twentieth are on the label buttons only. Digits,
not a prefix key or a selection mode, because labelling is the one action repeated within an
item: a digit is one keystroke with no state to keep in mind. A prefix doubles every label; a
selection mode makes every command depend on whether a word is selected, which after a span it
often is (the caret stays there). The script reads a digit from the physical key
(``KeyboardEvent.code``), so it is the same on AZERTY and on the number pad.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

LABEL_KEYS: tuple[str, ...] = tuple("1234567890") + tuple(f"Shift+{d}" for d in "1234567890")

# How a key id is printed (ids are KeyboardEvent.key values, lower-case letters, "Ctrl+z").
_SHOWN = {"ArrowRight": "→", "ArrowLeft": "←", "ArrowDown": "↓", "ArrowUp": "↑", "Escape": "Esc"}


@dataclass(frozen=True)
class Command:
    action: str  # the handler's name in static/js/workspace.js
    keys: tuple[str, ...]  # key ids, the first one is the key the page names
    help: str
    aware_only: bool = False
    blind_help: str = ""  # the help where no suggestion is shown (a blind page never names them)

    @property
    def shown(self) -> tuple[str, ...]:
        return tuple(_SHOWN.get(k, k) for k in self.keys)


COMMANDS: tuple[Command, ...] = (
    Command("word-next", ("ArrowRight",), "select the next word after the caret (Shift extends the selection); "
                                          "then a label key adds a span, widened to whole words"),
    Command("word-prev", ("ArrowLeft",), "select the previous word (Shift extends the selection)"),
    Command("exact", ("x",), "keep the exact characters of the next span (then a label key, or Shift+click a label)"),
    Command("focus-next", ("j", "ArrowDown"), "focus the next suggestion or span", blind_help="focus the next span"),
    Command("focus-prev", ("k", "ArrowUp"), "focus the previous suggestion or span",
            blind_help="focus the previous span"),
    Command("accept", ("a",), "accept the focused suggestion", aware_only=True),
    Command("reject", ("r",), "reject the focused suggestion; rejecting all of them marks the message as "
                              "having no PII", aware_only=True),
    Command("relabel", ("e",), "change the label of the focused span or suggestion: then a label key",
            blind_help="change the label of the focused span: then a label key"),
    Command("delete", ("d", "Delete", "Backspace"), "delete the focused span"),
    Command("no-pii", ("n",), "no PII here (toggle; rejects the undecided suggestions)",
            blind_help="no PII here (toggle)"),
    Command("uncertain", ("m",), "mark the item uncertain (toggle)"),
    Command("comment", ("c",), "write a comment for the adjudicator (Ctrl+Enter saves it, Esc leaves the box)"),
    Command("undo", ("u", "Ctrl+z"), "undo (the last 50 edits of the item)"),
    Command("submit", ("Enter",), "submit and go to the next item"),
    Command("reopen", ("o",), "reopen a submitted item to change it (submitting it again updates the gold)"),
    Command("skip", ("s",), "skip (the item stays in your queue list)"),
    Command("guidelines", ("g",), "open the guidelines"),
    Command("help", ("?",), "open this help"),
    Command("escape", ("Escape",), "close a dialog; clear the selection, then the focus and exact mode"),
)
_BY_ACTION = {c.action: c for c in COMMANDS}


@dataclass(frozen=True)
class LabelKey:
    label: str
    key: str  # a key id of LABEL_KEYS, or "" past the twentieth label
    description: str
    color: str


def label_keys(taxonomy: list[dict]) -> list[LabelKey]:
    """The taxonomy's labels with their keys, in taxonomy order (the admin puts frequent ones first)."""
    return [LabelKey(d["label"], LABEL_KEYS[i] if i < len(LABEL_KEYS) else "", d.get("description", ""),
                     d.get("color", "#fde68a")) for i, d in enumerate(taxonomy)]


def key_name(action: str) -> str:
    """The key the page names for a command ("o" for reopen), for hints and messages."""
    return _BY_ACTION[action].shown[0]


@dataclass(frozen=True)
class Keymap:
    labels: list[LabelKey]
    commands: list[Command]

    def data(self) -> dict:
        """What the script reads: key id → label, key id → action, action → the key it names."""
        return {
            "labels": {lk.key: lk.label for lk in self.labels if lk.key},
            "commands": {k: c.action for c in self.commands for k in c.keys},
            "names": {c.action: c.shown[0] for c in self.commands},
        }


def workspace_keymap(taxonomy: list[dict], *, aware: bool) -> Keymap:
    """The keys of an item page: suggestions are named only where they are shown."""
    if aware:
        return Keymap(label_keys(taxonomy), list(COMMANDS))
    return Keymap(label_keys(taxonomy),
                  [replace(c, help=c.blind_help or c.help) for c in COMMANDS if not c.aware_only])


_REVIEW_HELP = {
    "accept": "PII: confirm it (the next build replaces it); a kept number is confirmed with its label key instead",
    "reject": "not PII: dismiss it (no build asks again)",
    "skip": "skip it: it comes back when the rest are done (remembered for you, after a reload too)",
    "undo": "undo your last verdict in this release (again: the one before)",
    "help": "open this help",
}


def review_keymap(labels: list[str]) -> Keymap:
    """The release review's keys: the workspace's letters for the same acts (``a`` confirms, ``r``
    dismisses, ``s`` skips, ``u`` undoes), so a key learnt on one screen never does something
    else here, and its label keys, which choose the label a confirmation gives (on a kept number,
    the only way to confirm it: a generic "yes" never makes teaching content PII)."""
    return Keymap(label_keys([{"label": label} for label in labels]),
                  [replace(_BY_ACTION[action], help=text) for action, text in _REVIEW_HELP.items()])
