"""A ``.spacy`` DocBin is zlib-compressed msgpack, so a few KB can declare hundreds
of MB or hundreds of thousands of docs. The reader bounds the decompressed size (streaming, never past
the bound), the compression ratio and the declared counts, and refuses with a numbered CorpusError
before spaCy expands anything."""

from __future__ import annotations

import tracemalloc
import zlib

import pytest

pytest.importorskip("spacy")

import srsly  # noqa: E402  (comes with spaCy)

from pipeline.corpus import CorpusError  # noqa: E402
from pipeline.formats import parse_upload  # noqa: E402
from pipeline.formats.spacy_docbin import MAX_RATIO, parse_docbin, to_docbin  # noqa: E402
from pipeline.types import Dialogue, Message, Span  # noqa: E402

MB = 1024 * 1024


def _attrs() -> list[int]:
    from spacy.tokens import DocBin

    return DocBin().attrs


def _docbin(**fields) -> bytes:
    """A DocBin file written by hand: what ``DocBin.to_bytes`` writes, with ``fields`` replaced."""
    msg = {"version": "0.1", "attrs": _attrs(), "tokens": b"", "spaces": b"", "lengths": b"",
           "strings": [], "cats": [], "flags": [], "span_groups": []}
    msg.update(fields)
    return zlib.compress(srsly.msgpack_dumps(msg), 9)


def _empty_docs(n: int) -> bytes:
    return _docbin(lengths=bytes(4 * n), cats=[{}] * n, flags=[{}] * n, span_groups=[b""] * n)


def _refused(raw: bytes, **kwargs) -> tuple[str, int]:
    """The error and the peak traced allocation (bytes) of parsing ``raw``."""
    tracemalloc.start()
    try:
        with pytest.raises(CorpusError) as err:
            parse_docbin(raw, **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return str(err.value), peak


def _no_spacy_expansion(monkeypatch):
    """Fail the test if spaCy's own (unbounded) DocBin.from_bytes is reached."""
    from spacy.tokens import DocBin

    def boom(self, data):
        raise AssertionError("DocBin.from_bytes reached for a file that should have been refused")

    monkeypatch.setattr(DocBin, "from_bytes", boom)


def test_a_zlib_bomb_is_refused_without_decompressing_past_the_limit(monkeypatch):
    _no_spacy_expansion(monkeypatch)
    raw = _docbin(tokens=bytes(50 * MB))
    assert len(raw) < 100_000
    msg, peak = _refused(raw, max_bytes=MB)
    assert "line 1:" in msg and "1,048,576-byte import limit" in msg and "decompresses to more than" in msg
    assert peak < 8 * MB, f"{peak:,} bytes traced while refusing a 50 MB bomb under a 1 MB limit"


def test_a_zlib_bomb_is_refused_by_its_ratio_under_the_default_limit(monkeypatch):
    _no_spacy_expansion(monkeypatch)
    raw = _docbin(tokens=bytes(50 * MB))
    msg, peak = _refused(raw)  # the default limit (512 MiB) is far above 50 MB: the ratio catches it
    assert f"more than {MAX_RATIO}×" in msg and "not a spaCy DocBin" not in msg
    assert peak < (MAX_RATIO * len(raw)) * 2 + 8 * MB


def test_a_tiny_file_declaring_200000_docs_is_refused_before_spacy_expands_them(monkeypatch):
    _no_spacy_expansion(monkeypatch)
    raw = _empty_docs(200_000)  # 1.4 MB inflated: under the limit, so only the declared count refuses it
    assert len(raw) < 5_000
    msg, _ = _refused(raw, max_bytes=2 * MB, max_ratio=10_000)
    assert "line 1:" in msg and "200,000 docs" in msg and "2,097,152-byte import limit" in msg
    assert msg.count("\n") <= 2, "one problem, not one per declared doc"


def test_a_tiny_file_declaring_200000_docs_is_refused_under_the_default_limit(monkeypatch):
    _no_spacy_expansion(monkeypatch)
    msg, _ = _refused(_empty_docs(200_000))
    assert f"more than {MAX_RATIO}×" in msg


def test_declared_token_count_over_the_limit_is_refused(monkeypatch):
    _no_spacy_expansion(monkeypatch)
    raw = _docbin(lengths=(2**31 - 1).to_bytes(4, "little"), cats=[{}], flags=[{}], span_groups=[b""])
    msg, _ = _refused(raw, max_bytes=MB)
    assert "declares 2,147,483,647 tokens" in msg and "1,048,576-byte import limit" in msg


@pytest.mark.parametrize("fields, expected", [
    ({"lengths": (5).to_bytes(4, "little"), "cats": [{}], "flags": [{}], "span_groups": [b""]},
     "lengths declare 5 tokens but it holds 0"),
    ({"lengths": bytes(8), "cats": [{}], "flags": [{}, {}], "span_groups": [b"", b""]},
     "'cats' has 1 entries for 2 docs"),
    ({"lengths": b"\xff\xff\xff\xff", "cats": [{}], "flags": [{}], "span_groups": [b""]},
     "negative"),
    ({"lengths": b"\x00\x00\x00", "cats": [{}], "flags": [{}], "span_groups": [b""]},
     "'lengths'"),
    ({"attrs": []}, "'attrs'"),
])
def test_an_inconsistent_docbin_is_a_clear_problem_not_a_numpy_error(monkeypatch, fields, expected):
    _no_spacy_expansion(monkeypatch)
    msg, _ = _refused(_docbin(**fields))
    assert "line 1:" in msg and expected in msg and "reshape" not in msg


@pytest.mark.parametrize("payload", [b"\x00" * 1000, srsly.msgpack_dumps([1, 2, 3]), srsly.msgpack_dumps({"x": 1})])
def test_not_a_docbin_after_decompressing_is_refused(payload):
    msg, _ = _refused(zlib.compress(payload))
    assert "not a spaCy DocBin file" in msg


@pytest.mark.parametrize("cut", [1, 10, 100])
def test_a_truncated_file_is_refused(cut):
    good, _ = to_docbin([_dialogue()])
    msg, _ = _refused(good[:-cut])
    assert "not a spaCy DocBin file" in msg


def _dialogue() -> Dialogue:
    return Dialogue("d1", (Message("Hi Maria from Lincoln", "Tutor", "tutor", 0, None, (Span(3, 8, "NAME"),)),))


def test_a_real_docbin_within_the_limit_still_imports():
    data, _ = to_docbin([_dialogue()])
    size = len(zlib.decompress(data))
    [d] = parse_docbin(data, max_bytes=size)
    assert d.messages[0].text == "Hi Maria from Lincoln" and d.messages[0].spans == (Span(3, 8, "NAME"),)
    with pytest.raises(CorpusError, match=f"{size - 1:,}-byte import limit"):
        parse_docbin(data, max_bytes=size - 1)


def test_parse_upload_passes_the_limit_to_the_docbin_reader():
    raw = _docbin(tokens=bytes(5 * MB))
    with pytest.raises(CorpusError, match="1,048,576-byte import limit"):
        parse_upload(raw, name="bomb.spacy", max_bytes=MB)
