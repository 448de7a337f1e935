"""PIIvot's centred context window, amortised: dialogues to model inputs and back.

A dialogue is read as one stream of sub-word tokens, each message introduced by its speaker's role
(``tutor :``). A *window* is one model input::

    [CLS] [ANCHOR] anchor head  [PREV] tail of what came before  TARGET  [NEXT] head of what follows [SEP]

The target (token type 1, everything else 0) is one message — PIIvot's window — or, when
``pack`` is on, a run of consecutive short messages that share one input, which is the same
context at a fraction of the cost (tutoring turns average a dozen tokens). Labels and predictions
exist only for the target's words, so what the model says about the context is cut away. A message
too long for one window is split at word boundaries into pieces, each with its own context.

Words are the units of :func:`pipeline.text.tokenize`; a word is labelled on its first sub-word.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.tags import LabelMap, word_tag_ids
from pipeline.text import Token, tokenize
from pipeline.types import Dialogue, Message, Span

IGNORE = -100
DEFAULT_MARKERS = {"anchor": "[ANCHOR]", "prev": "[PREVIOUS]", "next": "[NEXT]"}


@dataclass(frozen=True, slots=True)
class WindowConfig:
    """How windows are cut; saved with every model so inference cuts them the same way."""

    max_length: int = 256
    prev_tokens: int = 12
    next_tokens: int = 12
    anchor_tokens: int = 20
    pack: bool = True
    markers: tuple[tuple[str, str], ...] = tuple(DEFAULT_MARKERS.items())

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_length": self.max_length,
            "prev_tokens": self.prev_tokens,
            "next_tokens": self.next_tokens,
            "anchor_tokens": self.anchor_tokens,
            "pack": self.pack,
            "markers": dict(self.markers),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowConfig:
        data = dict(data)
        if "markers" in data:
            data["markers"] = tuple(dict(data["markers"]).items())
        return cls(**data)


@dataclass(slots=True)
class Window:
    """One model input and, for each labelled position, the message word it stands for."""

    input_ids: list[int]
    token_type_ids: list[int]
    positions: list[int]  # token positions of target words' first sub-words
    words: list[tuple[int, int]]  # (message index, word index) of each position
    labels: list[int] = field(default_factory=list)  # tag id per position (training only)

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(slots=True)
class _EncodedMessage:
    words: list[Token]
    ids: list[int]  # role prefix + text sub-words
    first_token: list[int]  # per word: index into ids of its first sub-word, -1 if none


def align_words(words: Sequence[Token], offsets: Sequence[tuple[int, int]]) -> list[int]:
    """Index of the first sub-word token overlapping each word (``-1`` when none does)."""
    out: list[int] = []
    t = 0
    for word in words:
        while t < len(offsets) and offsets[t][1] <= word.start:
            t += 1
        k = t
        while k < len(offsets) and offsets[k][0] == offsets[k][1]:  # zero-width tokens
            k += 1
        out.append(k if k < len(offsets) and offsets[k][0] < word.end else -1)
    return out


class WindowEncoder:
    """Turns dialogues into :class:`Window` inputs for one tokenizer and label map."""

    def __init__(self, tokenizer: Any, label_map: LabelMap, config: WindowConfig | None = None):
        self.tokenizer = tokenizer
        self.label_map = label_map
        self.config = config or WindowConfig()
        specials = tokenizer.build_inputs_with_special_tokens([])
        self._prefix, self._suffix = specials[:1], specials[1:]
        markers = dict(self.config.markers)
        self._marker_ids = {k: self._ids(v) for k, v in markers.items()}
        self._role_ids: dict[str, list[int]] = {}
        cfg = self.config
        self.capacity = (
            cfg.max_length
            - len(specials)
            - len(self._marker_ids["prev"])
            - cfg.prev_tokens
            - len(self._marker_ids["next"])
            - cfg.next_tokens
        )
        if self.capacity < 16:
            raise ValueError(
                f"max_length {cfg.max_length} leaves only {self.capacity} tokens for the target"
            )

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _role(self, message: Message) -> list[int]:
        role = message.role or "other"
        if role not in self._role_ids:
            self._role_ids[role] = self._ids(f"{role} :")
        return self._role_ids[role]

    def _encode_messages(
        self,
        messages: Sequence[Message],
        words_per_message: Sequence[list[Token]],
        ids_per_message: Sequence[list[int]],
        offsets_per_message: Sequence[list[tuple[int, int]]],
    ) -> list[_EncodedMessage]:
        out = []
        for m, words, ids, offsets in zip(
            messages, words_per_message, ids_per_message, offsets_per_message, strict=True
        ):
            role = self._role(m)
            first = [k + len(role) if k >= 0 else -1 for k in align_words(words, offsets)]
            out.append(_EncodedMessage(words, role + list(ids), first))
        return out

    def _subwords(self, texts: list[str]) -> tuple[list, list]:
        if not texts:
            return [], []
        enc = self.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        return enc["input_ids"], enc["offset_mapping"]

    @staticmethod
    def _pieces(msg: _EncodedMessage, cap: int) -> list[tuple[int, int]]:
        """Split a message's ids into ``[lo, hi)`` pieces of at most ``cap``, cut before a word."""
        n = len(msg.ids)
        if n <= cap:
            return [(0, n)]
        cuts = sorted({k for k in msg.first_token if k > 0})
        pieces, lo = [], 0
        while n - lo > cap:
            fits = [c for c in cuts if lo < c <= lo + cap]
            hi = fits[-1] if fits else lo + cap
            pieces.append((lo, hi))
            lo = hi
        pieces.append((lo, n))
        return pieces

    def encode(
        self,
        dialogue: Dialogue,
        *,
        with_labels: bool = False,
        rng: random.Random | None = None,
        only: set[int] | None = None,
    ) -> list[Window]:
        """Windows covering every message (or the message indices in ``only``).

        ``rng`` (training) varies how many messages share a window, so the model sees both
        single-message (PIIvot) windows and packed ones.
        """
        words = [tokenize(m.text) for m in dialogue.messages]
        encoded = self._encode_dialogues([dialogue], [words])[0]
        return self._windows(dialogue, encoded, with_labels=with_labels, rng=rng, only=only)

    def encode_many(
        self, dialogues: Sequence[Dialogue], words: Sequence[Sequence[list[Token]]]
    ) -> list[list[Window]]:
        """Inference windows of several dialogues, whose messages are sub-word tokenised in one
        call. ``words``: each dialogue's messages' :func:`~pipeline.text.tokenize` words."""
        encoded = self._encode_dialogues(dialogues, words)
        return [self._windows(d, e) for d, e in zip(dialogues, encoded, strict=True)]

    def _encode_dialogues(
        self, dialogues: Sequence[Dialogue], words: Sequence[Sequence[list[Token]]]
    ) -> list[list[_EncodedMessage]]:
        """Every message of ``dialogues`` encoded, with one sub-word tokeniser call for all."""
        ids, offsets = self._subwords([m.text for d in dialogues for m in d.messages])
        out, k = [], 0
        for dialogue, dialogue_words in zip(dialogues, words, strict=True):
            n = len(dialogue.messages)
            out.append(
                self._encode_messages(
                    dialogue.messages, dialogue_words, ids[k : k + n], offsets[k : k + n]
                )
            )
            k += n
        return out

    def _windows(
        self,
        dialogue: Dialogue,
        encoded: list[_EncodedMessage],
        *,
        with_labels: bool = False,
        rng: random.Random | None = None,
        only: set[int] | None = None,
    ) -> list[Window]:
        if not dialogue.messages:
            return []
        stream: list[int] = []
        starts: list[int] = []
        for msg in encoded:
            starts.append(len(stream))
            stream.extend(msg.ids)
        head, cap = self._head(dialogue)
        groups = self._group_pieces(self._pieces_of(encoded, cap, only), starts, cap, rng)
        spans = [m.spans for m in dialogue.messages] if with_labels else None
        return [self._window_of_group(g, stream, starts, head, encoded, spans) for g in groups]

    def _head(self, dialogue: Dialogue) -> tuple[list[int], int]:
        """The ids every window opens with (prefix, then the anchor if any) and the target room
        left; an anchor that would leave under 8 tokens is dropped rather than fail."""
        anchor = (
            self._ids(dialogue.anchor)[: self.config.anchor_tokens] if dialogue.anchor.strip() else []
        )
        head = self._prefix + (self._marker_ids["anchor"] + anchor if anchor else [])
        cap = self.capacity - (len(head) - len(self._prefix))
        if cap < 8:
            return list(self._prefix), self.capacity
        return head, cap

    def _pieces_of(
        self, encoded: list[_EncodedMessage], cap: int, only: set[int] | None
    ) -> list[tuple[int, int, int]]:
        """Pieces in stream order: (message index, lo, hi) with lo/hi relative to the message."""
        pieces: list[tuple[int, int, int]] = []
        for i, msg in enumerate(encoded):
            if only is not None and i not in only:
                continue
            pieces.extend((i, lo, hi) for lo, hi in self._pieces(msg, cap))
        return pieces

    def _group_pieces(
        self,
        pieces: list[tuple[int, int, int]],
        starts: list[int],
        cap: int,
        rng: random.Random | None,
    ) -> list[list[tuple[int, int, int]]]:
        """Pieces packed into windows: a piece joins the last group when contiguous with it and
        within that group's limit. With ``rng`` (training) each new group draws its own limit:
        packed windows of varied size and a few single messages (PIIvot's)."""
        groups: list[list[tuple[int, int, int]]] = []
        limits: list[int] = []
        for piece in pieces:
            if groups and self.config.pack:
                last = groups[-1]
                li, _, lhi = last[-1]
                contiguous = starts[li] + lhi == starts[piece[0]] + piece[1]
                size = sum(hi - lo for _, lo, hi in last)
                if contiguous and size + piece[2] - piece[1] <= limits[-1]:
                    last.append(piece)
                    continue
            groups.append([piece])
            limit = cap
            if rng is not None:
                limit = 0 if rng.random() < 0.05 else int(cap * rng.uniform(0.25, 1.0))
            limits.append(limit)
        return groups

    def _window_of_group(
        self,
        group: list[tuple[int, int, int]],
        stream: list[int],
        starts: list[int],
        head: list[int],
        encoded: list[_EncodedMessage],
        spans: list[tuple[Span, ...]] | None,
    ) -> Window:
        """One window: head, previous context, the group's tokens, next context; word positions
        (and, given the messages' ``spans``, word tags) for the words the group starts."""
        cfg = self.config
        g0 = starts[group[0][0]] + group[0][1]
        g1 = starts[group[-1][0]] + group[-1][2]
        prev = stream[max(0, g0 - cfg.prev_tokens) : g0] if cfg.prev_tokens else []
        nxt = stream[g1 : g1 + cfg.next_tokens] if cfg.next_tokens else []
        before = head + self._marker_ids["prev"] + prev
        after = self._marker_ids["next"] + nxt + self._suffix
        ids = before + stream[g0:g1] + after
        types = [0] * len(before) + [1] * (g1 - g0) + [0] * len(after)
        positions, words, labels = [], [], []
        for i, lo, hi in group:
            msg = encoded[i]
            tags = word_tag_ids(msg.words, spans[i], self.label_map) if spans is not None else None
            for w, k in enumerate(msg.first_token):
                if lo <= k < hi:
                    positions.append(len(before) + starts[i] + k - g0)
                    words.append((i, w))
                    if tags is not None:
                        labels.append(tags[w])
        return Window(ids, types, positions, words, labels)

    def message_words(self, dialogue: Dialogue) -> list[list[Token]]:
        return [tokenize(m.text) for m in dialogue.messages]


# --- span edges ------------------------------------------------------------------------------

_LEAD_STRIP = "\"'“”‘’([{<*_-–—,.;:!?"
_TRAIL_STRIP = "\"'“”‘’)]}>*_-–—,.;:!?/"
_PAIRS = {")": "(", "]": "[", "}": "{", ">": "<"}


def trim_edges(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Trim white space, edge punctuation and a possessive ``'s`` from ``text[start:end]``.

    Brackets are kept when the span holds their partner: ``(555) 123-4567`` stays whole. Returns
    ``None`` when nothing is left.
    """
    changed = True
    while changed and start < end:
        changed = False
        while start < end and text[start].isspace():
            start, changed = start + 1, True
        while end > start and text[end - 1].isspace():
            end, changed = end - 1, True
        if start >= end:
            break
        low = text[start:end].lower()
        if len(low) > 2 and low[-2:] in ("'s", "’s") and text[end - 3].isalpha():
            end, changed = end - 2, True
            continue
        first, last = text[start], text[end - 1]
        if first in _LEAD_STRIP and not (first in "([{<" and _closes(text[start:end], first)):
            start, changed = start + 1, True
            continue
        if last in _TRAIL_STRIP:
            opener = _PAIRS.get(last)
            if opener is None or opener not in text[start : end - 1]:
                end, changed = end - 1, True
    return (start, end) if start < end else None


def _closes(piece: str, opener: str) -> bool:
    closer = {v: k for k, v in _PAIRS.items()}[opener]
    return closer in piece[1:]


def balance_brackets(text: str, start: int, end: int) -> tuple[int, int]:
    """Take in the opening bracket just outside a span that holds only its partner:
    ``643)432-9382`` becomes ``(643)432-9382``."""
    piece = text[start:end]
    for closer, opener in _PAIRS.items():
        if closer in piece and opener not in piece and start > 0 and text[start - 1] == opener:
            return start - 1, end
    return start, end


_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", re.UNICODE)
_URL_RE = re.compile(r"(?:https?://|www\.)[^\s<>\"']+", re.IGNORECASE)
_URL_TRAIL = ".,;:!?)]}'\""


def pattern_matches(text: str) -> list[tuple[int, int, str]]:
    """E-mail addresses and URLs by shape: ``(start, end, label)``."""
    found = [(m.start(), m.end(), "EMAIL") for m in _EMAIL_RE.finditer(text)]
    for m in _URL_RE.finditer(text):
        start, end = m.span()
        while end > start and text[end - 1] in _URL_TRAIL:
            end -= 1
        if not any(s < end and start < e for s, e, _ in found):
            found.append((start, end, "URL"))
    return found


def snap_to_patterns(text: str, spans: list[Span], labels: Sequence[str]) -> list[Span]:
    """A predicted span touching an e-mail address or URL becomes that whole address.

    The tagger finds *that* something is an address; its shape says exactly where it ends. Spans
    that overlap the same address collapse into one, with the best score.
    """
    if "@" not in text and "www" not in text.lower() and "http" not in text.lower():
        return spans
    matches = [m for m in pattern_matches(text) if m[2] in labels]
    if not matches:
        return spans
    out: list[Span] = []
    snapped: dict[tuple[int, int, str], float] = {}
    for span in spans:
        hit = next((m for m in matches if m[0] < span.end and span.start < m[1]), None)
        if hit is None:
            out.append(span)
        else:
            snapped[hit] = max(snapped.get(hit, 0.0), span.score)
    out.extend(Span(s, e, lab, score=score) for (s, e, lab), score in snapped.items())
    return sorted(out)
