"""Label Studio interoperability checked by Label Studio's own code (label-studio-sdk), not by our
reading of its docs: its converter reads the tasks we write, its labelling interface accepts our
annotations and predictions against our config, and regions it creates come back through our reader."""

from __future__ import annotations

import io
import json

import pytest

from pipeline.formats.labelstudio import labeling_config, parse_labelstudio, write_labelstudio
from pipeline.synthetic import generate_corpus
from pipeline.types import Dialogue, Message, Span
from tests.conftest import need

try:
    import label_studio_sdk  # noqa: F401
except ImportError:  # pragma: no cover - bin/setup installs it
    label_studio_sdk = None

LABELS = ["NAME", "SCHOOL", "EMAIL", "PHONE"]


@pytest.fixture(autouse=True)
def _sdk():
    need(label_studio_sdk is not None, "needs label-studio-sdk (bin/setup installs it with --no-deps)")


def _tricky() -> Dialogue:
    """Code points that are not UTF-16 units: emoji with a skin tone, ZWJ family, combining marks."""
    text = "Hi Maria 👋🏽 and 👨‍👩‍👧 Zoe\u0301 — mail zoe@example.org, Lincoln High"
    spans = [("Maria", "NAME"), ("Zoe\u0301", "NAME"), ("zoe@example.org", "EMAIL"), ("Lincoln High", "SCHOOL")]
    out = tuple(Span(text.index(p), text.index(p) + len(p), lab) for p, lab in spans)
    return Dialogue("tricky", (Message(text, "Tutor", "tutor", 0, None, out),))


def _corpus() -> list[Dialogue]:
    return [_tricky(), *generate_corpus(3, seed=7, id_prefix="ls")]


def _ours(dialogues: list[Dialogue]) -> list[list[tuple[int, int, str, str]]]:
    return [[(s.start, s.end, s.label, m.text[s.start:s.end]) for s in sorted(m.spans)]
            for d in dialogues for m in d.messages]


def _written(dialogues, **kwargs) -> str:
    fh = io.StringIO()
    write_labelstudio(dialogues, fh, **kwargs)
    return fh.getvalue()


def test_label_studio_converter_reads_our_tasks_with_the_same_spans(tmp_path):
    from label_studio_sdk.converter import Converter

    corpus = _corpus()
    labels = sorted({s.label for d in corpus for m in d.messages for s in m.spans})
    # Label Studio numbers tasks when it imports them; its export (what the converter reads) has ids.
    tasks = [{"id": n, **task} for n, task in enumerate(json.loads(_written(corpus)), start=1)]
    (tmp_path / "tasks.json").write_text(json.dumps(tasks, ensure_ascii=False), encoding="utf-8")
    converter = Converter(labeling_config(labels), str(tmp_path), download_resources=False)
    converter.convert_to_json_min(str(tmp_path / "tasks.json"), str(tmp_path / "min"), is_dir=False)
    rows = json.loads((tmp_path / "min" / "result.json").read_text(encoding="utf-8"))
    theirs = [sorted((r["start"], r["end"], r["labels"][0], r["text"]) for r in row.get("label", []))
              for row in rows]
    assert theirs == _ours(corpus)
    assert any(theirs)  # the comparison is not vacuous

    converter.convert_to_conll2003(str(tmp_path / "tasks.json"), str(tmp_path / "conll"), is_dir=False)
    conll = (tmp_path / "conll" / "result.conll").read_text(encoding="utf-8")
    assert "Maria -X- _ B-NAME\n" in conll and "Zoe\u0301 -X- _ B-NAME\n" in conll
    assert "Lincoln -X- _ B-SCHOOL\nHigh -X- _ I-SCHOOL\n" in conll


@pytest.mark.parametrize("spans_as", ["annotations", "predictions"])
def test_label_studio_interface_accepts_our_results_against_our_config(spans_as):
    from label_studio_sdk.label_interface import LabelInterface

    interface = LabelInterface(labeling_config(LABELS))
    tasks = json.loads(_written([_tricky()], spans_as=spans_as, model_version="tagger@1"))
    (entry,) = tasks[0][spans_as]
    check = interface.validate_annotation if spans_as == "annotations" else interface.validate_prediction
    assert check(entry) is True
    wrong = json.loads(json.dumps(entry))
    wrong["result"][0]["value"]["labels"] = ["NOT_A_LABEL"]
    assert check(wrong) is False  # the check can fail: it really reads our labels


def test_regions_made_by_label_studio_come_back_through_our_reader():
    from label_studio_sdk.label_interface import LabelInterface

    text = _tricky().messages[0].text
    interface = LabelInterface(labeling_config(LABELS))
    regions = interface.create_regions({"label": [
        {"start": text.index("Maria"), "end": text.index("Maria") + 5, "labels": ["NAME"], "text": "Maria"},
        {"start": text.index("Lincoln"), "end": len(text), "labels": ["SCHOOL"], "text": "Lincoln High"},
    ]})
    # Label Studio writes regions without "value.text"; our reader takes the text from the offsets.
    task = {"id": 41, "data": {"text": text}, "annotations": [{"result": [json.loads(r.to_json()) for r in regions]}]}
    [dialogue] = parse_labelstudio(json.dumps([task]), labels=set(LABELS))
    [message] = dialogue.messages
    assert dialogue.id and message.text == text
    assert [(message.text[s.start:s.end], s.label) for s in sorted(message.spans)] == [
        ("Maria", "NAME"), ("Lincoln High", "SCHOOL")]
