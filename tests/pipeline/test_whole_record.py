"""A release de-identifies the whole record: speaker labels, ids, metadata, timestamps, the anchor."""

import json

import pytest

from pipeline.surrogates.audit import ReleaseAudit, SecondOpinion, audit_input, read_audit_inputs
from pipeline.surrogates.batch import deidentify_file
from pipeline.surrogates.engine import Deidentifier
from pipeline.surrogates.fields import FieldPolicy, FieldPolicyError, shift_timestamp
from pipeline.surrogates.leaks import LeakChecker
from pipeline.types import Dialogue, Message, Span

KEY = "whole-record-test-key"


def msg(i, speaker, text, spans=(), ts=None):
    out = []
    for words, label in spans:
        start = text.index(words)
        out.append(Span(start, start + len(words), label))
    return Message(text=text, speaker=speaker, index=i, ts=ts, spans=tuple(out))


OKAFOR = Dialogue(
    "maria-lopez-session-1",
    (
        msg(0, "Ms. Okafor", "Maria Lopez, how many does each table get?", [("Maria Lopez", "NAME")],
            ts="2024-03-01T10:15:00"),
        msg(1, "Maria Lopez", "7 each", ts="2024-03-01T10:15:42"),
        msg(2, "Ms.Okafor", "Good. Caleb, talk to me.", ts="2024-03-01T10:16:05"),
        msg(3, "Caleb", "i got 7 too", ts="2024-03-01T10:16:30"),
        msg(4, "T", "yeah jose helped me", ts="2024-03-01T10:17:00"),
        msg(5, "Student 3", "José said 28 / 4", [("José", "NAME")], ts="2024-03-01T10:17:20"),
    ),
    anchor="Ms. Okafor's class shares 28 stickers.",
    meta={"teacher": "Ms. Okafor", "student_email": "maria.lopez@lincoln.k12.us", "grade": 4, "remote": False},
)
ORIGINAL_NAMES = ("Okafor", "Maria", "Lopez", "Caleb", "José", "jose")


def released(dialogue=OKAFOR, **options):
    deid = Deidentifier(key=options.pop("key", KEY), **options)
    originals = deid.registered(dialogue)
    deid.add_forbidden(originals)
    return deid.deidentify(dialogue), originals


def every_string(d: Dialogue) -> str:
    return json.dumps({"id": d.id, "anchor": d.anchor, "meta": d.meta,
                       "messages": [[m.speaker, m.text, m.ts] for m in d.messages]}, ensure_ascii=False)


def test_no_name_of_the_record_ships_in_any_field():
    result, _ = released()
    out = every_string(result.release)
    assert not [n for n in ORIGINAL_NAMES if n.lower() in out.lower()], out


def test_speaker_labels_that_name_someone_get_that_persons_surrogate():
    result, _ = released()
    speakers = [m.speaker for m in result.release.messages]
    texts = [m.text for m in result.release.messages]
    maria = speakers[1]
    assert texts[0].startswith(f"{maria}, how many")  # speaker and text: one person, one surrogate
    caleb = speakers[3]
    assert texts[2] == f"Good. {caleb}, talk to me."
    assert speakers[0] == speakers[2] and speakers[0].startswith("Ms. ")  # "Ms.Okafor" is the same person
    assert speakers[4:] == ["T", "Student 3"]  # roles stay


def test_the_anchor_and_metadata_get_the_same_surrogates():
    result, _ = released()
    teacher = result.release.messages[0].speaker
    assert result.release.anchor == f"{teacher}'s class shares 28 stickers."
    assert result.release.meta["teacher"] == teacher
    assert result.release.meta["grade"] == 4 and result.release.meta["remote"] is False
    first, last = result.release.messages[1].speaker.lower().split()
    assert result.release.meta["student_email"] == f"{first}.{last}@lincoln.k12.us"


def test_the_id_is_keyed_opaque_and_stable():
    a, _ = released()
    b, _ = released()
    c, _ = released(key="another-key-entirely")
    assert a.release.id == b.release.id != c.release.id
    assert a.release.id.startswith("d-") and "lopez" not in a.release.id


def test_timestamps_move_by_the_dialogues_offset_and_keep_their_intervals():
    result, _ = released()
    before = [m.ts for m in OKAFOR.messages]
    after = [m.ts for m in result.release.messages]
    assert all(a != b and a[10:] == b[10:] for a, b in zip(after, before, strict=True))
    assert len({a[:10] for a in after}) == 1


def test_an_accented_name_is_found_without_its_accent():
    result, _ = released()
    assert "jose" not in result.release.messages[4].text.lower()
    assert result.release.messages[4].text.lower() == result.release.messages[4].text  # case kept
    sur = result.release.messages[5].text.split(" said")[0]
    assert result.release.messages[4].text == f"yeah {sur.lower()} helped me"


def test_keep_and_drop_policies():
    fields = FieldPolicy(speaker="keep", id="keep", ts="drop", meta_keys={"student_email": "drop", "teacher": "keep"})
    result, _ = released(fields=fields)
    assert result.release.id == OKAFOR.id
    assert [m.speaker for m in result.release.messages] == [m.speaker for m in OKAFOR.messages]
    assert all(m.ts is None for m in result.release.messages)
    assert result.release.meta == {"teacher": "Ms. Okafor", "grade": 4, "remote": False}


def test_the_leak_check_names_the_field_it_found_an_original_in():
    fields = FieldPolicy(speaker="keep", meta_keys={"student": "keep"})
    dialogue = Dialogue(OKAFOR.id, OKAFOR.messages, OKAFOR.anchor, {**OKAFOR.meta, "student": "Maria Lopez"})
    result, originals = released(dialogue, fields=fields)
    checker = LeakChecker(originals)
    hits = checker.check_result(result)
    assert {h.field for h in hits} == {"speaker", "meta.student"}
    assert all(h.to_dict(public=True).keys() >= {"field", "index"} for h in hits)
    assert not LeakChecker(released()[1]).check_result(released()[0])


def test_the_second_opinion_reads_the_metadata_and_says_which_field():
    result, _ = released()
    audit = ReleaseAudit(second_opinion=SecondOpinion())
    pending = audit.check_many([result])
    email = [c for c in pending if c.field == "meta.student_email"]
    assert email and email[0].label == "EMAIL" and email[0].index == -2
    assert email[0].text.endswith("@lincoln.k12.us")  # the original value's offsets
    # what a chunk on another worker reads of the dialogue carries the fields too
    again = next(read_audit_inputs([json.dumps(audit_input(result))]))
    assert [c.key for c in ReleaseAudit(second_opinion=SecondOpinion()).check_many([again])] == [c.key for c in pending]


def test_a_confirmed_field_candidate_is_replaced_on_the_next_build():
    result, _ = released()
    email = next(c for c in ReleaseAudit(second_opinion=SecondOpinion()).check_many([result])
                 if c.field == "meta.student_email")
    again, _ = released(confirmed_fields={OKAFOR.id: [(email.field, email.start, email.end, email.label)]})
    assert "lincoln" not in again.release.meta["student_email"]
    assert "@" in again.release.meta["student_email"]


def test_an_uncued_bare_number_is_kept_and_asked_about():
    d = Dialogue("n", (msg(0, "tutor", "The total number of old records that the 5 people brought in is 14.",
                           [("14", "AGE")]),
                       msg(1, "student", "I'm 14 years old", [("14", "AGE")])))
    result, _ = released(d)
    assert result.release.messages[0].text.endswith(" is 14.")
    assert [c.reason for c in result.candidates] == ["maths_number"]  # a maths-dense message
    chat = Dialogue("c", (msg(0, "student", "my brother has 14 of those at home", [("14", "AGE")]),))
    assert [c.reason for c in released(chat)[0].candidates] == ["uncued_number"]
    assert "14" not in result.release.messages[1].text  # an age statement is a cue


@pytest.mark.parametrize(("value", "days", "out"), [
    ("2024-03-01T10:15:00", 3, "2024-03-04T10:15:00"), ("2024-03-01", -1, "2024-02-29"),
    ("10:15", 30, "10:15"), ("00:03:12.5", 30, "00:03:12.5"), ("1709288100", 1, "1709374500"),
    ("03/01/2024", 1, "03/02/2024"), ("whenever", 1, None),
])
def test_timestamps_shift_in_their_own_format(value, days, out):
    assert shift_timestamp(value, days) == out


def test_a_bad_field_policy_says_what_is_known():
    with pytest.raises(FieldPolicyError, match="speaker"):
        FieldPolicy.from_config({"speaker": "hide"})
    with pytest.raises(FieldPolicyError, match="known"):
        FieldPolicy.from_config({"colour": "red"})
    assert FieldPolicy.from_config({"meta_keys": {"grade": "keep"}}).meta_policy("grade") == "keep"


def test_deidentify_file_releases_the_whole_record_and_counts_speaker_originals(tmp_path):
    src = tmp_path / "in.jsonl"
    obj = {"id": OKAFOR.id, "anchor": OKAFOR.anchor, "meta": dict(OKAFOR.meta), "messages": [
        {"speaker": m.speaker, "text": m.text, "ts": m.ts,
         "spans": [{"start": s.start, "end": s.end, "label": s.label} for s in m.spans]} for m in OKAFOR.messages]}
    src.write_text(json.dumps(obj) + "\n", encoding="utf-8")
    summary = deidentify_file(src, tmp_path / "out.jsonl", key=KEY)
    out = (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    assert not [n for n in ORIGINAL_NAMES if n.lower() in out.lower()]
    assert summary["strategy"]["fields"]["speaker"] == "pseudonym"
    assert summary["leaks"] == 0
    mapping = [json.loads(line) for line in (tmp_path / "out.mapping.jsonl").open(encoding="utf-8")]
    assert {"label": "DIALOGUE_ID", "original": OKAFOR.id} .items() <= mapping[0].items()


@pytest.mark.parametrize(("text", "number", "label", "prev"), [
    ("my locker combo is 35-14-27 lol", "35-14-27", "OTHER_IDENTIFIER", ""),
    ("My bus pass number is 2624", "2624", "ID_NUMBER", ""),
    ("student #: 1438", "1438", "ID_NUMBER", ""),
    ("If you need to reschedule, call the center at 3825440892.", "3825440892", "PHONE", ""),
    ("1-810-833-5127", "1-810-833-5127", "PHONE", ""),
    ("thats my brother Corey, he is 6", "6", "AGE", ""),
    ("My bday is 12/19!", "12/19", "DATE_OF_BIRTH", ""),
    ("it's 67255273", "67255273", "ID_NUMBER", "I need your student id for the portal."),
    ("13", "13", "AGE", "how old are you?"),
])
def test_a_number_said_to_be_personal_is_replaced(text, number, label, prev):
    messages = ([msg(0, "tutor", prev)] if prev else []) + [msg(len(prev and [1]), "student", text, [(number, label)])]
    result, _ = released(Dialogue("c", tuple(messages)))
    assert number not in result.release.messages[-1].text and not result.candidates


@pytest.mark.parametrize(("text", "number", "label"), [
    ("The total number of old records that the 5 people brought in is 14.", "14", "AGE"),
    ("Sam is 12 years old. In 5 years, how old will he be? 12 + 5 = 17", "12", "AGE"),
    ("divide 4815162342 by 2 and add 3/4", "4815162342", "PHONE"),
    ("the number of apples is 2624", "2624", "ID_NUMBER"),
    ("so 6/11 of the class said yes", "6/11", "DATE"),
])
def test_a_number_nothing_says_is_personal_is_kept_and_asked_about(text, number, label):
    result, _ = released(Dialogue("m", (msg(0, "tutor", text, [(number, label)]),)))
    assert number in result.release.messages[0].text
    assert [c.text for c in result.candidates] == [number]


def test_a_keyed_id_is_the_releases_own_and_no_leak():
    d = Dialogue("Student D", (msg(0, "T", "D, what is 3/4 of 8?", [("D", "NAME")]),))
    result, originals = released(d)
    assert result.release.id.startswith("d-")
    assert LeakChecker(originals).check_result(result) == []


def test_my_new_number_in_a_long_division_is_no_date():
    text = "Bring down my 6.  My new number is 6, so I need 6 or less."
    d = Dialogue("ld", (msg(0, "teacher", text, [("6", "DATE_OF_BIRTH")]),))
    result, _ = released(d)
    assert result.release.messages[0].text == text and [c.text for c in result.candidates] == ["6"]
