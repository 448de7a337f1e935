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


def _convert(tasks_path, labels, fmt: str, out):
    """Label Studio's converter run on our file, through its public entry (``Converter.convert``)."""
    from label_studio_sdk.converter import Converter
    from label_studio_sdk.converter.converter import Format

    converter = Converter(labeling_config(labels), str(tasks_path.parent), download_resources=False)
    converter.convert(str(tasks_path), str(out), Format[fmt], is_dir=False)
    return out


def _exported(tmp_path, corpus) -> tuple:
    """Our file exactly as written, nothing added (it needed ids Label Studio's export has:
    ``KeyError: 'id'`` before)."""
    path = tmp_path / "tasks.json"
    path.write_text(_written(corpus), encoding="utf-8")
    return path, sorted({s.label for d in corpus for m in d.messages for s in m.spans})


def test_our_tasks_and_their_annotations_have_ids_through_the_file():
    tasks = json.loads(_written(_corpus()))
    assert [t["id"] for t in tasks] == list(range(1, len(tasks) + 1))
    assert [t["annotations"][0]["id"] for t in tasks] == [t["id"] for t in tasks]
    run = json.loads(_written(_corpus(), spans_as="predictions", model_version="tagger@1"))
    assert [t["predictions"][0]["id"] for t in run] == [t["id"] for t in run]


def test_label_studio_converter_reads_our_export_to_json_min_with_the_same_spans(tmp_path):
    corpus = _corpus()
    path, labels = _exported(tmp_path, corpus)
    out = _convert(path, labels, "JSON_MIN", tmp_path / "min")
    rows = json.loads((out / "result.json").read_text(encoding="utf-8"))
    theirs = [sorted((r["start"], r["end"], r["labels"][0], r["text"]) for r in row.get("label", []))
              for row in rows]
    assert theirs == _ours(corpus)
    assert any(theirs)  # the comparison is not vacuous
    assert [(r["id"], r["annotation_id"], r["dialogue_id"], r["index"]) for r in rows] == [
        (n, n, d.id, m.index) for n, (d, m) in enumerate(((d, m) for d in corpus for m in d.messages), start=1)]


def test_label_studio_converter_reads_our_export_to_conll2003(tmp_path):
    path, labels = _exported(tmp_path, _corpus())
    conll = (_convert(path, labels, "CONLL2003", tmp_path / "conll") / "result.conll").read_text(encoding="utf-8")
    assert conll.startswith("-DOCSTART- -X- O\n")
    assert "Maria -X- _ B-NAME\n" in conll and "Zoe\u0301 -X- _ B-NAME\n" in conll
    assert "Lincoln -X- _ B-SCHOOL\nHigh -X- _ I-SCHOOL\n" in conll
    assert conll.count("\n\n") >= sum(len(d.messages) for d in _corpus()) - 1  # a sentence per task


def test_label_studio_converter_reads_our_export_to_csv(tmp_path):
    import csv

    corpus = _corpus()
    path, labels = _exported(tmp_path, corpus)
    with open(_convert(path, labels, "CSV", tmp_path / "csv") / "result.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    messages = [m for d in corpus for m in d.messages]
    assert [r["text"] for r in rows] == [m.text for m in messages]
    assert [r["id"] for r in rows] == [str(n) for n in range(1, len(messages) + 1)]
    theirs = [sorted((x["start"], x["end"], x["labels"][0], x["text"]) for x in json.loads(r["label"]))
              if r["label"] else [] for r in rows]
    assert theirs == _ours(corpus)


def test_label_studio_converter_reads_the_gold_bundle_file(tmp_path):
    """The file a gold export writes (``labelstudio/tasks.json``, tasks from many dialogues, a split
    each): its ids run on across dialogues, and the converter reads it."""
    from types import SimpleNamespace

    from pipeline.formats.labelstudio import LabelStudioBundleWriter

    corpus = _corpus()
    labels = sorted({s.label for d in corpus for m in d.messages for s in m.spans})
    writer = LabelStudioBundleWriter(SimpleNamespace(root=tmp_path, labels=labels))
    for n, d in enumerate(corpus):
        writer.write(d, "test" if n % 2 else "train")
    writer.close()
    path = tmp_path / "labelstudio" / "tasks.json"
    tasks = json.loads(path.read_text(encoding="utf-8"))
    assert [t["id"] for t in tasks] == list(range(1, sum(len(d.messages) for d in corpus) + 1))
    rows = json.loads((_convert(path, labels, "JSON_MIN", tmp_path / "min") / "result.json").read_text("utf-8"))
    assert [r["id"] for r in rows] == [t["id"] for t in tasks] and {r["split"] for r in rows} == {"train", "test"}
    assert [sorted((x["start"], x["end"], x["labels"][0], x["text"]) for x in r.get("label", [])) for r in rows] == \
        _ours(corpus)


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
