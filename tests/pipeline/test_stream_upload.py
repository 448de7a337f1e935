""":func:`pipeline.formats.stream_upload` reads a JSONL upload as its batches are asked
for (never the whole file first), and stays all or nothing."""

import io
import json

import pytest

from pipeline.corpus import CorpusError
from pipeline.formats import parse_upload, stream_upload


def _raw(n: int) -> bytes:
    return b"".join(json.dumps({"id": f"d{i}", "messages": [{"speaker": "T", "text": "x" * 200}]}).encode() + b"\n"
                    for i in range(n))


def test_jsonl_is_read_as_its_batches_are_asked_for():
    raw = _raw(1000)  # about 250 kB: far more than a read buffer
    fh = io.BytesIO(raw)
    batches = stream_upload(fh, batch=10, name="c.jsonl")
    first = next(batches)
    assert [d.id for d in first] == [f"d{i}" for i in range(10)]
    assert fh.tell() < len(raw) // 10
    rest = list(batches)
    assert {len(b) for b in rest} == {10} and len(rest) == 99


def test_batches_hold_what_a_whole_parse_gives():
    raw = _raw(25)
    streamed = [d for b in stream_upload(io.BytesIO(raw), batch=4, name="c.jsonl") for d in b]
    assert streamed == parse_upload(raw, name="c.jsonl")


def test_no_batch_comes_after_a_problem_and_the_end_names_it():
    raw = _raw(5) + b"{oops\n" + _raw(30)[len(_raw(5)):]
    batches = stream_upload(io.BytesIO(raw), batch=2, name="c.jsonl")
    got = []
    with pytest.raises(CorpusError) as info:
        got.extend(batches)
    assert [len(b) for b in got] == [2, 2]  # d0..d3; d4 was pending when line 6 failed
    assert [p.line for p in info.value.problems] == [6]


def test_other_formats_are_parsed_whole_then_cut_into_batches():
    raw = b"dialogue_id,seq,speaker,text\n" + b"".join(f"d{i},0,T,hi\n".encode() for i in range(5))
    assert [len(b) for b in stream_upload(io.BytesIO(raw), batch=2, name="c.csv")] == [2, 2, 1]
