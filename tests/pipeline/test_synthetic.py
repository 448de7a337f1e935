"""The synthetic corpus: deterministic, valid gold spans, traps present and never labelled."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from pipeline.formats import read_corpus
from pipeline.synthetic import (
    TRAP_KINDS,
    build_pools,
    chat,
    corpus_stats,
    dialogue_to_row,
    generate_corpus,
    generate_dialogue,
    generate_messages,
    maths,
)
from pipeline.synthetic.__main__ import DEMO_ARGS, DEMO_PATH, main
from pipeline.synthetic.generator import make_cast
from pipeline.synthetic.render import check_span_text, compile_template, render
from pipeline.types import DEFAULT_LABELS

N = 120  # dialogues: about 3,000 messages, generated once per module
NAMED_LESSONS = [1, 15, 16, 18, 23, 25, 31, 44, 49, 50, 60, 61, 64, 76, 112]


@pytest.fixture(scope="module")
def synthetic_corpus():
    return generate_corpus(N, seed=11)


@pytest.fixture(scope="module")
def recall_corpus():
    return generate_corpus(N, seed=11, policy="recall_first")


def _rows(dialogues):
    return [dialogue_to_row(d) for d in dialogues]


# -- determinism and size -------------------------------------------------------------------

def test_same_seed_same_corpus(synthetic_corpus):
    assert _rows(generate_corpus(N, seed=11)) == _rows(synthetic_corpus)


def test_other_seed_other_corpus(synthetic_corpus):
    assert _rows(generate_corpus(5, seed=12)) != _rows(synthetic_corpus[:5])


def test_bigger_corpus_extends_smaller(synthetic_corpus):
    assert _rows(generate_corpus(7, seed=11)) == _rows(synthetic_corpus[:7])


def test_generate_dialogue_directly():
    pools = build_pools(3)
    a = generate_dialogue(random.Random(5), pools, 0, seed=3)
    b = generate_dialogue(random.Random(5), pools, 0, seed=3)
    assert dialogue_to_row(a) == dialogue_to_row(b)
    assert a.id == "synth-3-00000"


# The exact figures below are what seed 11 (and seed 2) generate today. A deliberate change of the
# generator changes them, as it changes the checked-in demo corpus; print ``corpus_stats`` and
# the first dialogue's spans to update them.

def test_corpus_size_and_lengths(synthetic_corpus):
    assert [d.id.partition(".")[0] for d in synthetic_corpus] == [f"synth-11-{i:05d}" for i in range(N)]
    # lessons whose record names the teacher carry her surname after the id
    assert [i for i, d in enumerate(synthetic_corpus) if "." in d.id] == NAMED_LESSONS
    lengths = [len(d.messages) for d in synthetic_corpus]
    assert (min(lengths), max(lengths), sum(lengths)) == (18, 49, 3704)
    assert [m.index for m in synthetic_corpus[0].messages] == list(range(len(synthetic_corpus[0].messages)))
    stats = corpus_stats(synthetic_corpus)
    assert (stats["dialogues"], stats["messages"], stats["with_anchor"]) == (N, 3704, 49)
    assert stats["spans"] == {
        "AGE": 18, "COURSE": 49, "DATE_OF_BIRTH": 14, "EMAIL": 63, "ID_NUMBER": 15, "LOCATION": 52,
        "NAME": 1264, "OTHER_IDENTIFIER": 12, "PHONE": 39, "SCHOOL": 51, "URL": 13, "USERNAME": 21}


def test_a_fixed_seed_gives_these_dialogues(synthetic_corpus):
    """Exact content for seed 11: a classroom lesson first, the first tutoring session fifth."""
    def surfaces(d):
        return [(m.index, s.label, m.text[s.start:s.end]) for m in d.messages for s in m.spans]

    lesson = synthetic_corpus[0]
    assert lesson.meta == {"generator": "blindspot-synthetic", "version": "1.2", "seed": 11,
                           "policy": "strict", "kind": "classroom", "students": 7}
    assert len(lesson.messages) == 29 and not lesson.anchor
    assert {m.speaker for m in lesson.messages} == {"Teacher", "Student"}
    assert surfaces(lesson) == [
        (0, "NAME", "Kamala"), (0, "NAME", "Pompeo"), (0, "NAME", "hilda"), (2, "NAME", "hilda"),
        (4, "NAME", "Joseph"), (5, "NAME", "Popeo"), (7, "NAME", "kamala"), (9, "NAME", "Juan"), (10, "NAME", "Marsh"),
        (11, "NAME", "Madrid"), (11, "NAME", "Joseph"), (12, "NAME", "Hilda"), (12, "NAME", "Kamala"),
        (14, "NAME", "Hilda"), (15, "NAME", "Joseph Robinson"), (16, "NAME", "robinson"), (16, "NAME", "ayinde"),
        (19, "NAME", "Hilda"), (20, "NAME", "Ayinde"), (20, "NAME", "Hodgson"), (20, "NAME", "joseph"),
        (20, "NAME", "Harrison"), (22, "NAME", "Juan"), (28, "NAME", "Samuel")]
    assert [i for i, d in enumerate(synthetic_corpus[:5]) if d.anchor] == [4]
    session = synthetic_corpus[4]
    assert session.id == "synth-11-00004" and len(session.messages) == 36
    assert session.anchor == ("Erik is 11 years old. Susan is 6 years older than Erik. How old is Susan? "
                              "What is the sum of their ages?")
    assert session.meta["problems"] == ["long_division", "ages_problem", "road_trip"]
    assert session.meta["problem_characters"] == ["Erik", "Susan", "Esperanza"]
    assert surfaces(session) == [
        (0, "NAME", "bernadette"), (2, "SCHOOL", "Rutgers"), (3, "NAME", "Bernadette"),
        (5, "ID_NUMBER", "ST-488337"), (14, "NAME", "Mathew"), (14, "NAME", "Marie"),
        (21, "NAME", "Bernadette"), (23, "COURSE", "Precalculus 1"), (23, "NAME", "Hoang"),
        (34, "NAME", "bernadette")]


def test_generate_messages_reaches_the_count():
    dialogues = generate_messages(500, seed=2)
    lengths = [len(d.messages) for d in dialogues]
    # 18 dialogues: the first 17 hold 492 messages, the 18th crosses 500 and the generator stops.
    assert lengths == [25, 35, 29, 38, 30, 22, 31, 30, 36, 24, 33, 23, 29, 26, 31, 27, 23, 34]
    assert sum(lengths[:-1]) == 492 < 500 <= sum(lengths) == 526
    assert [d.id.partition(".")[0] for d in dialogues] == [f"synth-2-{i:05d}" for i in range(18)]


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="policy"):
        generate_corpus(1, policy="lenient")


# -- gold spans -----------------------------------------------------------------------------

def test_spans_are_valid_trimmed_and_sorted(synthetic_corpus):
    for d in synthetic_corpus:
        for m in d.messages:
            assert m.text == m.text.strip() and m.text
            assert list(m.spans) == sorted(m.spans)
            for a, b in zip(m.spans, m.spans[1:], strict=False):
                assert not a.overlaps(b)
            for s in m.spans:
                assert s.label in DEFAULT_LABELS
                check_span_text(m.text, s)


def test_every_label_occurs(synthetic_corpus):
    assert set(corpus_stats(synthetic_corpus)["spans"]) == set(DEFAULT_LABELS)


SHAPES = {
    "EMAIL": re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$"),
    "PHONE": re.compile(r"^\+?[\d ().-]{7,}$"),
    "URL": re.compile(r"^(https?://)?[\w.-]+\.[a-z]{2,}(/\S*)?$"),
    "AGE": re.compile(r"^(\d{1,2}|[a-z-]+)$"),
    "COURSE": re.compile(r"^[A-Za-z][A-Za-z -]*[ -][0-9IVAB]+$", re.IGNORECASE),
    "NAME": re.compile(r"^[^\d@/:]+$"),
}


@pytest.mark.parametrize("label", sorted(SHAPES))
def test_span_texts_look_like_their_label(synthetic_corpus, label):
    seen = 0
    for d in synthetic_corpus:
        for m in d.messages:
            for s in m.spans:
                if s.label == label:
                    seen += 1
                    assert SHAPES[label].match(m.text[s.start : s.end]), (label, m.text)
    assert seen


def test_names_exclude_titles_and_possessives(synthetic_corpus):
    titled = possessive = 0
    for d in synthetic_corpus:
        for m in d.messages:
            for s in m.spans:
                if s.label != "NAME":
                    continue
                piece = m.text[s.start : s.end]
                assert not re.match(r"(?i)(mr|ms|mrs|miss|dr|coach)\.?\s", piece)
                titled += bool(re.search(r"(?i)\b(mr|ms|mrs|miss|dr)\.? $", m.text[: s.start]))
                possessive += m.text[s.end : s.end + 2] == "'s"
    assert titled > 10 and possessive > 5


def test_name_forms_vary(synthetic_corpus):
    texts = [m.text[s.start : s.end] for d in synthetic_corpus for m in d.messages for s in m.spans if s.label == "NAME"]
    assert any(t.islower() for t in texts)
    assert any(" " in t for t in texts)
    assert len(set(texts)) > 300


# -- traps ----------------------------------------------------------------------------------

def _traps(dialogues):
    for d in dialogues:
        for m in d.messages:
            for t in m.meta.get("traps", ()):
                yield d, m, t


def test_traps_are_never_labelled_under_strict(synthetic_corpus):
    for _, m, t in _traps(synthetic_corpus):
        assert t["kind"] in TRAP_KINDS
        assert not any(s.start < t["end"] and t["start"] < s.end for s in m.spans), (t, m.text)


def test_every_trap_kind_occurs():
    stats = corpus_stats(generate_corpus(400, seed=5))
    assert set(stats["traps"]) == set(TRAP_KINDS)


@pytest.mark.parametrize(
    ("kind", "pattern"),
    [
        ("fraction", r"^\d+( \d+)?/\d+$|^\d+$"),
        ("time", r"\d{1,2}:\d{2}|\d+ minutes$"),
        ("money", r"^\$\d|cents"),
        ("long_number", r"\d{4,}|\d{1,3}(,\d{3})+"),
        ("pick_number", r"^\d[\d,]{7,}$"),
        ("equation", r"=|\d+ [+×] \d+"),
        ("placeholder", r"^(\[STUDENT\]|\[NAME\]|\[TUTOR\]|<NAME>|Student [A-Z])$"),
        ("year", r"^(19|20)\d\d$"),
    ],
)
def test_trap_texts(synthetic_corpus, kind, pattern):
    found = [m.text[t["start"] : t["end"]] for _, m, t in _traps(synthetic_corpus) if t["kind"] == kind]
    assert found, kind
    for text in found:
        assert re.search(pattern, text), (kind, text)


def test_long_numbers_in_calculations_are_unlabelled(synthetic_corpus):
    long_numbers = 0
    for d in synthetic_corpus:
        for m in d.messages:
            for num in re.finditer(r"\d{7,}", m.text):
                labelled = [s for s in m.spans if s.start <= num.start() < s.end]
                if not labelled:
                    long_numbers += 1
                else:  # only identifiers carry long digit runs
                    assert labelled[0].label in {"PHONE", "ID_NUMBER", "OTHER_IDENTIFIER", "USERNAME", "URL", "EMAIL"}
    assert long_numbers > 25


def test_problem_characters_are_in_anchor_and_meta(synthetic_corpus):
    with_anchor = [d for d in synthetic_corpus if d.anchor]
    assert len(with_anchor) > N // 3
    checked = 0
    for d in with_anchor:
        chars = set(d.meta["problem_characters"])
        for c in chars:
            if c in d.anchor:
                checked += 1
                assert not any(
                    m.text[s.start : s.end].lower() == c.lower() for m in d.messages for s in m.spans
                ), (c, d.id)
    assert checked > N // 3


def test_recall_first_labels_problem_characters(synthetic_corpus, recall_corpus):
    extra = 0
    for strict_d, recall_d in zip(synthetic_corpus, recall_corpus, strict=True):
        assert [m.text for m in strict_d.messages] == [m.text for m in recall_d.messages]
        for sm, rm in zip(strict_d.messages, recall_d.messages, strict=True):
            chars = [t for t in sm.meta.get("traps", ()) if t["kind"] == "problem_character"]
            assert set(sm.spans) <= set(rm.spans)
            added = set(rm.spans) - set(sm.spans)
            assert {(s.start, s.end) for s in added} == {(t["start"], t["end"]) for t in chars}
            assert all(s.label == "NAME" for s in added)
            extra += len(added)
    assert extra > 100


def test_course_without_number_is_not_a_course(synthetic_corpus):
    plain = [m.text[t["start"] : t["end"]] for _, m, t in _traps(synthetic_corpus) if t["kind"] == "plain_course"]
    assert plain and not any(re.search(r"\d", p) for p in plain)


# -- templates ------------------------------------------------------------------------------

def test_every_template_renders():
    pools = build_pools(0)
    rng = random.Random(0)
    cast = make_cast(pools, rng)
    count = 0
    for bank in chat.ALL_BANKS:
        for template in bank:
            compile_template(template)
            segs = render(template, cast.ctx, rng)
            assert "".join(s[0] for s in segs).strip()
            count += 1
    for make in maths.PROBLEMS:
        problem = make(rng, ["Alex", "Sam"])
        ctx = {**cast.ctx, **problem.ctx}
        for _, template in problem.lines:
            render(template, ctx, rng)
            count += 1
        if problem.anchor and problem.characters:
            assert "Alex" in "".join(s[0] for s in render(problem.anchor, problem.ctx, rng))
    assert count > 250


def test_template_syntax_nests_alternatives():
    ctx = {"x": [("Maria", "NAME", None)]}
    seen = {"".join(s[0] for s in render("hi{=| {x:lower:poss} dog| there}", ctx, random.Random(i))) for i in range(40)}
    assert seen == {"hi", "hi maria's dog", "hi there"}
    with pytest.raises(ValueError):
        compile_template("hi {=a|b")


def test_surface_forms_are_many(synthetic_corpus):
    texts = {m.text for d in synthetic_corpus for m in d.messages}
    assert len(texts) > 1500


# -- files ----------------------------------------------------------------------------------

def test_cli_writes_the_import_format(tmp_path: Path):
    out = tmp_path / "c.jsonl"
    assert main(["--dialogues", "4", "--seed", "9", "--out", str(out)]) == 0
    parsed = read_corpus(out, labels=set(DEFAULT_LABELS))
    generated = generate_corpus(4, seed=9)
    assert [d.id for d in parsed] == [d.id for d in generated]
    for p, g in zip(parsed, generated, strict=True):
        assert p.anchor == g.anchor
        assert [(m.text, m.speaker, m.role, m.spans) for m in p.messages] == [
            (m.text, m.speaker, m.role, m.spans) for m in g.messages
        ]
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["meta"]["generator"] == "blindspot-synthetic"


def test_demo_corpus_is_checked_in_and_valid():
    assert DEMO_PATH.exists(), "run: python -m pipeline.synthetic --demo"
    dialogues = read_corpus(DEMO_PATH, labels=set(DEFAULT_LABELS))
    stats = corpus_stats(dialogues)
    assert stats["dialogues"] == DEMO_ARGS["dialogues"] >= 50
    assert stats["messages"] >= 1500
    assert set(stats["spans"]) == set(DEFAULT_LABELS)
    assert {d.meta["seed"] for d in dialogues} == {DEMO_ARGS["seed"]}
    speakers = {m.speaker for d in dialogues for m in d.messages}
    assert {"Tutor", "Student"} <= speakers
    named = [d for d in dialogues if "teacher" in d.meta]  # lessons whose record names people
    assert len(named) >= 2 and all(d.meta["teacher"].split()[-1] in d.id for d in named)
    for d in dialogues:
        for m in d.messages:
            for s in m.spans:
                check_span_text(m.text, s)


def test_output_does_not_depend_on_the_interpreters_hash_seed():
    """Set or dict ordering must never leak into the corpus: two processes, two hash seeds."""
    import os
    import subprocess
    import sys

    code = ("import hashlib, json; from pipeline.synthetic import generate_corpus; "
            "from pipeline.corpus import dialogue_to_obj; "
            "print(hashlib.md5(json.dumps([dialogue_to_obj(d) for d in generate_corpus(30, seed=5)]).encode()).hexdigest())")
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1


@pytest.mark.parametrize(("args", "low", "high"), [
    (["--max-messages", "8"], 1, 8),
    (["--min-messages", "10", "--max-messages", "12"], 10, 12),
    (["--min-messages", "20", "--max-messages", "24"], 20, 24),
    (["--min-messages", "23", "--max-messages", "23"], 23, 23),
    (["--min-messages", "40"], 40, 200),
])
def test_cli_message_bounds_are_bounds(tmp_path: Path, args, low, high):
    out = tmp_path / "c.jsonl"
    assert main(["--dialogues", "40", "--seed", "3", "--out", str(out), *args]) == 0
    dialogues = read_corpus(out, labels=set(DEFAULT_LABELS))
    lengths = [len(d.messages) for d in dialogues]
    assert low <= min(lengths) and max(lengths) <= high, (min(lengths), max(lengths))
    for d in dialogues:
        assert [m.index for m in d.messages] == list(range(len(d.messages)))
        for m in d.messages:
            for s in m.spans:
                check_span_text(m.text, s)


def test_the_cli_regenerates_the_checked_in_demo_corpus(tmp_path: Path):
    out = tmp_path / "demo.jsonl"
    assert main(["--demo", "--out", str(out)]) == 0
    assert out.read_bytes() == DEMO_PATH.read_bytes()
