import json

import pytest

from pipeline.corpus import CorpusError, speaker_role
from pipeline.formats import parse_upload
from pipeline.types import Dialogue, Message, Span, SpanError, resolve_overlaps


@pytest.mark.parametrize("raw,role", [("Tutor", "tutor"), ("T", "tutor"), ("teacher", "tutor"),
                                      ("Student", "student"), ("student_2", "student"), ("S", "student"),
                                      ("Parent", "other"), ("Mom", "other")])
def test_speaker_roles(raw, role):
    assert speaker_role(raw) == role


def test_span_validation():
    with pytest.raises(SpanError):
        Span(3, 3, "NAME")
    with pytest.raises(SpanError):
        Span(-1, 2, "NAME")
    with pytest.raises(SpanError, match="runs past the end"):
        Span(0, 5, "NAME").check("abc")
    assert Span(0, 3, "NAME").check("abc").end == 3


def test_offsets_are_code_points():
    text = "😀 Hi José"
    obj = {"id": "x", "messages": [{"speaker": "T", "text": text,
                                    "spans": [{"start": 5, "end": 9, "label": "NAME"}]}]}
    d = parse_upload(json.dumps(obj).encode())
    span = d[0].messages[0].spans[0]
    assert text[span.start:span.end] == "José"


def test_bom_and_blank_lines_are_tolerated():
    raw = b'\xef\xbb\xbf{"id": "x", "messages": [{"speaker": "T", "text": "hi"}]}\n\n'
    assert parse_upload(raw)[0].id == "x"


def test_csv_problems_point_at_rows():
    with pytest.raises(CorpusError) as info:
        parse_upload(b"dialogue_id,seq,speaker,text\nd1,0,T,hi\nd1,1,,yo\n", name="x.csv")
    assert info.value.problems[0].line == 3


def test_window_is_centred():
    d = Dialogue("d", tuple(Message(str(i), index=i) for i in range(5)))
    assert [m.index for m in d.window(0)] == [0, 1]
    assert [m.index for m in d.window(2)] == [1, 2, 3]
    assert [m.index for m in d.window(4, size=5)] == [2, 3, 4]


def test_resolve_overlaps_prefers_score_then_length():
    spans = [Span(0, 5, "NAME", 0.5), Span(3, 8, "NAME", 0.9), Span(10, 12, "AGE", 0.1)]
    assert resolve_overlaps(spans) == [Span(3, 8, "NAME"), Span(10, 12, "AGE")]
