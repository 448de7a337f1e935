"""Replace the PII spans of a dialogue: surrogates, tags or redaction, consistently and safely.

:class:`Deidentifier` turns one :class:`~pipeline.types.Dialogue` and its spans into a release
dialogue, the replacements it made and the mapping table (kept apart from the release: it is the
key to the originals). :func:`deidentify_stream` does it for a stream of dialogues, so memory stays
flat on large corpora. The fallback chain is LLM → offline surrogate → tag; the original text is
never a fallback.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from pipeline.surrogates.candidates import Candidate
from pipeline.surrogates.completion import COMPLETION_RULES
from pipeline.surrogates.context import MAX_ATTEMPTS, GenContext, Scope, SurrogateFailure
from pipeline.surrogates.fields import (
    FieldPolicy,
    keyed_id,
    meta_items,
    released_meta,
    shift_timestamp,
)
from pipeline.surrogates.formats import (
    age_surrogate,
    course_surrogate,
    date_surrogate,
    email_surrogate,
    generic_surrogate,
    id_surrogate,
    phone_surrogate,
    shift_date,
    url_surrogate,
    username_surrogate,
)
from pipeline.surrogates.fragments import (
    FRAGMENT_RULES,
    name_parts,
    unsafe_part,
)
from pipeline.surrogates.keyed import (
    KeyedRandom,
    normalize,
)
from pipeline.surrogates.names import name_surrogate
from pipeline.surrogates.numbers import NUMBER_RULES
from pipeline.surrogates.places import location_surrogate, school_surrogate
from pipeline.surrogates.results import REDACTED, DeidResult, FieldText, tag_for
from pipeline.surrogates.rewrite import apply_table, rewrite
from pipeline.surrogates.rules import DATE_LABELS, rule_error
from pipeline.surrogates.scanner import ForbiddenIndex, OriginalIndex
from pipeline.surrogates.sweep import (
    base_of,
    collect,
    collect_messages,
    complete_spans,
    dialogue_name_parts,
    digit_group_spans,
    drop_maths_numbers,
    fragment_spans,
    match_groups,
    sweep_originals,
    unspanned_hits,
)
from pipeline.types import DEFAULT_LABELS, Dialogue, Span, resolve_overlaps

VERSION = "3"  # 2: the self-audit (completion, fragments, maths numbers kept); 3: the whole record
MODES = ("surrogate", "tag", "redact")
SCOPES = ("dialogue", "corpus")

Generator = Callable[[str, GenContext], str]

GENERATORS: dict[str, Generator] = {
    "NAME": name_surrogate,
    "SCHOOL": school_surrogate,
    "LOCATION": location_surrogate,
    "AGE": age_surrogate,
    "DATE_OF_BIRTH": date_surrogate,
    "DATE": date_surrogate,
    "EMAIL": email_surrogate,
    "PHONE": phone_surrogate,
    "URL": url_surrogate,
    "USERNAME": username_surrogate,
    "ID_NUMBER": id_surrogate,
    "COURSE": course_surrogate,
    "OTHER_IDENTIFIER": generic_surrogate,
}
_DATE_OFFSETS = (30, 730)  # |days|

_LABEL_RANK = {label: i for i, label in enumerate(DEFAULT_LABELS)}  # Deidentifier.agreed_label's tie-break


def _relabelled(span: Span, label: str) -> Span:
    return span if span.label == label else replace(span, label=label)


class SurrogateProposer(Protocol):
    """Something that proposes surrogates for a whole dialogue at once (the LLM path)."""

    version: str

    def propose(
        self,
        dialogue: Dialogue,
        items: Sequence[tuple[str, str]],
        check: Callable[[str, str, str], str | None],
    ) -> dict[tuple[str, str], str]: ...


class Deidentifier:
    """Replace spans in one of three modes; build from config with :func:`build_deidentifier`.

    ``key`` seeds every choice (HMAC-SHA256), so the same key, input and forbidden set reproduce a
    release byte for byte. ``scope="corpus"`` keeps surrogates consistent across dialogues (a
    student who appears in many); the default scope is one dialogue. ``propagate`` also replaces
    unspanned occurrences of the dialogue's originals (messages and anchor text), and
    ``sweep_corpus`` those of every original registered so far (pass ``forbidden`` from a first
    pass over the corpus to register them all). Both use the leak check's matcher and leave maths
    expressions, short numbers, dates without a year and lower-case common words alone.

    ``audit`` (default on) is the release's self-audit on the way in: structured spans completed
    (:mod:`~pipeline.surrogates.completion`), fragments of originals replaced or asked about
    (:mod:`~pipeline.surrogates.fragments`), bare numbers of the maths kept and asked about
    (:mod:`~pipeline.surrogates.numbers`) unless their candidate key is in ``confirmed``; what
    it cannot settle is in :attr:`DeidResult.candidates`.
    """

    name = "surrogates"
    version = VERSION

    def __init__(
        self,
        *,
        key: str | bytes,
        mode: str = "surrogate",
        scope: str = "dialogue",
        propagate: bool = True,
        proposer: SurrogateProposer | None = None,
        forbidden: Iterable[tuple[str, str]] = (),
        sweep_corpus: bool = True,
        audit: bool = True,
        confirmed: Collection[str] = (),
        confirmed_fields: Mapping[str, Sequence[tuple[str, int, int, str]]] | None = None,
        fields: FieldPolicy | None = None,
        region: str = "US",
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        self.keyed = KeyedRandom(key)
        self.mode = mode
        self.scope_kind = scope
        self.propagate = propagate
        self.proposer = proposer
        self.forbidden = ForbiddenIndex()
        self.sweep_corpus = sweep_corpus
        self._corpus_scope = Scope(seed="corpus")
        # ts_unread_dropped: timestamps the release could not read, so could not shift: left out
        self.fallbacks = {"llm_to_offline": 0, "offline_to_tag": 0, "ts_unread_dropped": 0}
        self.audit = audit
        self.confirmed = frozenset(confirmed)
        # dialogue id -> (field, start, end, label) people confirmed outside the messages' text
        self.confirmed_fields = dict(confirmed_fields or {})
        self.fields = fields if fields is not None else FieldPolicy()
        self.region = region
        self.name_parts = OriginalIndex()  # the corpus's name parts (fragments), found anywhere
        self._label_votes: dict[str, Counter[str]] = {}  # normalised original -> its labels, first pass
        self.add_forbidden(forbidden)

    @property
    def strategy(self) -> str:
        llm = f"+{self.proposer.version}" if (self.proposer and self.mode == "surrogate") else ""
        return f"{self.mode}@{self.version}{llm}"

    def describe(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "mode": self.mode,
            "scope": self.scope_kind,
            "propagate": self.propagate,
            "sweep_corpus": self.sweep_corpus,
            "key_fingerprint": self.keyed.fingerprint(),
            "fields": self.fields.to_dict(),
            "audit": {"completion": COMPLETION_RULES, "fragments": FRAGMENT_RULES,
                      "numbers": NUMBER_RULES} if self.audit else None,
        }

    def add_forbidden(self, originals: Iterable[tuple[str, str]]) -> None:
        """Register ``(label, text)`` originals of the whole corpus (a first pass over it). Sorted:
        the first spelling of a name part registered ("Mark" or "mark") decides whether another is
        a fragment, and the first pass hands a set, whose order changes with the hash seed."""
        for label, text in sorted(originals):
            self._register(label, text)
            self._label_votes.setdefault(normalize(text), Counter())[label] += 1

    def agreed_label(self, label: str, text: str) -> str:
        """The one label an original gets across the release: the label the first pass saw most
        often for it, ties broken by :data:`~pipeline.types.DEFAULT_LABELS` order (NAME first)
        and then by name. A detector can label the same string COURSE in one dialogue and NAME
        in another, and which one it says near a tie can depend on thread count (``deidentify
        --workers``): one rule over the whole corpus makes the release the same whatever the
        order or the number of workers. Without a first pass, ``label`` stands."""
        votes = self._label_votes.get(normalize(base_of(label, text))) if self._label_votes else None
        if not votes or len(votes) == 1 and label in votes:
            return label
        return min(votes, key=lambda lab: (-votes[lab], _LABEL_RANK.get(lab, len(_LABEL_RANK)), lab))

    def _register(self, label: str, text: str) -> None:
        self.forbidden.add(label, text)
        if self.audit and label == "NAME":
            for part in name_parts(text):
                self.name_parts.add("NAME", part)

    # --- one dialogue --------------------------------------------------------------------

    def register(self, originals: Iterable[tuple[str, str]]) -> None:
        """Register ``(label, text)`` originals a dialogue names: later dialogues are swept for
        them and no surrogate may be one (what :meth:`deidentify` does with each dialogue's)."""
        for label, text in originals:
            self._register(label, text)

    def registered(self, dialogue: Dialogue, spans: Sequence[Sequence[Span]] | None = None) -> list[tuple[str, str]]:
        """The originals :meth:`deidentify` would register for ``dialogue``, in its order, without
        registering them or choosing any surrogate: the state one dialogue leaves for the next,
        which a release built in parts hands each part (:mod:`pipeline.surrogates.parts`)."""
        items = self._speakers_first(dialogue)
        collect_messages(items, dialogue, self._chosen(dialogue, spans, []))
        return list(items.values())

    def _speakers_first(self, dialogue: Dialogue) -> dict[str, tuple[str, str]]:
        """The dialogue's originals, starting with the names its speaker labels give (a name, so
        NAME whatever a detector called the same words in the text)."""
        items: dict[str, tuple[str, str]] = {}
        for name in self.fields.speaker_names(dialogue).values():
            items.setdefault(normalize(name), ("NAME", name))
        return items

    def _chosen(self, dialogue: Dialogue, spans: Sequence[Sequence[Span]] | None,
                candidates: list[Candidate]) -> list[list[Span]]:
        """Each message's spans as the release replaces them: under the agreed label, completed,
        without overlaps or the maths numbers (what these leave to people goes to ``candidates``)."""
        if spans is None:
            spans = [m.spans for m in dialogue.messages]
        if len(spans) != len(dialogue.messages):
            raise ValueError(
                f"{dialogue.id}: {len(spans)} span lists for {len(dialogue.messages)} messages"
            )
        chosen: list[list[Span]] = []
        for msg, ss in zip(dialogue.messages, spans, strict=True):
            kept = [s for s in ss if s.end <= len(msg.text) and msg.text[s.start : s.end].strip()]
            kept = [_relabelled(s, self.agreed_label(s.label, msg.text[s.start : s.end])) for s in kept]
            if self.audit:
                kept = complete_spans(dialogue, msg.index, msg.text, kept, region=self.region,
                                      candidates=candidates)
            chosen.append(resolve_overlaps(kept))
        if self.audit:
            drop_maths_numbers(dialogue, chosen, confirmed=self.confirmed, candidates=candidates)
        return chosen

    def deidentify(
        self, dialogue: Dialogue, spans: Sequence[Sequence[Span]] | None = None
    ) -> DeidResult:
        """The release of ``dialogue`` with ``spans`` (one list per message; default: its own
        spans): its texts, and every other field under :attr:`fields`."""
        candidates: list[Candidate] = []
        chosen = self._chosen(dialogue, spans, candidates)
        items = self._speakers_first(dialogue)
        collect_messages(items, dialogue, chosen)
        self.register(items.values())
        index = self._sweep_index(items)
        swept: set[tuple[int, int, int]] = set()
        anchor_spans = self._confirmed_in(dialogue, "anchor", dialogue.anchor)
        if index is not None and len(index):
            anchor_spans += sweep_originals(dialogue, index, chosen, items, swept, anchor_spans)
        groups: dict[str, tuple[str, int]] = {}
        parts = None
        if self.audit and (self.sweep_corpus or self.propagate):
            parts = self.name_parts if self.sweep_corpus else dialogue_name_parts(items)
            anchor_spans += fragment_spans(dialogue, parts, chosen, items, swept, candidates, anchor_spans)
            groups = digit_group_spans(dialogue, chosen, items, swept)
        meta_spans = self._meta_spans(dialogue, index, parts, items, candidates)
        table = self._table(dialogue, items)
        match_groups(table, groups)
        result = apply_table(dialogue, chosen, items, table, swept, sorted(anchor_spans))
        result.candidates = candidates
        self._envelope(result, items, table, meta_spans)
        return result

    def _confirmed_in(self, dialogue: Dialogue, name: str, text: str) -> list[Span]:
        """What people confirmed as PII in field ``name`` of the dialogue (a release review)."""
        return [Span(s, e, label, source="release_review")
                for f, s, e, label in self.confirmed_fields.get(dialogue.id, ())
                if f == name and e <= len(text) and text[s:e] == text[s:e].strip() and text[s:e]]

    def _meta_spans(self, dialogue: Dialogue, index: Any, parts: Any, items: dict[str, tuple[str, str]],
                    candidates: list[Candidate]) -> dict[str, list[Span]]:
        """``key path -> spans`` to replace in each scanned metadata string: what people confirmed,
        the corpus's originals and the safe parts of names (unsafe parts are candidates); their
        originals join ``items``."""
        out: dict[str, list[Span]] = {}
        for path, value in meta_items(dialogue.meta):
            if not isinstance(value, str) or self.fields.meta_policy(path) != "scan":
                continue
            spans = self._confirmed_in(dialogue, f"meta.{path}", value)
            if index is not None and len(index):
                spans += unspanned_hits(index, value, spans)
            for h in unspanned_hits(parts, value, spans) if parts is not None and len(parts) else ():
                part = Span(h.start, h.end, "NAME", source="fragment")
                if unsafe_part(value[h.start : h.end]):
                    candidates.append(Candidate(dialogue.id, -2, h.start, h.end, "NAME", "fragment",
                                                value[h.start : h.end], "fragments", field=f"meta.{path}"))
                else:
                    spans.append(part)
            if spans:
                out[path] = sorted(spans)
                collect(items, [(value, out[path])])
        return out

    def _envelope(self, result: DeidResult, items: Mapping[str, tuple[str, str]],
                  table: Mapping[str, tuple[str, str, str]], meta_spans: Mapping[str, list[Span]]) -> None:
        """Every field of the record around the texts, under :attr:`fields`: speaker labels, the
        id, the timestamps and the metadata (the anchor went with the texts)."""
        dialogue, release = result.original, result.release
        if dialogue.anchor:
            reps = tuple(r for r in result.replacements if r.index == -1)
            result.fields.append(FieldText("anchor", -1, dialogue.anchor, release.anchor, reps))
        speakers = self.fields.speaker_names(dialogue)
        offset = self._date_offset(dialogue, [t for lab, t in items.values() if lab in DATE_LABELS]) \
            if self.fields.ts == "shift" and any(m.ts for m in dialogue.messages) else 0
        messages = tuple(replace(m, speaker=self._speaker(m.speaker, speakers, table),
                                 ts=self._timestamp(m.ts, offset)) for m in release.messages)

        def fix(path: str, value: str) -> str:
            edits = [(s.start, s.end, s.label, True) for s in meta_spans.get(path, ())]
            text, _, reps = rewrite(value, -2, edits, table) if edits else (value, [], [])
            result.fields.append(FieldText(f"meta.{path}", -2, value, text, tuple(reps)))
            return text

        meta = released_meta(dialogue.meta, self.fields, fix) if dialogue.meta else dialogue.meta
        new_id = keyed_id(self.keyed, dialogue.id) if self.fields.id == "keyed" else dialogue.id
        result.release = replace(release, id=new_id, messages=messages, meta=meta)

    def _speaker(self, label: str, speakers: Mapping[str, str], table: Mapping[str, tuple[str, str, str]]) -> str:
        """A speaker label that names someone, with that person's surrogate ("Student Caleb" →
        "Student Ben"); a role label as it is."""
        name = speakers.get(label)
        if name is None:
            return label
        hit = table.get(normalize(name))
        sur = hit[1] if hit is not None else tag_for("NAME")
        return label.replace(name, sur) if name in label else sur

    def _timestamp(self, ts: str | None, offset: int) -> str | None:
        if ts is None or self.fields.ts == "keep":
            return ts
        if self.fields.ts == "drop":
            return None
        shifted = shift_timestamp(ts, offset)
        if shifted is None:
            self.fallbacks["ts_unread_dropped"] += 1
        return shifted

    # --- the self-audit's tables ---------------------------------------------------------

    def _sweep_index(self, items: dict[str, tuple[str, str]]) -> Any:
        """The originals to look for unspanned: the corpus's ("sweep_corpus": a word-problem
        "Monique" when a student elsewhere is Monique), this dialogue's ("propagate"), or none."""
        if self.sweep_corpus:
            return self.forbidden.index
        if self.propagate:
            index = OriginalIndex()
            for label, text in items.values():
                index.add(label, text)
            return index
        return None

    def _table(self, dialogue: Dialogue, items: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str, str]]:
        """``norm -> (label, replacement, how)``: surrogates, tags or the redaction mark."""
        if self.mode == "surrogate":
            scope = self._corpus_scope if self.scope_kind == "corpus" else Scope(seed=f"d:{dialogue.id}")
            return self._map(dialogue, scope, list(items.values()))
        table: dict[str, tuple[str, str, str]] = {}
        for norm, (label, _text) in items.items():
            rep = tag_for(label) if self.mode == "tag" else REDACTED
            table[norm] = (label, rep, self.mode)
        return table

    def _map(
        self, dialogue: Dialogue, scope: Scope, items: list[tuple[str, str]]
    ) -> dict[str, tuple[str, str, str]]:
        """``norm -> (label, surrogate, method)`` for every original of the dialogue."""
        out: dict[str, tuple[str, str, str]] = {}
        offset = self._date_offset(dialogue, [t for lab, t in items if lab in DATE_LABELS])
        todo: list[tuple[str, str]] = []
        for label, text in items:
            norm = normalize(text)
            hit = scope.values.get(norm) if label not in DATE_LABELS else None
            if hit is not None:
                out[norm] = hit
            else:
                todo.append((label, text))
        proposed: dict[tuple[str, str], str] = {}
        if self.proposer is not None and todo:
            try:
                proposed = self.proposer.propose(dialogue, todo, self._checker(scope))
            except Exception:  # noqa: BLE001 - any LLM failure falls back to the offline surrogates
                proposed = {}
        # multi-word names first so "Fred Luther" decides that "Luther" is a surname
        todo.sort(key=lambda it: (it[0] != "NAME", -len(it[1].split())))
        for label, text in todo:
            norm = normalize(text)
            value = None
            cand = proposed.get((label, text))
            if cand is not None and self._checker(scope)(label, text, cand) is None:
                value = (label, cand, "llm")
            else:
                if self.proposer is not None:
                    self.fallbacks["llm_to_offline"] += 1
                sur = self._offline(scope, label, text, offset)
                if sur is not None:
                    value = (label, sur, "offline")
                else:
                    self.fallbacks["offline_to_tag"] += 1
                    value = (label, tag_for(label), "tag")
            out[norm] = value
            if value[2] != "tag":
                scope.used_values.add(normalize(value[1]))
            if label not in DATE_LABELS:
                scope.values[norm] = value
        return out

    def _checker(self, scope: Scope) -> Callable[[str, str, str], str | None]:
        def check(label: str, original: str, surrogate: str) -> str | None:
            return rule_error(
                label, original, surrogate, forbidden=self.forbidden, used=scope.used_values
            )

        return check

    def _offline(self, scope: Scope, label: str, text: str, offset: int) -> str | None:
        gen = GENERATORS.get(label, generic_surrogate)
        check = self._checker(scope)
        for attempt in range(MAX_ATTEMPTS // 4):
            ctx = GenContext(self.keyed, scope, label, attempt, self.forbidden, offset)
            try:
                sur = gen(text, ctx)
            except (SurrogateFailure, ValueError, IndexError):
                ctx.rollback()
                return None
            if check(label, text, sur) is None:
                return sur
            ctx.rollback()
        return None

    def _date_offset(self, dialogue: Dialogue, dates: list[str]) -> int:
        """One offset per dialogue, chosen so every one of its dates moves at least two edits."""
        lo, hi = _DATE_OFFSETS
        first = None
        for k in range(MAX_ATTEMPTS):
            rng = self.keyed.rng("date-offset", dialogue.id, k)
            off = rng.randint(lo, hi) * rng.choice((-1, 1))
            first = first if first is not None else off
            ok = True
            for d in dates:
                new = shift_date(d, off)
                if new is not None and rule_error(
                    "DATE_OF_BIRTH", d, new, forbidden=self.forbidden
                ):
                    ok = False
                    break
            if ok:
                return off
        return first or lo


def build_deidentifier(
    config: Mapping[str, Any] | None = None, *, key: str | bytes, **extra: Any
) -> Deidentifier:
    """Build from a config dict: ``{"mode", "scope", "propagate"}`` (unknown keys are an error)."""
    config = dict(config or {})
    known = {"mode", "scope", "propagate", "sweep_corpus", "audit", "fields"}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(
            f"unknown surrogate config key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    if "fields" in config:
        config["fields"] = FieldPolicy.from_config(config["fields"])
    return Deidentifier(key=key, **config, **extra)
