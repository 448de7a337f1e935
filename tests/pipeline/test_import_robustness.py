"""Deep nesting, lone surrogates and C1/bidi/line-separator characters in an
import end in a numbered CorpusError, never a traceback or a character the exports carry as a token."""

from __future__ import annotations

import json

import pytest

from pipeline.corpus import CorpusError
from pipeline.formats import parse_upload


def _one_line(obj) -> bytes:
    return (json.dumps(obj) + "\n").encode()


def _problems(raw: bytes, **kwargs) -> str:
    with pytest.raises(CorpusError) as err:
        parse_upload(raw, **kwargs)
    return str(err.value)


# ---------------------------------------------------------------- item 8: nesting, surrogates, controls


def test_deeply_nested_jsonl_is_a_numbered_problem():
    deep = "[" * 3000 + "]" * 3000
    raw = _one_line({"id": "a", "messages": [{"speaker": "t", "text": "hi"}]}) + \
        ('{"id": "b", "meta": {"x": ' + deep + '}, "messages": [{"speaker": "t", "text": "hi"}]}\n').encode()
    msg = _problems(raw, name="deep.jsonl")
    assert "line 2: nested deeper than" in msg


def test_nesting_just_under_the_recursion_limit_is_refused_too():
    deep = "[" * 900 + "]" * 900
    raw = ('{"id": "b", "meta": {"x": ' + deep + '}, "messages": [{"speaker": "t", "text": "hi"}]}\n').encode()
    assert "line 1: nested deeper than" in _problems(raw, name="deep.jsonl")


@pytest.mark.parametrize("where", ["text", "speaker", "meta", "id"])
def test_a_lone_surrogate_is_a_numbered_problem(where):
    obj = {"id": "a", "messages": [{"speaker": "t", "text": "hi"}]}
    if where == "meta":
        obj["meta"] = {"note": "x\ud800"}
    elif where == "id":
        obj["id"] = "a\ud800"
    else:
        obj["messages"][0][where] = "x\ud800"
    raw = json.dumps(obj).encode()  # ensure_ascii: the surrogate is written as the escape \ud800
    assert b"\\ud800" in raw
    assert "line 1" in _problems(raw, name="s.jsonl")
    assert "U+D800" in _problems(raw, name="s.jsonl")


@pytest.mark.parametrize("char", ["\u0085", "\u009b", "\u202e", "\u202a", "\u2066", "\u2069", "\u2028", "\u2029"])
def test_c1_bidi_and_line_separator_characters_are_refused(char):
    raw = _one_line({"id": "a", "messages": [{"speaker": "t", "text": f"call {char}Maria"}]})
    msg = _problems(raw, name="c.jsonl")
    assert f"U+{ord(char):04X}" in msg and "line 1" in msg
    doccano = _one_line({"text": f"call {char}Maria", "label": []})
    assert f"U+{ord(char):04X}" in _problems(doccano, name="c.jsonl", fmt="doccano")


def test_bidi_override_in_an_id_or_speaker_is_refused():
    raw = _one_line({"id": "a\u202e", "messages": [{"speaker": "t\u202e", "text": "hi"}]})
    msg = _problems(raw, name="c.jsonl")
    assert "'id'" in msg and "'speaker'" in msg


def test_deeply_nested_label_studio_is_a_problem_not_a_traceback():
    shallow_enough_to_parse = "[" * 200 + "]" * 200
    raw = ('[{"data": {"text": "hi"}},\n{"data": {"text": "hi", "x": ' + shallow_enough_to_parse + '}}]').encode()
    assert "line 2: task 2: nested deeper than 64 levels" in _problems(raw, name="tasks.json", fmt="labelstudio")
    deep = "[" * 3000 + "]" * 3000
    raw = ('[{"data": {"text": "hi", "x": ' + deep + '}}]').encode()
    assert "nested deeper than 64 levels" in _problems(raw, name="tasks.json", fmt="labelstudio")
