"""The development set builder, on a tiny invented fixture (never the shared real data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.devset import build_devset, find_placeholders, main
from pipeline.synthetic.render import check_span_text
from pipeline.text import iter_number_tokens

BRIDGE = [
    {"id": "b-1", "meta": {"split": "train"}, "messages": [
        {"speaker": "tutor", "text": "Hello [STUDENT]! Let's find 3/4 of 120.", "ts": "00:10"},
        {"speaker": "student", "text": "is it 90"},
        {"speaker": "tutor", "text": "Yes, [STUDENT]. Good job, [STUDENT]!"},
        {"speaker": "tutor", "text": "[STUDENT]'s answer 4815162342 / 2 = 2407581171 is right."},
    ]},
    {"id": "b-1", "meta": {"split": "train"}, "messages": [  # bridge repeats excerpts under one id
        {"speaker": "tutor", "text": "Hello [STUDENT]! Let's find 3/4 of 120."},
    ]},
    {"id": "b-2", "messages": [
        {"speaker": "tutor", "text": "The bus leaves at 3:45 and costs $2.50."},
        {"speaker": "student", "text": "ok"},
    ]},
]
NCTE = [
    {"id": "n-1", "messages": [
        {"speaker": "student", "text": "I got 12 because 4 times 3."},
        {"speaker": "teacher", "text": "Student A says 12. Student B, do you agree with Student A?"},
    ]},
    {"id": "n-2", "messages": [
        {"speaker": "student", "text": "Students counted 1,024 blocks."},
        {"speaker": "teacher", "text": "Student K, what is Student Kelly doing? Student A?"},
    ]},
]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    for name, rows in (("bridge.jsonl", BRIDGE), ("ncte_uptake.jsonl", NCTE)):
        with (tmp_path / name).open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    return tmp_path


def _placeholder_count(rows) -> int:
    return sum(len(find_placeholders(m["text"])) for r in rows for m in r["messages"])


def test_placeholder_pattern():
    found = [m.group() for m in find_placeholders("Student A and [STUDENT] but not Students or Student Kelly, Student Z.")]
    assert found == ["Student A", "[STUDENT]", "Student Z"]


def test_every_placeholder_becomes_a_labelled_name(data_dir: Path):
    dialogues = build_devset(data_dir, seed=1, keep_placeholders=0.0)
    assert [d.id for d in dialogues] == ["b-1", "b-2", "n-1", "n-2"]
    spans = [(m, s) for d in dialogues for m in d.messages for s in m.spans]
    assert len(spans) == _placeholder_count([BRIDGE[0], BRIDGE[2], *NCTE])
    for m, s in spans:
        assert s.label == "NAME"
        check_span_text(m.text, s)
    assert not any(find_placeholders(m.text) for d in dialogues for m in d.messages)
    assert "Student Kelly" in dialogues[3].messages[1].text
    possessive = dialogues[0].messages[3]
    assert possessive.text[possessive.spans[0].end :].startswith("'s answer 4815162342 / 2 = 2407581171")


def test_names_are_consistent_per_dialogue(data_dir: Path):
    d = build_devset(data_dir, seed=2, keep_placeholders=0.0)[0]
    (full,) = d.meta["devset"]["names"].values()
    first, last = full.split(" ", 1)[0], full.rsplit(" ", 1)[-1]
    for m in d.messages:
        for s in m.spans:
            assert m.text[s.start : s.end].lower() in {first.lower(), last.lower(), full.lower()}
    n = build_devset(data_dir, seed=2, keep_placeholders=0.0)[2]
    names = n.meta["devset"]["names"]
    assert set(names) == {"Student A", "Student B"} and names["Student A"] != names["Student B"]


def test_numbers_and_other_text_untouched(data_dir: Path):
    originals = [BRIDGE[0], BRIDGE[2], *NCTE]
    for raw, d in zip(originals, build_devset(data_dir, seed=3, keep_placeholders=0.0), strict=True):
        for rm, m in zip(raw["messages"], d.messages, strict=True):
            assert [t.text for t in iter_number_tokens(m.text)] == [t.text for t in iter_number_tokens(rm["text"])]
            assert m.speaker == rm["speaker"] and m.ts == rm.get("ts")


def test_kept_placeholders_are_unlabelled(data_dir: Path):
    dialogues = build_devset(data_dir, seed=4, keep_placeholders=1.0)
    assert not any(m.spans for d in dialogues for m in d.messages)
    assert sum(d.meta["devset"]["kept_placeholders"] for d in dialogues) == _placeholder_count(
        [BRIDGE[0], BRIDGE[2], *NCTE]
    )


def test_deterministic_and_limit(data_dir: Path):
    a = build_devset(data_dir, seed=5)
    assert [[m.text for m in d.messages] for d in a] == [[m.text for m in d.messages] for d in build_devset(data_dir, seed=5)]
    limited = build_devset(data_dir, seed=5, limit=2)
    assert len(limited) == 2
    by_id = {d.id: d for d in a}
    for d in limited:  # names of a dialogue do not depend on the limit
        assert [m.text for m in d.messages] == [m.text for m in by_id[d.id].messages]
    only = build_devset(data_dir, seed=5, only_with_placeholders=True)
    assert [d.id for d in only] == ["b-1", "n-1", "n-2"]


def test_missing_file_is_a_clear_error(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="bridge.jsonl"):
        build_devset(tmp_path)


def test_cli(data_dir: Path, tmp_path: Path):
    out = tmp_path / "dev.jsonl"
    assert main(["--data", str(data_dir), "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["b-1", "b-2", "n-1", "n-2"]
