"""Loading Presidio says nothing a user must act on: its registry's dozen
"Recognizer not added to registry" warnings (recognizers of languages an English engine does not
load) are silenced on its own logger while the engine is built, and only then."""

from __future__ import annotations

import logging

import pytest

from pipeline.detectors.presidio.detector import SPACY_MODEL
from pipeline.detectors.presidio.engine import PRESIDIO_LOGGER, load_engine


def test_building_the_engine_logs_no_recognizer_not_added_lines(caplog):
    pytest.importorskip("presidio_analyzer")
    logger, root = logging.getLogger(PRESIDIO_LOGGER), logging.getLogger().level
    caplog.set_level(logging.DEBUG, logger=PRESIDIO_LOGGER)  # only the engine's own quieting can hide them
    engine = load_engine(SPACY_MODEL, ("NotARecognizerOfThisTest",), True)  # a fresh cache key: built now
    assert engine.registry.recognizers
    assert not [r for r in caplog.records if "Recognizer not added" in r.getMessage()]
    assert logger.level == logging.DEBUG  # put back: Presidio's later warnings still show
    logger.warning("a later Presidio warning")
    assert "a later Presidio warning" in caplog.text
    assert logging.getLogger().level == root  # not silenced globally
