"""Surrogates, tags and redaction; the leak check; the utility report (no database).

The property tests build random dialogues full of names, schools, cities, e-mails, phones, ids,
ages and dates (Faker's lists, the same pools the surrogates draw from, so collisions are tried
often) around maths talk, and check every surrogate rule on the release (type and form kept, never an
original, never within one edit of one, one surrogate per original).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.surrogates import Deidentifier, build_deidentifier, deidentify_stream, pools, tag_for
from pipeline.surrogates.engine import GENERATORS
from pipeline.surrogates.formats import age_band, shift_date
from pipeline.surrogates.keyed import (
    KeyedRandom,
    SurrogateKeyError,
    apply_case,
    case_pattern,
    normalize,
    strip_possessive,
    within_one_edit,
)
from pipeline.surrogates.leaks import LeakChecker
from pipeline.surrogates.names import infer_gender
from pipeline.surrogates.results import REDACTED
from pipeline.surrogates.rules import rule_error, shape, type_error
from pipeline.surrogates.sweep import base_of
from pipeline.surrogates.utility import TextStats, UtilityReport
from pipeline.types import Detection, Dialogue, Message, Span

KEY = "test-surrogate-key-0001"
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make_dialogue(
    did: str, texts: list[tuple[str, list[tuple[str, str]]]], anchor: str = ""
) -> Dialogue:
    """Messages from ``(text, [(pii substring, label)])``; each substring's first occurrence is spanned."""
    msgs = []
    for i, (text, pii) in enumerate(texts):
        spans, pos = [], 0
        for value, label in pii:
            start = text.index(value, pos)
            spans.append(Span(start, start + len(value), label))
            pos = start + len(value)
        msgs.append(
            Message(
                text=text, speaker="tutor" if i % 2 == 0 else "student", index=i, spans=tuple(spans)
            )
        )
    return Dialogue(did, tuple(msgs), anchor=anchor)


def first_of(text: str) -> str:
    return text.split()[0]


# --- building blocks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "close"),
    [
        ("maria", "maria", True),
        ("maria", "marie", True),
        ("maria", "mria", True),
        ("maria", "marias", True),
        ("maria", "sofia", False),
        ("ann", "anne", True),
        ("12", "13", True),
        ("12", "9", False),
        ("", "a", True),
        ("ab", "ba", False),
    ],
)
def test_within_one_edit(a, b, close):
    assert within_one_edit(a, b) is close
    assert within_one_edit(b, a) is close


@pytest.mark.parametrize(
    ("text", "base", "suffix"),
    [
        ("Maria's", "Maria", "'s"),
        ("Maria’s", "Maria", "’s"),
        ("Jones'", "Jones", "'"),
        ("Maria", "Maria", ""),
        ("Is", "Is", ""),
    ],
)
def test_strip_possessive(text, base, suffix):
    assert strip_possessive(text) == (base, suffix)


def test_normalize_is_the_consistency_key():
    assert normalize(" MARIA's ") == normalize("maria") == "maria"
    assert normalize("Fred   Luther") == "fred luther"


@pytest.mark.parametrize(
    ("original", "pattern", "surrogate", "restored"),
    [
        ("maria", "lower", "Sofia", "sofia"),
        ("MARIA", "upper", "Sofia", "SOFIA"),
        ("Fred Luther", "title", "george fischer", "George Fischer"),
        ("McDonald", "title", "garcia", "Garcia"),
        ("iPhone", "mixed", "Garcia", "Garcia"),
    ],
)
def test_casing_is_restored(original, pattern, surrogate, restored):
    assert case_pattern(original) == pattern
    assert apply_case(surrogate, pattern) == restored


def test_keyed_random_is_deterministic_and_key_dependent():
    a, b = KeyedRandom(KEY), KeyedRandom(KEY + "x")
    assert a.rng("x", 1).random() == KeyedRandom(KEY).rng("x", 1).random()
    assert a.rng("x", 1).random() != b.rng("x", 1).random()
    assert KEY not in repr(a)
    with pytest.raises(SurrogateKeyError):
        KeyedRandom("short")


def test_gender_inference():
    assert infer_gender("Mr. Smith") == "m"
    assert infer_gender("Ms. Smith") == "f"
    assert infer_gender("Robert") == "m"
    assert infer_gender("Jennifer Lopez") == "f"
    assert infer_gender("Zzyzx") == "u"


# --- one dialogue, by example --------------------------------------------------------------


@pytest.fixture
def sample():
    return make_dialogue(
        "d1",
        [
            (
                "Hi Fred Luther, I'm Ms. Smith from Lincoln High in Springfield.",
                [
                    ("Fred Luther", "NAME"),
                    ("Ms. Smith", "NAME"),
                    ("Lincoln High", "SCHOOL"),
                    ("Springfield", "LOCATION"),
                ],
            ),
            (
                "Fred's email is fred.luther2009@gmail.com, phone (555) 201-3344, id ST-48213.",
                [
                    ("Fred's", "NAME"),
                    ("fred.luther2009@gmail.com", "EMAIL"),
                    ("(555) 201-3344", "PHONE"),
                    ("ST-48213", "ID_NUMBER"),
                ],
            ),
            (
                "fred is 12 and was born on March 3, 2012. Divide 4815162342 by 2 and add 3/4.",
                [("fred", "NAME"), ("12", "AGE"), ("March 3, 2012", "DATE_OF_BIRTH")],
            ),
            (
                "Lincoln Elementary School is on 42 Oak Street. Ms. Smith says 12 x 3 = 36.",
                [("Lincoln Elementary School", "SCHOOL"), ("42 Oak Street", "LOCATION")],
            ),
        ],
        anchor="If Fred has 5 apples and Ms. Smith gives him 3 more, how many does he have?",
    )


def kept_for_review(result):
    """The spans the engine kept as they are (maths numbers) for a person to decide."""
    return {(c.index, c.start, c.end) for c in result.candidates
            if c.reason in ("maths_number", "word_problem_number", "uncued_number")}


def mapping_of(result):
    return {e.original: e.surrogate for e in result.mapping}


def test_surrogates_keep_type_form_and_consistency(sample):
    result = Deidentifier(key=KEY).deidentify(sample)
    m = mapping_of(result)
    texts = [msg.text for msg in result.release.messages]
    # first + last mapped part by part, consistent with the bare first name
    first, last = m["Fred Luther"].split()
    assert m["Fred"] == first
    assert texts[2].startswith(f"{first.lower()} is ")
    assert pools.gender_table().get(first.lower()) in ("m", "u")
    assert texts[1].startswith(f"{first}'s email is {first.lower()}.")
    assert last.lower() in m["fred.luther2009@gmail.com"]
    assert m["fred.luther2009@gmail.com"].endswith("@gmail.com")
    # title kept; possessive kept; stage word kept; the school's stem shared by both schools
    assert m["Ms. Smith"].startswith("Ms. ") and m["Ms. Smith"] != "Ms. Smith"
    stem = m["Lincoln High"].removesuffix(" High")
    assert (
        m["Lincoln High"].endswith(" High")
        and m["Lincoln Elementary School"] == f"{stem} Elementary School"
    )
    # formats
    assert shape(m["(555) 201-3344"]) == "(999) 999-9999"
    assert shape(m["ST-48213"]) == "aa-99999"
    assert m["42 Oak Street"].endswith(" Street")
    # "fred is 12" in a maths-dense message is kept for review; confirmed, it is replaced in band
    assert "12" not in m and texts[2].startswith(f"{first.lower()} is 12 ")
    (kept,) = [c for c in result.candidates if c.reason == "maths_number"]
    age = int(mapping_of(Deidentifier(key=KEY, confirmed={kept.key}).deidentify(sample))["12"])
    assert age != 12 and age_band(age) == age_band(12)
    # the anchor text uses the same surrogates; "Ms. Smith" swept in the last message too
    assert f"If {first} has 5 apples and {m['Ms. Smith']} gives" in result.release.anchor
    assert f"{m['Ms. Smith']} says 12 x 3 = 36." in texts[3]
    # maths untouched
    assert "Divide 4815162342 by 2 and add 3/4." in texts[2]
    # release spans point at the replacements
    surrogates = {normalize(v) for v in m.values()}
    for before, after in zip(sample.messages, result.release.messages, strict=True):
        assert len(after.spans) >= len(before.spans) - (before.index == kept.index)
        for s in after.spans:
            assert normalize(after.text[s.start : s.end]) in surrogates


def test_similar_originals_get_similar_surrogates():
    d = make_dialogue(
        "d",
        [
            (
                "Fred and Fred Luther and Luther",
                [("Fred", "NAME"), ("Fred Luther", "NAME"), ("Luther", "NAME")],
            )
        ],
    )
    m = mapping_of(Deidentifier(key=KEY).deidentify(d))
    assert m["Fred Luther"] == f"{m['Fred']} {m['Luther']}"


def test_dates_shift_by_one_offset_per_dialogue():
    d = make_dialogue(
        "dates",
        [
            (
                "born 2012-03-14 and on March 20, 2012 and 03/30/2012",
                [
                    ("2012-03-14", "DATE_OF_BIRTH"),
                    ("March 20, 2012", "DATE_OF_BIRTH"),
                    ("03/30/2012", "DATE_OF_BIRTH"),
                ],
            )
        ],
    )
    m = mapping_of(Deidentifier(key=KEY).deidentify(d))
    a = dt.date.fromisoformat(m["2012-03-14"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", m["2012-03-14"])
    assert re.fullmatch(r"\d{2}/\d{2}/\d{4}", m["03/30/2012"])
    offset = (a - dt.date(2012, 3, 14)).days
    assert offset != 0
    assert shift_date("March 20, 2012", offset) == m["March 20, 2012"]
    assert shift_date("03/30/2012", offset) == m["03/30/2012"]


@pytest.mark.parametrize(
    ("text", "days", "expected"),
    [
        ("March 3", 14, "March 17"),
        ("3rd of March", 30, "2nd of April"),
        ("Mar. 3, 2012", -3, "Feb. 29, 2012"),
        ("2012-03-14", 1, "2012-03-15"),
        ("14/03/2012", 1, "15/03/2012"),
        ("July 2011", 31, "August 2011"),
        ("not a date", 3, None),
    ],
)
def test_shift_date_keeps_the_format(text, days, expected):
    assert shift_date(text, days) == expected


@pytest.mark.parametrize(("mode", "rep"), [("tag", "<NAME>"), ("redact", REDACTED)])
def test_tag_and_redact_modes(sample, mode, rep):
    result = Deidentifier(key=KEY, mode=mode).deidentify(sample)
    assert result.release.messages[0].text.startswith(f"Hi {rep}, I'm {rep} from ")
    assert result.release.messages[1].text.startswith(f"{rep}'s email")
    assert all(e.method == mode for e in result.mapping)
    assert LeakChecker(result.originals).check_result(result) == []


def test_case_insensitive_consistency_and_casing(sample):
    result = Deidentifier(key=KEY).deidentify(sample)
    m = mapping_of(result)
    assert "fred" not in m  # one row per original, whatever its casing
    assert result.release.messages[2].text.startswith(m["Fred"].lower() + " is ")


def test_deterministic_under_key_and_unlinkable_without_it(sample):
    one = Deidentifier(key=KEY).deidentify(sample).release
    two = Deidentifier(key=KEY).deidentify(sample).release
    other = Deidentifier(key="another-key-0002").deidentify(sample).release
    assert one == two
    assert one != other


def test_corpus_scope_links_dialogues_and_dialogue_scope_does_not():
    d1 = make_dialogue("a", [("Hi Jennifer", [("Jennifer", "NAME")])])
    d2 = make_dialogue("b", [("Bye Jennifer", [("Jennifer", "NAME")])])
    corpus = list(deidentify_stream([d1, d2], key=KEY, scope="corpus"))
    assert corpus[0].mapping[0].surrogate == corpus[1].mapping[0].surrogate
    per = [list(deidentify_stream([d], key=KEY))[0].mapping[0].surrogate for d in (d1, d2)]
    assert all(normalize(p) != "jennifer" for p in per)


def test_never_another_original_of_the_corpus():
    # every female first name of the pool but one is an original: the surrogate must be that one
    names = pools.first_names()["f"]
    keep = names[len(names) // 2]
    forbidden = [("NAME", n) for n in names if n != keep]
    d = make_dialogue("x", [("Hi Mary", [("Mary", "NAME")])])
    deid = Deidentifier(key=KEY, forbidden=forbidden)
    sur = deid.deidentify(d).mapping[0].surrogate
    assert normalize(sur) not in {normalize(n) for _, n in forbidden}
    assert sur != "Mary"


def test_offline_failure_falls_back_to_tag(monkeypatch, sample):
    def broken(original, ctx):
        raise ValueError("no surrogate")

    monkeypatch.setitem(GENERATORS, "NAME", broken)
    deid = Deidentifier(key=KEY)
    result = deid.deidentify(sample)
    assert result.release.messages[0].text.startswith("Hi <NAME>, I'm <NAME> from ")
    assert deid.fallbacks["offline_to_tag"] >= 3
    assert LeakChecker(result.originals).check_result(result) == []


def test_build_from_config_rejects_unknown_keys():
    deid = build_deidentifier({"mode": "tag", "scope": "corpus"}, key=KEY)
    assert deid.strategy == "tag@3" and deid.describe()["scope"] == "corpus"
    with pytest.raises(ValueError, match="unknown"):
        build_deidentifier({"colour": "red"}, key=KEY)
    with pytest.raises(ValueError, match="mode"):
        Deidentifier(key=KEY, mode="shout")


def test_stream_accepts_a_detector_or_a_callable(sample):
    class Fake:
        def detect_many(self, dialogues):
            for d in dialogues:
                yield [Detection(d.id, m.index, m.spans) for m in d.messages]

    by_detector = [r.release for r in deidentify_stream([sample], Fake(), key=KEY)]
    by_callable = [
        r.release
        for r in deidentify_stream([sample], lambda d: [m.spans for m in d.messages], key=KEY)
    ]
    by_gold = [r.release for r in deidentify_stream([sample], key=KEY)]
    assert by_detector == by_callable == by_gold


# --- the leak check -----------------------------------------------------------------------


def test_leak_check_reports_each_hit_with_its_location():
    d = make_dialogue(
        "d9",
        [("nothing here", []), ("Call Maria at 555 201 3344 or MARIA's mom", [])],
        anchor="maria",
    )
    checker = LeakChecker(
        [("NAME", "Maria"), ("PHONE", "(555) 201-3344"), ("AGE", "12"), ("NAME", "Will")]
    )
    hits = checker.check_dialogue(d)
    found = sorted((h.index, h.start, h.found, h.how) for h in hits)
    assert found == [
        (-1, 0, "maria", "text"),
        (1, 5, "Maria", "text"),
        (1, 14, "555 201 3344", "compact"),
        (1, 30, "MARIA", "text"),
    ]
    assert checker.report.to_dict()["leaks"] == 4 and not checker.report.publishable


def test_leak_check_is_word_bounded_and_keeps_common_words_case_sensitive():
    checker = LeakChecker([("NAME", "Ann"), ("NAME", "Will"), ("AGE", "12")])
    assert checker.scan_text("Annie will plan 12 apples; banner") == []
    assert [f.how for f in checker.scan_text("and Will and ann")] == ["text", "text"]
    assert checker.scan_text("Will you help?") == []  # a sentence start is not a name


# --- utility ------------------------------------------------------------------------------


def test_utility_report_counts_and_keeps_maths(sample):
    report = UtilityReport()
    report.add(Deidentifier(key=KEY).deidentify(sample))
    out = report.to_dict()
    assert out["maths_intact"] is True
    assert out["number_tokens"]["share"] == 1.0 and out["number_tokens"]["outside_pii"] >= 5
    assert out["math_expressions"]["preserved"] >= 1
    assert out["replaced_by_label"]["NAME"] >= 4
    assert out["before"]["turns"] == out["after"]["turns"] == 4
    assert {
        "words_per_turn",
        "vocabulary",
        "entropy_1gram",
        "entropy_2gram",
        "entropy_3gram",
    } <= set(out["before"])
    json.dumps(out)


def test_utility_report_counts_each_side_s_own_text_changed_or_not(sample):
    """The release side counts what was released: the messages a surrogate changed with their
    new words, the unchanged ones (counted with the original's n-grams, not tokenized again) as
    they are: the same figures as counting every released text afresh."""
    maths = Message(text="So 3/4 of 12 is 9, and 9351 / 7 is next.", index=len(sample.messages))
    result = Deidentifier(key=KEY).deidentify(dataclasses.replace(sample, messages=(*sample.messages, maths)))
    changed = [a.text != b.text for a, b in zip(result.original.messages, result.release.messages, strict=True)]
    assert any(changed) and not all(changed)
    report = UtilityReport()
    report.add(result)
    for side, dialogue in (("before", result.original), ("after", result.release)):
        afresh = TextStats()
        for m in dialogue.messages:
            afresh.add(m.text)
        assert report.to_dict()[side] == afresh.to_dict(), side
    assert report.to_dict()["before"] != report.to_dict()["after"]


# --- LLM surrogates ----------------------------------------------------------------------


fake_openai = pytest.importorskip("tests.fake_openai")


def _llm(server, **kw):
    from pipeline.surrogates.llm import LLMSurrogates

    return LLMSurrogates(model="fake", base_url=server.base_url, api_key="k", timeout_s=5, **kw)


def _llm_dialogue():
    return make_dialogue(
        "llm", [("Hi Maria, call (555) 201-3344", [("Maria", "NAME"), ("(555) 201-3344", "PHONE")])]
    )


def test_llm_surrogates_used_when_valid():
    reply = {
        "surrogates": [
            {"original": "Maria", "label": "NAME", "surrogate": "Lucia"},
            {"original": "(555) 201-3344", "label": "PHONE", "surrogate": "(312) 448-9061"},
        ]
    }
    with fake_openai.FakeOpenAI(lambda req: fake_openai.ok(reply)) as server:
        deid = Deidentifier(key=KEY, proposer=_llm(server))
        result = deid.deidentify(_llm_dialogue())
        assert len(server.requests) == 1
    assert result.release.messages[0].text == "Hi Lucia, call (312) 448-9061"
    assert {e.method for e in result.mapping} == {"llm"}
    assert deid.strategy.startswith("surrogate@3+llm:fake:surrogates_v1#")


def test_llm_invalid_surrogates_are_reasked_then_fall_back_offline():
    bad = {
        "surrogates": [
            {"original": "Maria", "surrogate": "Marie"},
            {"original": "(555) 201-3344", "surrogate": "call me"},
        ]
    }
    fixed = {
        "surrogates": [
            {"original": "Maria", "surrogate": "Lucia"},
            {"original": "(555) 201-3344", "surrogate": "555"},
        ]
    }
    handler = fake_openai.scripted([fake_openai.ok(bad), fake_openai.ok(fixed)])
    with fake_openai.FakeOpenAI(handler) as server:
        deid = Deidentifier(key=KEY, proposer=_llm(server, max_rounds=2))
        result = deid.deidentify(_llm_dialogue())
        assert len(server.requests) == 2
        reask = server.requests[1]["messages"][-1]["content"]
        assert "within one edit" in reask and "keep the format" in reask
    methods = {e.original: e.method for e in result.mapping}
    assert methods == {"Maria": "llm", "(555) 201-3344": "offline"}
    assert deid.fallbacks["llm_to_offline"] == 1
    assert LeakChecker(result.originals).check_result(result) == []


@pytest.mark.parametrize(
    "reply", [fake_openai.error(500, "boom"), fake_openai.ok("not json at all")]
)
def test_llm_failure_falls_back_to_offline(reply):
    with fake_openai.FakeOpenAI(lambda req: reply) as server:
        deid = Deidentifier(key=KEY, proposer=_llm(server, max_rounds=1))
        result = deid.deidentify(_llm_dialogue())
    assert {e.method for e in result.mapping} == {"offline"}
    assert "Maria" not in result.release.messages[0].text


# --- properties ---------------------------------------------------------------------------

FIRST_M = pools.first_names()["m"]
FIRST_F = pools.first_names()["f"]
LAST = pools.last_names()
FILLER = (
    "ok so",
    "let's try",
    "great work",
    "now",
    "what is 3/4 + 1/2",
    "divide 4815162342 by 2",
    "x = 12",
    "we have 12 apples",
    "the answer is 0.75",
    "at 3:45 we stop",
    "it costs $4.50",
)
CITIES = ("Denver", "Springfield", "Austin", "Portland", "Fresno", "Boise", "Tulsa", "Omaha")
STAGES = ("High", "High School", "Middle School", "Elementary", "Academy", "Elementary School")


def cased(draw, text: str) -> str:
    return draw(st.sampled_from((text, text.lower(), text.upper())))


@st.composite
def pii_value(draw) -> tuple[str, str]:
    kind = draw(
        st.sampled_from(
            (
                "name1",
                "name2",
                "titled",
                "school",
                "city",
                "email",
                "phone",
                "id",
                "age",
                "date",
                "username",
                "url",
            )
        )
    )
    first = draw(st.sampled_from(FIRST_M + FIRST_F))
    last = draw(st.sampled_from(LAST))
    digits = draw(st.text("0123456789", min_size=4, max_size=4))
    if kind == "name1":
        return cased(draw, first), "NAME"
    if kind == "name2":
        return cased(draw, f"{first} {last}"), "NAME"
    if kind == "titled":
        return f"{draw(st.sampled_from(('Mr.', 'Ms.', 'Mrs.', 'Dr.')))} {last}", "NAME"
    if kind == "school":
        return (
            f"{draw(st.sampled_from(LAST + pools.SCHOOL_STEMS))} {draw(st.sampled_from(STAGES))}",
            "SCHOOL",
        )
    if kind == "city":
        return draw(st.sampled_from(CITIES)), "LOCATION"
    if kind == "email":
        return (
            f"{first.lower()}.{last.lower()}{digits[:2]}@{draw(st.sampled_from(('gmail.com', 'lincoln.k12.us')))}",
            "EMAIL",
        )
    if kind == "phone":
        fmt = draw(
            st.sampled_from(("({a}) {b}-{c}", "{a}-{b}-{c}", "+1 {a} {b} {c}", "{a}.{b}.{c}"))
        )
        return fmt.format(a="5" + digits[:2], b=digits[1:], c=digits), "PHONE"
    if kind == "id":
        return f"{draw(st.sampled_from(('ST', 'ID', 'A')))}-{digits}{digits[:2]}", "ID_NUMBER"
    if kind == "age":
        return str(draw(st.integers(5, 17))), "AGE"
    if kind == "date":
        y, mo, d = draw(st.integers(2005, 2015)), draw(st.integers(1, 12)), draw(st.integers(1, 28))
        day = dt.date(y, mo, d)
        fmt = draw(st.sampled_from(("%B %-d", "%B %-d, %Y", "%m/%d/%Y", "%Y-%m-%d")))
        return day.strftime(fmt), "DATE_OF_BIRTH"
    if kind == "username":
        return f"@{last.lower()}_{digits}", "USERNAME"
    return f"https://github.com/{last.lower()}{digits[:2]}", "URL"


@st.composite
def dialogue(draw, did: str = "p") -> Dialogue:
    values = draw(st.lists(pii_value(), min_size=1, max_size=6))
    texts = []
    for _ in range(draw(st.integers(1, 6))):
        chosen = draw(st.lists(st.sampled_from(values), min_size=0, max_size=3, unique=True))
        parts, pii = [draw(st.sampled_from(FILLER))], []
        for value, label in chosen:
            if any(
                normalize(value) in normalize(v) or normalize(v) in normalize(value) for v, _ in pii
            ):
                continue
            possessive = label == "NAME" and draw(st.booleans())
            shown = value + ("'s" if possessive else "")
            parts += [shown, draw(st.sampled_from(FILLER))]
            pii.append((shown, label))
        texts.append((" ".join(parts), pii))
    return make_dialogue(f"{did}{draw(st.integers(0, 10**6))}", texts)


def originals_of(dialogues):
    out = set()
    for d in dialogues:
        for m in d.messages:
            for s in m.spans:
                out.add((s.label, base_of(s.label, m.text[s.start : s.end])))
    return out


@PROPS
@given(
    st.lists(dialogue(), min_size=1, max_size=3, unique_by=lambda d: d.id),
    st.sampled_from(("surrogate", "tag", "redact")),
    st.sampled_from(("dialogue", "corpus")),
)
def test_property_a_release_never_contains_an_original(dialogues, mode, scope):
    originals = originals_of(dialogues)
    checker = LeakChecker(originals)
    results = list(
        deidentify_stream(dialogues, key=KEY, mode=mode, scope=scope, forbidden=originals)
    )
    for result in results:
        hits = checker.check_result(result)
        assert hits == [], [h.to_dict() for h in hits]
    report = UtilityReport()
    for result in results:
        report.add(result)
    assert report.to_dict()["maths_intact"]


@PROPS
@given(st.lists(dialogue(), min_size=1, max_size=3, unique_by=lambda d: d.id))
def test_property_every_surrogate_rule_holds(dialogues):
    originals = originals_of(dialogues)
    forbidden_norms = {normalize(t) for lab, t in originals if lab != "AGE"}
    deid = Deidentifier(key=KEY, forbidden=originals)
    for d in dialogues:
        result = deid.deidentify(d)
        seen: dict[str, str] = {}
        for e in result.mapping:
            if e.method == "tag":
                assert e.surrogate == tag_for(e.label)
                continue
            o, s = normalize(e.original), normalize(e.surrogate)
            assert s != o
            assert type_error(e.label, e.original, e.surrogate) is None
            if e.label != "AGE":
                assert not within_one_edit(s, o)
                assert s not in forbidden_norms
                assert (
                    rule_error(e.label, e.original, e.surrogate, forbidden=lambda n: False) is None
                )
            if e.label == "NAME":
                assert len(e.surrogate.split()) == len(e.original.split())
                g = infer_gender(e.original)
                if g in ("m", "f") and not re.match(r"(?i)(mr|mrs|ms|dr)\b", e.original):
                    assert pools.gender_table().get(first_of(e.surrogate).lower()) in (g, "u")
                if case_pattern(e.original) in ("lower", "upper"):
                    assert case_pattern(e.surrogate) == case_pattern(e.original)
            if e.label in ("PHONE", "ID_NUMBER"):
                assert shape(e.surrogate) == shape(e.original)
            if e.label == "AGE":
                assert age_band(int(e.surrogate)) == age_band(int(e.original))
            # one original, one surrogate; two originals never share one
            assert seen.setdefault(o, s) == s
        if len(
            {
                normalize(e.surrogate)
                for e in result.mapping
                if e.method != "tag" and e.label != "AGE"
            }
        ) != len([e for e in result.mapping if e.method != "tag" and e.label != "AGE"]):
            raise AssertionError("two originals share a surrogate")
        # every spanned occurrence of an original became its surrogate (case restored)
        by_norm = {normalize(e.original): e.surrogate for e in result.mapping}
        kept = kept_for_review(result)
        for before, after in zip(d.messages, result.release.messages, strict=True):
            for s in before.spans:
                if (before.index, s.start, s.end) in kept:
                    continue
                base = base_of(s.label, before.text[s.start : s.end])
                assert normalize(by_norm[normalize(base)]) in normalize(after.text)


@PROPS
@given(dialogue())
def test_property_deterministic_rebuild(d):
    a = Deidentifier(key=KEY).deidentify(d)
    b = Deidentifier(key=KEY).deidentify(d)
    assert a.release == b.release and a.mapping == b.mapping


# --- sweeping, metadata, maths ----------------------------------------------------------------


def test_corpus_sweep_replaces_other_dialogues_originals_but_not_maths():
    student = make_dialogue(
        "s",
        [
            (
                "Hi Monique, born July 18, 2012",
                [("Monique", "NAME"), ("July 18, 2012", "DATE_OF_BIRTH")],
            )
        ],
    )
    problem = Dialogue(
        "p",
        (
            Message("If Monique saves from July 7 to July 18, how many days?", "tutor", index=0),
            Message("she was born July 18, 2012 lol", "student", index=1),
        ),
        anchor="Monique has 3/4 of a pizza",
        meta={"problem_characters": ["Monique"], "topic": "fractions"},
    )
    originals = originals_of([student, problem])
    deid = Deidentifier(key=KEY, forbidden=originals)
    deid.deidentify(student)
    result = deid.deidentify(problem)
    texts = [m.text for m in result.release.messages]
    assert "Monique" not in texts[0] and "Monique" not in result.release.anchor
    assert (
        "from July 7 to July 18, how many days?" in texts[0]
    )  # a date without a year is maths here
    assert "July 18, 2012" not in texts[1]  # a full date of birth is not
    assert (
        result.release.meta["problem_characters"] != ["Monique"]
        and result.release.meta["topic"] == "fractions"
    )
    assert all(r.propagated for r in result.replacements)
    assert LeakChecker(originals).check_result(result) == []


def test_handles_keep_their_shape_and_reuse_name_surrogates():
    d = make_dialogue(
        "h",
        [
            (
                "I'm Mary Balogun, marybalogun@hotmail.com or xXWolfBunnyXx",
                [
                    ("Mary Balogun", "NAME"),
                    ("marybalogun@hotmail.com", "EMAIL"),
                    ("xXWolfBunnyXx", "USERNAME"),
                ],
            )
        ],
    )
    m = mapping_of(Deidentifier(key=KEY).deidentify(d))
    first, last = m["Mary Balogun"].lower().split()
    assert m["marybalogun@hotmail.com"] == f"{first}{last}@hotmail.com"
    user = m["xXWolfBunnyXx"]
    assert len(user) == 13 and [c.isupper() for c in user] == [c.isupper() for c in "xXWolfBunnyXx"]


@pytest.mark.parametrize(
    ("course", "pattern"),
    [("Algebra 300", r"Algebra [1-9]\d\d"), ("Calc 8", r"Calc \d\d"), ("Algebra II", r"Algebra V")],
)
def test_courses_keep_their_subject(course, pattern):
    d = make_dialogue("c", [(f"I take {course} now", [(course, "COURSE")])])
    sur = mapping_of(Deidentifier(key=KEY).deidentify(d))[course]
    assert re.fullmatch(pattern, sur), sur
    assert not within_one_edit(normalize(sur), normalize(course))


# --- the batch path ---------------------------------------------------------------------------


def test_deidentify_file_writes_release_and_reports(tmp_path):
    from pipeline.formats import read_corpus
    from pipeline.surrogates.batch import deidentify_file

    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {
            "id": "a",
            "anchor": "If Maria has 3/4 of a pie",
            "meta": {"student": "Maria"},
            "messages": [
                {
                    "speaker": "Tutor",
                    "text": "Hi Maria, what is 3/4 + 1/8?",
                    "spans": [{"start": 3, "end": 8, "label": "NAME"}],
                },
                {
                    "speaker": "Student",
                    "text": "7/8! call me at 555-201-3344",
                    "spans": [{"start": 16, "end": 28, "label": "PHONE"}],
                },
            ],
        },
        {
            "id": "b",
            "messages": [{"speaker": "Student", "text": "maria said 555 201 3344 is her number"}],
        },
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "release.jsonl"
    summary = deidentify_file(corpus, out, key=KEY)
    assert summary["publishable"] and summary["leaks"] == 0
    assert summary["dialogues"] == 2 and summary["messages"] == 3 and summary["spans"] == 2
    released = read_corpus(out)
    text = json.dumps([dict(d.meta) for d in released]) + " ".join(
        [d.anchor for d in released] + [m.text for d in released for m in d.messages]
    )
    assert "maria" not in text.lower() and "3344" not in text
    assert "what is 3/4 + 1/8?" in text and "7/8!" in text
    mapping = [
        json.loads(line) for line in (tmp_path / "release.mapping.jsonl").read_text().splitlines()
    ]
    assert {m["original"] for m in mapping} >= {"Maria", "555-201-3344"}
    for name in ("leaks", "utility", "summary"):
        assert json.loads((tmp_path / f"release.{name}.json").read_text())
    # the same key reproduces the release byte for byte
    deidentify_file(corpus, tmp_path / "again.jsonl", key=KEY)
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()


def test_deidentify_file_csv_in_csv_out(tmp_path):
    import csv

    from pipeline.surrogates.batch import deidentify_file

    src = tmp_path / "corpus.csv"
    src.write_text(
        "dialogue_id,seq,speaker,text\nd1,1,Student,what is 3/4 of 8?\nd1,0,Tutor,Hi Maria\n",
        encoding="utf-8",
    )
    out = tmp_path / "release.csv"
    summary = deidentify_file(
        src,
        out,
        key=KEY,
        mode="tag",
        spans_for=lambda d: [
            [Span(3, 8, "NAME")] if m.text == "Hi Maria" else [] for m in d.messages
        ],
    )
    assert summary["messages"] == 2 and summary["publishable"]
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    released_id = rows[0]["dialogue_id"]
    assert released_id.startswith("d-") and released_id != "d1"  # keyed: opaque, the mapping has it
    assert [(r["dialogue_id"], r["seq"], r["text"]) for r in rows] == [
        (released_id, "0", "Hi <NAME>"),
        (released_id, "1", "what is 3/4 of 8?"),
    ]
    assert (tmp_path / "release.leaks.json").exists() and not (tmp_path / "release.jsonl").exists()


def test_deidentify_file_estimates_residual_risk_from_a_gold_sample(tmp_path):
    from pipeline.corpus import CorpusError
    from pipeline.formats import read_corpus
    from pipeline.surrogates.batch import ResidualTally, deidentify_file

    def dialogue(i, spans):
        return {"id": f"d{i}", "messages": [
            {"speaker": "Parent", "text": "Hi Mr Oyekan, this is miss Gamble, Stephen's mom.", "spans": spans},
            {"speaker": "Student", "text": f"{i} + 1 = {i + 1}"},
        ]}

    stephen = [{"start": 35, "end": 42, "label": "NAME"}]
    everyone = [{"start": 6, "end": 12, "label": "NAME"}, {"start": 27, "end": 33, "label": "NAME"}, *stephen]
    corpus, gold = tmp_path / "corpus.jsonl", tmp_path / "gold.jsonl"
    corpus.write_text("".join(json.dumps(dialogue(i, stephen)) + "\n" for i in range(10)), encoding="utf-8")
    gold.write_text("".join(json.dumps(dialogue(i, everyone)) + "\n" for i in (0, 5)), encoding="utf-8")

    summary = deidentify_file(corpus, tmp_path / "none.jsonl", key=KEY)
    assert summary["publishable"]  # the leak check cannot see Oyekan or Gamble
    assert not summary["residual_risk"]["available"]
    assert summary["residual_risk"]["sentence"].startswith("No audit sample to estimate from")

    summary = deidentify_file(corpus, tmp_path / "release.jsonl", key=KEY, gold=gold)
    rr = summary["residual_risk"]
    assert rr["available"] and rr["gold_dialogues_matched"] == 2 and (rr["sampled"], rr["missed_found"]) == (4, 0)
    assert rr["strata"][0]["missed_if_unreviewed"] == 4  # the file's spans miss 2 in each parent message
    # the two gold dialogues go out with their gold: 2 misses in each of the other 8 parent messages
    assert rr["per_1000"] == pytest.approx(1000 * 16 / 20)
    # a miss per message of the two reviewed dialogues: nothing short of a census bounds the rest
    # below one miss per message, and the headline says so instead of a bound
    assert rr["per_1000_upper"] is None and rr["needed"] == {"released": 10}
    assert rr["sentence"].endswith("too few reviewed to bound it: a bound needs at least 10 reviewed dialogues "
                                   "of this length, if they find misses at the same rate.")
    assert json.loads((tmp_path / "release.summary.json").read_text())["residual_risk"] == rr
    gold.write_text("".join(json.dumps(dialogue(i, stephen)) + "\n" for i in range(6)), encoding="utf-8")
    rr = deidentify_file(corpus, tmp_path / "clean.jsonl", key=KEY, gold=gold)["residual_risk"]
    assert rr["sentence"] == "None found in 12 reviewed messages (6 dialogues); at most 300.0 per 1,000 released messages (95 %)."
    tally = ResidualTally(read_corpus(gold))  # dialogues, as the coverage bench draws them
    for d in read_corpus(corpus):
        tally.add(d, [list(m.spans) for m in d.messages])
    assert tally.to_dict() == rr

    gold.write_text(json.dumps({"id": "d1", "messages": [{"speaker": "Parent", "text": "Hi"}]}) + "\n")
    with pytest.raises(CorpusError, match="differ"):
        deidentify_file(corpus, tmp_path / "bad.jsonl", key=KEY, gold=gold)


def _said(dialogue_id: str, text: str, piece: str, label: str) -> Dialogue:
    start = text.index(piece)
    return Dialogue(dialogue_id, (Message(text, spans=(Span(start, start + len(piece), label),)),))


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_one_original_gets_one_label_across_the_release_whatever_the_order(order):
    """A detector labelled "Jordan" COURSE in one dialogue and NAME in another, and
    which it said near a tie depended on ``--workers``; after a first pass every dialogue releases
    it under one label (most seen, then NAME first), in any order."""
    dialogues = [_said("a", "ask Jordan about it", "Jordan", "COURSE"),
                 _said("b", "thanks Jordan, see you", "Jordan", "NAME")]
    forbidden = {("COURSE", "Jordan"), ("NAME", "Jordan")}
    deid = Deidentifier(key="k" * 32, mode="tag", forbidden=forbidden)
    released = [deid.deidentify(dialogues[i]) for i in order]
    labels = {r.label for result in released for r in result.replacements}
    assert labels == {"NAME"}
    assert all("<NAME>" in result.release.messages[0].text for result in released)


def test_without_a_first_pass_each_span_keeps_its_label():
    deid = Deidentifier(key="k" * 32, mode="tag")
    result = deid.deidentify(_said("a", "ask Jordan about it", "Jordan", "COURSE"))
    assert {r.label for r in result.replacements} == {"COURSE"}
