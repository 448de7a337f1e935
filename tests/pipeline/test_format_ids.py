"""Ids for Label Studio tasks, doccano lines and spaCy Docs that carry none: derived from the file's
name and the item's content, so two such files never both make ``task-1`` (and a second one is
neither refused nor silently skipped), while reading the same file again gives the same ids."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.corpus import ParseReport
from pipeline.formats import parse_upload
from pipeline.formats._common import DerivedIds

LABELS = {"NAME", "SCHOOL", "EMAIL"}


def _labelstudio(*texts: str) -> bytes:
    return json.dumps([{"data": {"text": t}, "annotations": [{"result": []}]} for t in texts]).encode()


def _doccano(*texts: str) -> bytes:
    return "".join(json.dumps({"text": t, "label": []}) + "\n" for t in texts).encode()


def _docbin(*texts: str) -> bytes:
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    return DocBin(docs=[nlp.make_doc(t) for t in texts]).to_bytes()


FILES = {"labelstudio": (_labelstudio, "json"), "doccano": (_doccano, "jsonl"), "spacy": (_docbin, "spacy")}


def _ids(raw: bytes, name: str, fmt: str, report: ParseReport | None = None) -> list[str]:
    return [d.id for d in parse_upload(raw, name=name, labels=LABELS, fmt=fmt, report=report)]


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_two_files_without_ids_get_ids_that_do_not_collide(fmt):
    make, ext = FILES[fmt]
    a = _ids(make("Hello there", "Hi Maria"), f"monday.{ext}", fmt)
    b = _ids(make("Good morning", "Hi Maria"), f"tuesday.{ext}", fmt)
    assert len(set(a)) == 2 and len(set(b)) == 2
    assert not set(a) & set(b)  # the same text in another file is another dialogue
    assert all(i.startswith("monday-") for i in a) and all(i.startswith("tuesday-") for i in b)
    assert all(re.fullmatch(r"[\w.-]+-[0-9a-f]{12}", i) for i in a + b)


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_the_same_file_read_again_gives_the_same_ids_whatever_the_order(fmt):
    make, ext = FILES[fmt]
    first = _ids(make("one", "two", "three"), f"batch.{ext}", fmt)
    assert _ids(make("one", "two", "three"), f"batch.{ext}", fmt) == first
    # an item added at the top or an item edited changes only that item's id
    again = _ids(make("zero", "one", "two", "three!"), f"batch.{ext}", fmt)
    assert again[1:3] == first[:2] and again[0] not in first and again[3] not in first


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_identical_items_in_one_file_get_numbered_ids_not_a_duplicate_refusal(fmt):
    make, ext = FILES[fmt]
    ids = _ids(make("ok", "ok", "ok"), f"chat.{ext}", fmt)
    assert ids == [ids[0], f"{ids[0]}-2", f"{ids[0]}-3"]


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_the_report_lists_the_derived_ids(fmt):
    make, ext = FILES[fmt]
    report = ParseReport()
    ids = _ids(make("a", "b"), f"x.{ext}", fmt, report)
    assert report.derived_ids == set(ids)


def test_explicit_ids_are_kept_and_not_reported_as_derived():
    report = ParseReport()
    raw = json.dumps([{"id": 7, "data": {"text": "a"}}, {"data": {"text": "b", "dialogue_id": "d1"}},
                      {"data": {"text": "c"}}]).encode()
    ids = _ids(raw, "tasks.json", "labelstudio", report)
    assert ids[:2] == ["7", "d1"] and ids[2].startswith("tasks-")
    assert report.derived_ids == {ids[2]}
    raw = _doccano("x") + b'{"id": "line-a", "text": "y"}\n'
    report = ParseReport()
    ids = _ids(raw, "d.jsonl", "doccano", report)
    assert ids[1] == "line-a" and report.derived_ids == {ids[0]}


def test_an_unnamed_upload_falls_back_to_the_format_word():
    assert _ids(_labelstudio("a"), "", "labelstudio")[0].startswith("task-")
    assert _ids(_doccano("a"), "", "doccano")[0].startswith("line-")


def test_odd_file_names_make_safe_bounded_ids():
    derive = DerivedIds("C:\\exports\\Läbel Studio export (2)!.json", "task")
    assert derive.stem == "Läbel-Studio-export-2"
    assert len(DerivedIds("x" * 500 + ".json", "task")("a")) <= 80 + 1 + 12
