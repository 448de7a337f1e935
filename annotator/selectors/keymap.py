"""The keymap of every screen where a person decides, defined once: the workspace, adjudication and
the release review. Each page hands its keymap to its script as data (the scripts bind nothing
else, through ``static/js/keymap.js``), the ``?`` help overlay and the buttons' key hints are
rendered from it, and a test holds the tables in docs/workspace.md to it.

A key is bound to an action once, in :data:`KEYS`, for all screens: ``a`` accepts (a suggestion,
a candidate, a release's finding), ``r`` rejects, ``Enter`` submits and goes on, ``u`` undoes,
``?`` helps. A screen picks the actions it has and says what each does there, so a letter learnt
on one screen never does something else on another.

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

from dataclasses import dataclass

LABEL_KEYS: tuple[str, ...] = tuple("1234567890") + tuple(f"Shift+{d}" for d in "1234567890")

# action -> its keys (ids are KeyboardEvent.key values, lower-case letters, "Ctrl+z",
# "Shift+Enter"), the first being the key a page names. One table for every screen.
KEYS: dict[str, tuple[str, ...]] = {
    "word-next": ("ArrowRight",),
    "word-prev": ("ArrowLeft",),
    "exact": ("x",),
    "focus-next": ("j", "ArrowDown"),
    "focus-prev": ("k", "ArrowUp"),
    "accept": ("a",),
    "reject": ("r",),
    "relabel": ("e",),
    "delete": ("d", "Delete", "Backspace"),
    "no-pii-next": ("n",),
    "uncertain": ("m",),
    "comment": ("c",),
    "undo": ("u", "Ctrl+z"),
    "submit": ("Enter",),
    "submit-confirm": ("Shift+Enter",),
    "reopen": ("o",),
    "skip": ("s",),
    "guidelines": ("g",),
    "help": ("?",),
    "escape": ("Escape",),
}

# How a key id is printed.
_SHOWN = {"ArrowRight": "→", "ArrowLeft": "←", "ArrowDown": "↓", "ArrowUp": "↑", "Escape": "Esc"}


@dataclass(frozen=True)
class Command:
    action: str  # the handler's name in the screen's script
    help: str
    aware_only: bool = False  # workspace: only where the model's suggestions are shown
    blind_help: str = ""  # the help where no suggestion is shown (a blind page never names them)

    @property
    def keys(self) -> tuple[str, ...]:
        return KEYS[self.action]

    @property
    def shown(self) -> tuple[str, ...]:
        return tuple(_SHOWN.get(k, k) for k in self.keys)


WORKSPACE: tuple[Command, ...] = (
    Command("word-next", "select the next word after the caret (Shift extends the selection); "
                         "then a label key adds a span, widened to whole words"),
    Command("word-prev", "select the previous word (Shift extends the selection)"),
    Command("exact", "keep the exact characters of the next span (then a label key, or Shift+click a label)"),
    Command("focus-next", "focus the next suggestion or span", blind_help="focus the next span"),
    Command("focus-prev", "focus the previous suggestion or span", blind_help="focus the previous span"),
    Command("accept", "accept the focused suggestion, then focus the next undecided one", aware_only=True),
    Command("reject", "reject the focused suggestion, then focus the next undecided one; rejecting all of "
                      "them marks the message as having no PII", aware_only=True),
    Command("relabel", "change the label of the focused span or suggestion: then a label key",
            blind_help="change the label of the focused span: then a label key"),
    Command("delete", "delete the focused span"),
    Command("no-pii-next", "no PII here: mark it (rejecting the undecided suggestions), submit and go to "
                           "the next item", blind_help="no PII here: mark it, submit and go to the next item"),
    Command("uncertain", "mark the item uncertain (toggle)"),
    Command("comment", "write a comment for the adjudicator (Ctrl+Enter saves it and returns to the page, "
                       "Esc leaves the box)"),
    Command("undo", "undo (the last 50 edits of the item)"),
    Command("submit", "submit and go to the next item"),
    Command("reopen", "reopen a submitted item to change it (submitting it again updates the gold)"),
    Command("skip", "skip (the item stays in your queue list)"),
    Command("guidelines", "open the guidelines"),
    Command("help", "open this help"),
    Command("escape", "close a dialog; clear the selection, then the focus and exact mode"),
)

ADJUDICATION: tuple[Command, ...] = (
    Command("focus-next", "focus the next candidate span"),
    Command("focus-prev", "focus the previous candidate span"),
    Command("accept", "keep the focused candidate in the gold, then focus the next one"),
    Command("reject", "leave the focused candidate out of the gold, then focus the next one"),
    Command("comment", "write a reply to the annotators (Ctrl+Enter saves the decision, Esc leaves the box)"),
    Command("undo", "undo the last change to the gold spans (a keep, a drop or an added span)"),
    Command("submit", "save the gold and go to the next item"),
    Command("submit-confirm", "save, confirming that marked text you left out is not PII"),
    Command("help", "open this help"),
    Command("escape", "close a dialog; leave a text box; clear the selection, then the focus"),
)

REVIEW: tuple[Command, ...] = (
    Command("accept", "PII: confirm it (the next build replaces it); a kept number is confirmed with its "
                      "label key instead"),
    Command("reject", "not PII: dismiss it (no build asks again)"),
    Command("skip", "skip it: it comes back when the rest are done (remembered for you, after a reload too)"),
    Command("undo", "undo your last verdict in this release (again: the one before)"),
    Command("help", "open this help"),
    Command("escape", "close this help"),
)


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
    """The key a page names for a command ("o" for reopen), for hints and messages."""
    return _SHOWN.get(KEYS[action][0], KEYS[action][0])


@dataclass(frozen=True)
class Keymap:
    title: str  # the screen, as the help and the docs name it
    labels: list[LabelKey]
    commands: list[Command]
    label_help: str = "add a span with that label to the selected text"

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
        return Keymap("Workspace", label_keys(taxonomy), list(WORKSPACE))
    return Keymap("Workspace", label_keys(taxonomy),
                  [Command(c.action, c.blind_help or c.help) for c in WORKSPACE if not c.aware_only])


def adjudication_keymap(taxonomy: list[dict]) -> Keymap:
    return Keymap("Adjudication", label_keys(taxonomy), list(ADJUDICATION))


def review_keymap(labels: list[str]) -> Keymap:
    """The release review's keys; a label key picks the label a confirmation gives."""
    return Keymap("Release review", label_keys([{"label": label} for label in labels]), list(REVIEW),
                  label_help="choose the label a confirmation gives")


def keymap_markdown(taxonomy: list[dict]) -> str:
    """The three screens' keys as docs/workspace.md shows them (aware workspace, default taxonomy)."""
    out = []
    for km in (workspace_keymap(taxonomy, aware=True), adjudication_keymap(taxonomy),
               review_keymap([d["label"] for d in taxonomy])):
        out += [f"**{km.title}**", "", "| Key | Action |", "| --- | --- |",
                f"| `1`–`9`, `0`, `Shift`+digit | {km.label_help} |"]
        out += [f"| {' / '.join(f'`{k}`' for k in c.shown)} | {c.help} |" for c in km.commands]
        out.append("")
    out += ["| Key | Label (default taxonomy; the same keys on all three screens) |", "| --- | --- |"]
    out += [f"| `{lk.key}` | {lk.label} |" for lk in label_keys(taxonomy)]
    return "\n".join(out)
