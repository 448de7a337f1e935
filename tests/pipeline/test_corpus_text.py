"""One canonical message text at import: CRLF and CR become LF, control characters are refused.

Browsers normalise CRLF and drop NUL, so a stored text that keeps them has offsets the annotator's
selection cannot reproduce.
"""

import csv
import io
import json

import pytest

from pipeline.corpus import CorpusError, ParseReport
from pipeline.formats import parse_upload
from pipeline.formats.native import iter_jsonl_dialogues

TEXT = "Hello\r\nmy name is Fred Smith\r\nand I live in Paris"


def _jsonl(*messages, did="d1") -> bytes:
    return (json.dumps({"id": did, "messages": list(messages)}) + "\n").encode()


def _span(text: str, word: str, label: str = "NAME", **extra) -> dict:
    start = text.index(word)
    return {"start": start, "end": start + len(word), "label": label, **extra}


def test_crlf_becomes_lf_and_spans_are_shifted():
    report = ParseReport()
    raw = _jsonl({"speaker": "S", "text": TEXT,
                  "spans": [_span(TEXT, "Fred Smith"), _span(TEXT, "Paris", "LOCATION")]})
    [d] = parse_upload(raw, report=report)
    m = d.messages[0]
    assert m.text == "Hello\nmy name is Fred Smith\nand I live in Paris"
    assert [m.text[s.start:s.end] for s in m.spans] == ["Fred Smith", "Paris"]
    assert report.normalised == {"d1": 1}


def test_lone_cr_becomes_lf_without_shifting():
    text = "one\rtwo Fred\r\n\rthree"
    raw = _jsonl({"speaker": "S", "text": text, "spans": [_span(text, "Fred")]},
                 {"speaker": "T", "text": "no line breaks"})
    report = ParseReport()
    [d] = parse_upload(raw, report=report)
    m = d.messages[0]
    assert m.text == "one\ntwo Fred\n\nthree"
    assert m.text[m.spans[0].start:m.spans[0].end] == "Fred"
    assert report.normalised == {"d1": 1}
    assert d.messages[1].text == "no line breaks"


def test_span_ending_inside_a_crlf_is_kept_on_the_line_break():
    text = "Fred\r\nSmith"
    [d] = parse_upload(_jsonl({"speaker": "S", "text": text, "spans": [{"start": 0, "end": 5, "label": "NAME"}]}))
    m = d.messages[0]
    assert (m.spans[0].start, m.spans[0].end) == (0, 4)
    with pytest.raises(CorpusError, match="line 1: message 0 span 0"):  # a span of the CR alone is empty
        parse_upload(_jsonl({"speaker": "S", "text": text, "spans": [{"start": 4, "end": 5, "label": "NAME"}]}))


def test_csv_cell_with_crlf_is_normalised():
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(["dialogue_id", "seq", "speaker", "text"])
    w.writerow(["d1", "0", "S", TEXT])
    w.writerow(["d1", "1", "T", "plain"])
    report = ParseReport()
    [d] = parse_upload(buf.getvalue().encode(), name="c.csv", report=report)
    assert d.messages[0].text == TEXT.replace("\r\n", "\n")
    assert report.normalised == {"d1": 1}


@pytest.mark.parametrize("bad", ["\u0000", "\u0007", "\u001b", "\u007f"])
def test_control_characters_in_text_are_refused_with_their_line(bad):
    raw = _jsonl({"speaker": "S", "text": "fine"}, did="ok") + _jsonl({"speaker": "S", "text": f"Fred{bad}Smith"})
    with pytest.raises(CorpusError) as info:
        parse_upload(raw)
    [problem] = info.value.problems
    assert problem.line == 2
    assert f"U+{ord(bad):04X}" in problem.message and "message 0" in problem.message


def test_tab_and_newline_are_kept():
    [d] = parse_upload(_jsonl({"speaker": "S", "text": "a\tb\nc"}))
    assert d.messages[0].text == "a\tb\nc"


@pytest.mark.parametrize("field,value", [("id", "d\u00001"), ("anchor", "x\u0000"), ("speaker", "S\u0000"),
                                         ("ts", "00:\u000001"), ("meta", {"k": "v\u0000"}), ("meta", {"k\u0000": 1})])
def test_nul_anywhere_is_refused(field, value):
    obj = {"id": "d1", "messages": [{"speaker": "S", "text": "hi"}]}
    if field in ("speaker", "ts"):
        obj["messages"][0][field] = value
    else:
        obj[field] = value
    with pytest.raises(CorpusError, match="line 1: .*U\\+0000"):
        parse_upload((json.dumps(obj) + "\n").encode())


def test_nul_in_a_csv_cell_is_refused_on_its_row():
    raw = b"dialogue_id,seq,speaker,text\nd1,0,T,hi\nd1,1,S,Fred\x00Smith\n"
    with pytest.raises(CorpusError) as info:
        parse_upload(raw, name="c.csv")
    assert [p.line for p in info.value.problems] == [3]


@pytest.mark.parametrize("score", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_scores_are_refused(score):
    raw = ('{"id": "d1", "messages": [{"speaker": "S", "text": "Fred", "spans": '
           f'[{{"start": 0, "end": 4, "label": "NAME", "score": {score}}}]}}]}}\n').encode()
    with pytest.raises(CorpusError, match="line 1: message 0 span 0: 'score' must be a finite number"):
        parse_upload(raw)


def test_dialogue_id_longer_than_the_limit_is_refused():
    raw = _jsonl({"speaker": "S", "text": "hi"}, did="ok") + _jsonl({"speaker": "S", "text": "hi"}, did="x" * 201)
    assert len(parse_upload(raw[: raw.index(b"\n") + 1], max_id_length=200)) == 1
    with pytest.raises(CorpusError) as info:
        parse_upload(raw, max_id_length=200)
    [problem] = info.value.problems
    assert problem.line == 2 and "longer than 200" in problem.message


def test_streaming_reader_gives_the_same_canonical_text():
    [d] = iter_jsonl_dialogues(io.StringIO(_jsonl({"speaker": "S", "text": TEXT}).decode()))
    assert d.messages[0].text == TEXT.replace("\r\n", "\n")
