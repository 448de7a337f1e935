"""Label Studio, doccano and spaCy DocBin: round trips (through spaCy itself for DocBin), files in
each tool's own documented shape, odd Unicode and CRLF, and line/task-numbered errors."""

from __future__ import annotations

import io
import json

import pytest

from pipeline.corpus import CorpusError, ParseReport
from pipeline.formats import FormatError, parse_upload, sniff
from pipeline.formats.doccano import parse_doccano, write_doccano
from pipeline.formats.labelstudio import labeling_config, parse_labelstudio, write_labelstudio
from pipeline.formats.spacy_docbin import parse_docbin, to_docbin
from pipeline.types import Dialogue, Message, Span

LABELS = {"NAME", "SCHOOL", "EMAIL"}


def span(text: str, piece: str, label: str) -> Span:
    start = text.index(piece)
    return Span(start, start + len(piece), label)


def corpus() -> list[Dialogue]:
    t0 = "Hi Maria 👋🏽, I'm Mr. Chen from Lincoln High."
    t1 = "né José — write to jose@example.org ✉️"
    t2 = "What is 3/4 of 12?"
    t3 = "🙂 Zoë"
    return [
        Dialogue("d1", (
            Message(t0, "Tutor", "tutor", 0, "00:01",
                    (span(t0, "Maria", "NAME"), span(t0, "Chen", "NAME"), span(t0, "Lincoln High", "SCHOOL"))),
            Message(t1, "Student", "student", 1, None, (span(t1, "José", "NAME"), span(t1, "jose@example.org", "EMAIL"))),
            Message(t2, "Tutor", "tutor", 2),
        ), anchor="Maria has 12 apples."),
        Dialogue("d2", (Message(t3, "Student", "student", 0, None, (span(t3, "Zoë", "NAME"),)),)),
    ]


def same(a: list[Dialogue], b: list[Dialogue]) -> None:
    assert [d.id for d in a] == [d.id for d in b]
    for x, y in zip(a, b, strict=True):
        assert x.anchor == y.anchor
        assert [(m.text, m.speaker, m.role, m.index, m.ts, sorted(m.spans)) for m in x.messages] == \
               [(m.text, m.speaker, m.role, m.index, m.ts, sorted(m.spans)) for m in y.messages]


# --- Label Studio --------------------------------------------------------------------------------


@pytest.mark.parametrize("spans_as", ["annotations", "predictions"])
def test_labelstudio_round_trip(spans_as):
    fh = io.StringIO()
    assert write_labelstudio(corpus(), fh, spans_as=spans_as) == 4
    tasks = json.loads(fh.getvalue())
    first = tasks[0][spans_as][0]["result"][0]
    assert first["type"] == "labels" and first["value"]["text"] == "Chen" or first["value"]["text"] == "Maria"
    assert tasks[0]["data"]["anchor"] == "Maria has 12 apples."
    same(parse_labelstudio(fh.getvalue(), labels=LABELS), corpus())
    same(parse_upload(fh.getvalue().encode(), name="tasks.json", labels=LABELS), corpus())


def test_labelstudio_reads_its_documented_export_shape():
    """A Label Studio export (fields as in its task-format docs), emoji before the span, no ids of ours."""
    text = "💩This is Maria."
    exported = [{
        "id": 7, "project": 83, "data": {"text": text},
        "annotations": [
            {"id": 1, "was_cancelled": True, "result": []},
            {"id": 2, "was_cancelled": False, "ground_truth": False, "lead_time": 4.2, "completed_by": 10,
             "result": [
                 {"id": "Dx_aB91ISN", "from_name": "label", "to_name": "text", "type": "labels", "origin": "manual",
                  "value": {"start": 9, "end": 14, "text": "Maria", "labels": ["NAME"]}},
                 {"id": "c1", "from_name": "ok", "to_name": "text", "type": "choices", "value": {"choices": ["yes"]}},
             ]},
        ],
        "predictions": [{"model_version": "m1", "score": 0.5, "result": []}],
    }]
    [d] = parse_upload(json.dumps(exported, indent=2).encode(), name="export.json", labels=LABELS)
    assert d.id == "7" and d.messages[0].speaker == "unknown"
    assert [(s.start, s.end, s.label) for s in d.messages[0].spans] == [(9, 14, "NAME")]
    assert text[9:14] == "Maria"


def test_labelstudio_takes_a_prediction_when_no_annotation_and_spans_from_choice():
    task = {"data": {"text": "Ana here"}, "predictions": [{"score": 0.7, "result": [
        {"from_name": "label", "to_name": "text", "type": "labels",
         "value": {"start": 0, "end": 3, "labels": ["NAME"]}}]}]}
    [d] = parse_labelstudio(json.dumps([task]))
    assert d.messages[0].spans[0].score == 0.7
    [d] = parse_labelstudio(json.dumps([task]), spans_from="annotations")
    assert d.messages[0].spans == ()


def test_labelstudio_errors_name_task_and_line_and_utf16_offsets_are_caught():
    tasks = [
        {"data": {"text": "ok Ana"}},
        {"data": {"txt": "no text"}},
        {"data": {"text": "😀 Maria!"}, "annotations": [{"result": [  # UTF-16 offsets: 3..8
            {"type": "labels", "value": {"start": 3, "end": 8, "text": "Maria", "labels": ["NAME"]}}]}]},
        {"data": {"text": "Bob"}, "annotations": [{"result": [
            {"type": "labels", "value": {"start": 0, "end": 3, "labels": ["PLANET"]}}]}]},
    ]
    raw = "[\n" + ",\n".join(json.dumps(t) for t in tasks) + "\n]"
    with pytest.raises(CorpusError) as exc:
        parse_labelstudio(raw, labels=LABELS)
    lines = [(p.line, p.message.split(":")[0].split(" result")[0]) for p in exc.value.problems]
    assert lines == [(3, "task 2"), (4, "task 3"), (5, "task 4")]
    assert "UTF-16" in exc.value.problems[1].message and "unknown label 'PLANET'" in exc.value.problems[2].message
    with pytest.raises(CorpusError) as exc:
        parse_labelstudio('[{"data": {"text": "a"}},\n  {"data": }]')
    assert exc.value.problems[0].line == 2 and "malformed JSON" in exc.value.problems[0].message


def test_labelstudio_config_names_every_label():
    xml = labeling_config(["NAME", "A&B"])
    assert '<Label value="NAME"/>' in xml and 'value="A&amp;B"' in xml and 'value="$text"' in xml


# --- doccano ---------------------------------------------------------------------------------------


def test_doccano_round_trip_and_its_own_shapes():
    fh = io.StringIO()
    assert write_doccano(corpus(), fh) == 4
    first = json.loads(fh.getvalue().splitlines()[0])
    assert first["label"][0] == [3, 8, "NAME"]
    same(parse_doccano(fh.getvalue(), labels=LABELS), corpus())
    same(parse_upload(fh.getvalue().encode(), name="all.jsonl", labels=LABELS), corpus())
    exported = ('{"id": 12, "text": "Ana 🙂 and Bo", "label": [[0, 3, "NAME"], [10, 12, "NAME"]], "Comments": []}\n'
                '{"id": 13, "text": "Chen", "entities": [{"id": 1, "label": "NAME", "start_offset": 0, "end_offset": 4}],'
                ' "relations": []}\n')
    assert sniff("admin.jsonl", exported.encode()) == "doccano"
    a, b = parse_upload(exported.encode(), name="admin.jsonl", labels=LABELS)
    assert (a.id, b.id) == ("12", "13")
    assert [a.messages[0].text[s.start:s.end] for s in a.messages[0].spans] == ["Ana", "Bo"]
    assert b.messages[0].spans == (Span(0, 4, "NAME"),)


def test_doccano_errors_name_their_lines():
    raw = ('{"text": "Ana", "label": [[0, 3, "NAME"]]}\n'
           '{"text": "Bo", "label": [[0, 9, "NAME"]]}\n'
           '\n'
           '{"text": "x", "label": [[0, 1]]}\n'
           '{"text": \n'
           '{"text": "Zed", "label": [[0, 3, "NAME"]], "dialogue_id": "z", "index": 0}\n'
           '{"text": "Zed", "label": [], "dialogue_id": "z", "index": 0}\n')
    with pytest.raises(CorpusError) as exc:
        parse_doccano(raw, labels=LABELS)
    assert [p.line for p in exc.value.problems] == [2, 4, 5, 7]
    assert "runs past the end" in exc.value.problems[0].message
    assert "index 0 twice (first on line 6)" in exc.value.problems[3].message


# --- CRLF and emoji in each reader -------------------------------------------------------------------


def test_crlf_is_normalised_like_a_jsonl_import_in_every_format():
    text = "Hi\r\nMaria 🙂\r\nbye"  # Maria is 4..9 as written, 3..8 once CRLF becomes LF
    ls = json.dumps([{"data": {"text": text}, "annotations": [{"result": [
        {"type": "labels", "value": {"start": 4, "end": 9, "text": "Maria", "labels": ["NAME"]}}]}]}])
    dc = json.dumps({"text": text, "label": [[4, 9, "NAME"]]})
    for raw, name in ((ls, "t.json"), (dc, "t.jsonl")):
        report = ParseReport()
        [d] = parse_upload(raw.encode(), name=name, labels=LABELS, report=report)
        m = d.messages[0]
        assert m.text == "Hi\nMaria 🙂\nbye" and m.text[m.spans[0].start:m.spans[0].end] == "Maria"
        assert report.normalised == {d.id: 1}


# --- spaCy DocBin ------------------------------------------------------------------------------------


def test_docbin_round_trips_through_spacy():
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    data, left_out = to_docbin(corpus())
    assert left_out == []
    docs = list(DocBin().from_bytes(data).get_docs(spacy.blank("en").vocab))
    want = [[(m.text[s.start:s.end], s.start, s.end, s.label) for s in sorted(m.spans)]
            for d in corpus() for m in d.messages]
    assert [[(e.text, e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in docs] == want
    same(parse_docbin(data, labels=LABELS), corpus())
    same(parse_upload(data, name="gold.spacy", labels=LABELS), corpus())


def test_docbin_from_disk_and_a_foreign_doc(tmp_path):
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    doc = nlp.make_doc("Call Priya at Lincoln High\r\nnow")
    doc.ents = [doc.char_span(5, 10, "NAME"), doc.char_span(14, 26, "SCHOOL")]
    DocBin(docs=[doc]).to_disk(tmp_path / "train.spacy")
    [d] = parse_upload((tmp_path / "train.spacy").read_bytes(), name="train.spacy", labels=LABELS)
    assert d.id.startswith("train-") and d.messages[0].text == "Call Priya at Lincoln High\nnow"
    data, _ = to_docbin([d])
    (tmp_path / "back.spacy").write_bytes(data)
    [back] = list(DocBin().from_disk(tmp_path / "back.spacy").get_docs(nlp.vocab))
    assert [(e.text, e.label_) for e in back.ents] == [("Priya", "NAME"), ("Lincoln High", "SCHOOL")]


def test_docbin_reports_spans_off_token_boundaries_and_overlaps():
    pytest.importorskip("spacy")
    text = "Mariana and Tom"
    d = Dialogue("x", (Message(text, "T", "tutor", 0, None, (Span(0, 5, "NAME"), Span(12, 15, "NAME"),
                                                               Span(12, 15, "SCHOOL"))),))
    with pytest.raises(FormatError) as exc:
        to_docbin([d])
    assert "2 span(s)" in str(exc.value) and "'Maria' does not align" in str(exc.value)
    data, left_out = to_docbin([d], strict=False)
    assert [(u.span.label, u.text) for u in left_out] == [("NAME", "Maria"), ("SCHOOL", "Tom")]
    assert "overlaps NAME 12..15" in left_out[1].reason
    [back] = parse_docbin(data)
    assert back.messages[0].spans == (Span(12, 15, "NAME"),)


def test_docbin_garbage_is_one_clear_problem():
    pytest.importorskip("spacy")
    with pytest.raises(CorpusError) as exc:
        parse_upload(b"not a docbin", name="x.spacy")
    assert "not a spaCy DocBin" in str(exc.value)


def test_sniff_keeps_jsonl_and_csv():
    assert sniff("c.jsonl", b'{"id": "d1", "messages": [{"text": "a"}]}') == "jsonl"
    assert sniff("c.csv", b"dialogue_id,seq") == "csv"
    assert sniff("c.json", b'[{"data": {"text": "a"}}]') == "labelstudio"
    assert sniff("c.json", b'{"data": {"text": "a"}}') == "labelstudio"
    assert sniff("c.spacy", b"\x00") == "spacy"


# --- gold bundle writers ---------------------------------------------------------------------------


def test_gold_bundle_writes_the_foreign_formats_and_lists_unaligned_spans(tmp_path):
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    from pipeline.exports import write_gold_bundle
    from pipeline.formats.bundle import BundleSpec

    text = "Mariana and Tom 🙂"
    odd = Dialogue("odd", (Message(text, "T", "tutor", 0, None, (Span(0, 5, "NAME"), Span(12, 15, "NAME"))),))
    spec = BundleSpec(root=tmp_path, name="P", version=1, labels=tuple(sorted(LABELS)))
    counts = write_gold_bundle(iter([*corpus(), odd]), spec, test_fraction=0.0,
                               writers=("labelstudio", "doccano", "spacy"))
    assert counts.files == ["labelstudio/tasks.json", "labelstudio/config.xml", "doccano/gold.jsonl",
                            "spacy/train.spacy", "spacy/test.spacy", "spacy/unaligned.jsonl"]
    same(parse_labelstudio((tmp_path / "labelstudio" / "tasks.json").read_text(encoding="utf-8")), [*corpus(), odd])
    same(parse_doccano((tmp_path / "doccano" / "gold.jsonl").read_text(encoding="utf-8")), [*corpus(), odd])
    docs = list(DocBin().from_disk(tmp_path / "spacy" / "train.spacy").get_docs(spacy.blank("en").vocab))
    assert len(docs) == 5 and [(e.text, e.label_) for e in docs[-1].ents] == [("Tom", "NAME")]
    [u] = [json.loads(line) for line in (tmp_path / "spacy" / "unaligned.jsonl").read_text().splitlines()]
    assert (u["dialogue_id"], u["text"], u["reason"]) == ("odd", "Maria", "does not align to spaCy tokens")
    assert '<Label value="EMAIL"/>' in (tmp_path / "labelstudio" / "config.xml").read_text()


def test_every_catalog_example_is_sniffed_as_its_format_and_read():
    from pipeline.formats import CATALOG, FORMATS

    names = {"jsonl": "c.jsonl", "csv": "c.csv", "labelstudio": "tasks.json", "doccano": "admin.jsonl"}
    for fmt in FORMATS:
        entry = CATALOG[fmt]
        assert entry.read and entry.sniff, fmt
        if entry.example is None:  # binary (spaCy): read in the DocBin tests above
            continue
        assert sniff(names[fmt], entry.example) == fmt
        assert sniff("", entry.example) == fmt
        [d] = parse_upload(entry.example, name=names[fmt], labels=LABELS)
        assert d.messages[0].text == "Hi Ana!"
    assert {n for n, f in CATALOG.items() if f.write} == {"gold", "conll", "hf", "labelstudio", "doccano", "spacy"}


def test_the_writer_only_examples_are_what_the_writers_write():
    from pipeline.formats import CATALOG
    from pipeline.formats.conll import conll_block
    from pipeline.formats.gold import gold_record
    from pipeline.formats.hf import hf_row
    from pipeline.tags import LabelMap

    span = Span(3, 6, "NAME")
    assert conll_block("d1", 0, "Hi Ana!", [span], "bio").encode() == CATALOG["conll"].example
    assert hf_row("d1", 0, "Hi Ana!", [span], LabelMap("bio", ("NAME",)), speaker="tutor", role="tutor") == json.loads(
        CATALOG["hf"].example)
    gold = {"decision": "unanimous", "decided_by": None, "spans": [
        {"start": 3, "end": 6, "label": "NAME", "provenance": "unanimous", "annotators": ["ann1", "ann2"],
         "model_matched": True}],
        "notes": [{"annotator": "ann2", "text": "Ana: a pupil or a name in a word problem?", "uncertain": False}]}
    d = Dialogue("d1", (Message("Hi Ana!", "tutor", "tutor", 0, None, (span,), meta={"gold": gold}),))
    assert gold_record(d, d.messages[0], "train") == json.loads(CATALOG["gold"].example)
