"""Whole-class lessons in the generator: names the way a classroom says them, junk never labelled."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from pipeline.filters.junk import junk_kind
from pipeline.registry import build
from pipeline.speakers import speaker_name
from pipeline.synthetic import dialogue_to_row, generate_corpus
from pipeline.synthetic.__main__ import main
from pipeline.synthetic.render import check_span_text

N = 80


@pytest.fixture(scope="module")
def synthetic_corpus():
    return generate_corpus(N, seed=21)


def lessons(synthetic_corpus):
    return [d for d in synthetic_corpus if d.meta.get("kind") == "classroom"]


def test_a_share_of_the_corpus_is_lessons_and_the_rest_is_unchanged(synthetic_corpus):
    found = lessons(synthetic_corpus)
    assert 0.2 * N <= len(found) <= 0.5 * N
    tutoring = generate_corpus(N, seed=21, classroom=0.0)
    assert not lessons(tutoring)
    for mixed, plain in zip(synthetic_corpus, tutoring, strict=True):
        if mixed.meta.get("kind") != "classroom":
            assert dialogue_to_row(mixed) == dialogue_to_row(plain)
    assert [dialogue_to_row(d) for d in generate_corpus(N, seed=21)] == [dialogue_to_row(d) for d in synthetic_corpus]


def test_lessons_name_students_as_a_classroom_does(synthetic_corpus):
    texts, names = [], []
    for d in lessons(synthetic_corpus):
        assert "teacher" in d.meta or {m.speaker for m in d.messages} <= {"Teacher", "Student"}
        for m in d.messages:
            texts.append(m.text)
            for s in m.spans:
                assert s.label == "NAME"
                names.append(check_span_text(m.text, s))
                assert junk_kind(m.text, s.start, s.end, s.label) is None, (m.text, s)
    joined = "\n".join(texts)
    assert re.search(r"^[A-Z][\w-]+\?$", joined, re.M)  # a one-word roll-call turn: "Michael?"
    assert re.search(r"\b(?:Stand up|Sit down|Thank you), [A-Za-z-]+\.", joined)
    assert re.search(r"\b[A-Za-z-]+'s (?:answer|number model|strategy)", joined)
    assert re.search(r"\b(?:Mr|Mrs|Ms|Miss|Dr)\.? [A-Z]", joined)
    assert any(n.islower() for n in names)  # transcribed lower-case


def test_classroom_junk_is_present_never_labelled_and_filtered(synthetic_corpus):
    seen: dict[str, list[str]] = {}
    for d in lessons(synthetic_corpus):
        for m in d.messages:
            for t in m.meta.get("traps", ()):
                piece = m.text[t["start"] : t["end"]]
                seen.setdefault(t["kind"], []).append(piece)
                assert not any(s.start < t["end"] and t["start"] < s.end for s in m.spans), (m.text, t)
                if t["kind"] in ("filler", "endearment", "initial", "modal_may"):
                    label = "DATE_OF_BIRTH" if t["kind"] == "modal_may" else "NAME"
                    words = piece.rstrip(".")
                    assert junk_kind(m.text, t["start"], t["start"] + len(words), label), piece
    for k in ("filler", "endearment", "maths_word", "reference", "initial", "asr", "modal_may",
              "placeholder", "problem_place", "calculation"):
        assert seen.get(k), k
    assert any(re.fullmatch(r"(?:I|US)-\d+|Route \d+|Highway \d+", p) for p in seen["problem_place"])
    assert any(p.startswith("Student ") for p in seen["placeholder"])


def test_the_cli_takes_a_classroom_share(tmp_path, capsys):
    out = tmp_path / "c.jsonl"
    assert main(["--dialogues", "6", "--seed", "3", "--classroom", "1", "--out", str(out)]) == 0
    assert out.read_text().count('"kind": "classroom"') == 6
    with pytest.raises(SystemExit):
        main(["--dialogues", "2", "--classroom", "1.5"])
    assert "between 0 and 1" in capsys.readouterr().err


def _spanned(m) -> list[str]:
    return [check_span_text(m.text, s) for s in m.spans]


def test_lessons_list_students_in_groups_pairs_and_thanks(synthetic_corpus):
    found = {"list": 0, "pair": 0, "thanks": 0, "asr": 0}
    for d in lessons(synthetic_corpus):
        for m in d.messages:
            names = _spanned(m)
            assert all(s.label == "NAME" for s in m.spans)
            if re.match(r"(?:Group \w+: |Partners: |I need )", m.text) or ", you're at table" in m.text:
                assert len(names) >= 3, m.text  # every listed student is a span
                found["list"] += 1
            if re.fullmatch(r"\S+ and \S+, (?:you're partners|you two work together)\.", m.text):
                assert len(names) == 2, m.text
                found["pair"] += 1
            if re.match(r"Thanks?(?: you)?(?: so much)?,? [A-Za-z]", m.text) and names:
                assert m.text.find(names[0]) > 0
                found["thanks"] += 1
            if m.text.islower() and names and re.match(r"(?:um|okay uh|uh huh|thank you|mhm)\b", m.text):
                found["asr"] += 1
    assert all(found.values()), found


def test_classroom_word_problem_characters_are_traps_under_strict_and_names_under_recall_first():
    strict = [d for d in generate_corpus(40, seed=5, classroom=1.0)]
    recall = [d for d in generate_corpus(40, seed=5, classroom=1.0, policy="recall_first")]
    chars = 0
    for s_d, r_d in zip(strict, recall, strict=True):
        for s_m, r_m in zip(s_d.messages, r_d.messages, strict=True):
            assert s_m.text == r_m.text
            for t in s_m.meta.get("traps", ()):
                if t["kind"] != "problem_character":
                    continue
                chars += 1
                assert not any(s.start < t["end"] and t["start"] < s.end for s in s_m.spans), s_m.text
                assert any((s.start, s.end, s.label) == (t["start"], t["end"], "NAME") for s in r_m.spans)
    assert chars >= 5


def test_tutoring_hard_negatives_carry_no_span():
    words = re.compile(r"\b(?:buddy|sweetie|kiddo|champ|hun|honey|um|umm|uhh|mhm|denominator|numerator|"
                       r"perimeter|quotient|remainder|hypotenuse|slope|maam|mam|naswer|tomorow|sessiion)\b", re.I)
    hits, kinds = 0, set()
    for d in generate_corpus(60, seed=8, classroom=0.0):
        for m in d.messages:
            for w in words.finditer(m.text):
                hits += 1
                assert not any(s.start < w.end() and w.start() < s.end for s in m.spans), m.text
            for t in m.meta.get("traps", ()):
                if t["kind"] in ("endearment", "filler", "maths_word", "typo"):
                    kinds.add(t["kind"])
                    assert not any(s.start < t["end"] and t["start"] < s.end for s in m.spans), m.text
    assert hits >= 20
    assert kinds == {"endearment", "filler", "maths_word", "typo"}


def test_hard_negative_turns_are_drawn_apart_and_optional():
    plain = generate_corpus(30, seed=4, classroom=0.0, hard_negatives=0.0)
    mixed = generate_corpus(30, seed=4, classroom=0.0)
    changed = 0
    for p, m in zip(plain, mixed, strict=True):
        extra = len(m.messages) - len(p.messages)
        assert 0 <= extra <= 4
        changed += extra > 0
        if not extra:  # a session without hard negatives is the session of generator 1.1
            assert dialogue_to_row(p) == dialogue_to_row(m)
    assert 5 <= changed <= 25
    with pytest.raises(ValueError, match="hard-negative share"):
        generate_corpus(1, hard_negatives=2.0)


# -- lessons whose record names their speakers ---------------------------------------------------

def named(synthetic_corpus):
    return [d for d in lessons(synthetic_corpus) if "teacher" in d.meta]


def test_a_share_of_lessons_names_its_speakers_and_their_texts_stay_the_same(synthetic_corpus):
    found, all_lessons = named(synthetic_corpus), lessons(synthetic_corpus)
    assert 0.15 * len(all_lessons) <= len(found) <= 0.6 * len(all_lessons)
    plain = generate_corpus(N, seed=21, named_speakers=0.0)
    assert not named(plain)
    for d, p in zip(synthetic_corpus, plain, strict=True):
        assert [(m.text, m.spans, m.role) for m in d.messages] == [(m.text, m.spans, m.role) for m in p.messages]
        if "teacher" not in d.meta:
            assert dialogue_to_row(d) == dialogue_to_row(p)
    assert [dialogue_to_row(d) for d in generate_corpus(N, seed=21)] == [dialogue_to_row(d) for d in synthetic_corpus]


def test_named_lessons_carry_names_in_labels_id_and_meta_and_timestamps(synthetic_corpus):
    glued = False
    for d in named(synthetic_corpus):
        labels = [m.speaker for m in d.messages]
        names = {label: speaker_name(label) for label in labels}
        assert any(names.values()) and any(n is None for n in names.values()), labels  # names and roles
        teacher = d.meta["teacher"]
        surname = teacher.split()[-1]
        assert speaker_name(teacher) == teacher and surname in d.id
        assert re.fullmatch(rf"synth-21-\d{{5}}\.lesson\.Year\d\.[\w'-]*{re.escape(surname)}\.(Fall|Winter|Spring|Summer)"
                            r"\.\d{6}", d.id)
        glued |= teacher.replace(" ", "") in labels
        assert set(labels) & {teacher, teacher.replace(" ", "")}
        assert re.fullmatch(r"[\w.+-]+@[\w.-]+\.\w+", d.meta["student_email"]) and isinstance(d.meta["grade"], int)
        times = [datetime.fromisoformat(m.ts) for m in d.messages]
        assert times == sorted(times) and times[0].strftime("%m%d%y") == d.id[-6:]
    assert glued  # "Ms.Carroll" as well as "Ms. Carroll"


def test_speaker_names_mentioned_in_the_texts_are_gold_names(synthetic_corpus):
    """Labels are not text and carry no spans; a mention of a named speaker in a text is a gold
    NAME like any other name there (the speakers detector finds nothing the gold lacks)."""
    detector = build("speakers")
    found = 0
    for d in named(synthetic_corpus):
        for m, detection in zip(d.messages, detector.detect(d), strict=True):
            for s in detection.spans:
                found += 1
                assert any(g.label == "NAME" and g.start < s.end and s.start < g.end for g in m.spans), (m.text, s)
    assert found > 20


def test_the_cli_takes_a_named_speakers_share(tmp_path, capsys):
    out = tmp_path / "c.jsonl"
    assert main(["--dialogues", "6", "--seed", "3", "--classroom", "1", "--named-speakers", "1",
                 "--out", str(out)]) == 0
    assert out.read_text().count('"student_email"') == 6
    with pytest.raises(SystemExit):
        main(["--dialogues", "2", "--named-speakers", "-0.1"])
    assert "between 0 and 1" in capsys.readouterr().err
