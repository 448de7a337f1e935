"""Rules detector: real contact data fires, maths never does."""

from __future__ import annotations

import pytest

from pipeline.detectors.base import ConfigError
from pipeline.registry import build
from pipeline.types import Dialogue, Message


@pytest.fixture(scope="module")
def rules():
    return build("rules")


def found(detector, text: str, prev: str = "") -> list[tuple[str, str]]:
    return [(text[s.start : s.end], s.label) for s in detector.find(text, prev=prev)]


MATHS_TRAPS = [
    "2x + 3 = 11",
    "What is 3/4 + 10/12?",
    "9351 / 7",
    "1024 * 768",
    "4815162342 divided by 2",
    "divide 4815162342 by 2",
    "what is 4815162342 / 2 ?",
    "It is 3:45 now",
    "school ends at 3 pm",
    "it costs $4.50",
    "The lemonade stand made $1,234.50 in 2019",
    "the rope is 12 cm long",
    "5 kg of flour",
    "In 1998 a store sold 345 apples. How many are left?",
    "The population in 2010 was 308745538",
    "If Sam was born in 2010, how old is he in 2024?",
    "pick a number 1234567890",
    "Pick a number, say 1234567890.",
    "Let's use a big number, like 9876543210.",
    "the number 4815162342 is even",
    "the answer is 1234567890",
    "12/25/2024 is a Wednesday, count the days",
    "5 @ $2 each",
    "account for 3/4 of the pizza",
    "3.14159",
    "e.g. x = 5",
    "round 5551234567 to the nearest thousand",
    "I got 4815162342",
    "ok 4815162342",
    "can you handle this?",
    "see www.desmos.com/calculator",
    "check khanacademy.org for practice",
    "https://www.youtube.com/watch?v=abc123",
    "Pilar was born on 2/12/2004. How old will Pilar be on her birthday in 2021?",
    "If Sam is 12 years old now, how old was he 5 years ago?",
    "I'm 5 points away from the answer",
    "im 3 steps in",
    "The 4th of July is a Tuesday, how many days until the 20th?",
    "The park is 12 square feet",
    "Lay out 4 rows of 3 tiles each",
    "The bus leaves from 42 Main Street at 3:15; how long is the ride if it arrives at 4:05?",
]


@pytest.mark.parametrize("text", MATHS_TRAPS)
def test_no_spans_on_maths(rules, text: str) -> None:
    assert found(rules, text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my email is maria.lopez@gmail.com", [("maria.lopez@gmail.com", "EMAIL")]),
        ("maria (at) gmail (dot) com", [("maria (at) gmail (dot) com", "EMAIL")]),
        (
            "email me at maria dot lopez at gmail dot com",
            [("maria dot lopez at gmail dot com", "EMAIL")],
        ),
        ("Call me at 555-123-4567", [("555-123-4567", "PHONE")]),
        ("my cell is (212) 555-0123", [("(212) 555-0123", "PHONE")]),
        ("text me 917 555 2368", [("917 555 2368", "PHONE")]),
        ("My phone number 4815162342", [("4815162342", "PHONE")]),
        ("call my dad at +1-239-447-9972", [("+1-239-447-9972", "PHONE")]),
        ("follow me @maria_l2010", [("@maria_l2010", "USERNAME")]),
        ("my username is coolkid99", [("coolkid99", "USERNAME")]),
        ("my gamertag is DragonSlayer", [("DragonSlayer", "USERNAME")]),
        ("my ign: xXsniperXx", [("xXsniperXx", "USERNAME")]),
        ("tolulope__ is my discord name", [("tolulope__", "USERNAME")]),
        ("my roblox is CookieTurbo", [("CookieTurbo", "USERNAME")]),
        ("my student id is 4815162342", [("4815162342", "ID_NUMBER")]),
        ("student ID: S1234567", [("S1234567", "ID_NUMBER")]),
        ("my account number is 12345678 and 3/4 is right", [("12345678", "ID_NUMBER")]),
        ("A29137938 is my school id", [("A29137938", "ID_NUMBER")]),
        ("my library card number is 4058 1566 5366", [("4058 1566 5366", "ID_NUMBER")]),
        ("ssn 123-45-6789", [("123-45-6789", "ID_NUMBER")]),
        (
            "https://www.instagram.com/maria.lopez",
            [("https://www.instagram.com/maria.lopez", "URL")],
        ),
        ("go to https://github.com/mlopez", [("https://github.com/mlopez", "URL")]),
        ("check tiktok.com/@shadowghost lol", [("tiktok.com/@shadowghost", "URL")]),
        ("yeah ana-k.github.io", [("ana-k.github.io", "URL")]),
        (
            "see https://scratch.mit.edu/users/ana2014",
            [("https://scratch.mit.edu/users/ana2014", "URL")],
        ),
        ("my site is www.analopez.com", [("www.analopez.com", "URL")]),
        ("I was born on March 3, 2012", [("March 3, 2012", "DATE_OF_BIRTH")]),
        ("October 5th is my birthday", [("October 5th", "DATE_OF_BIRTH")]),
        ("my bday is 2016-07-01", [("2016-07-01", "DATE_OF_BIRTH")]),
        ("I'm 11. how old are you?", [("11", "AGE")]),
        ("i turn fifteen next month", [("fifteen", "AGE")]),
        ("I live at 727 Drake Drive", [("727 Drake Drive", "LOCATION")]),
        ("our address is 53 king summit", [("53 king summit", "LOCATION")]),
    ],
)
def test_finds_pii(rules, text: str, expected: list[tuple[str, str]]) -> None:
    assert found(rules, text) == expected


@pytest.mark.parametrize(
    ("prev", "text", "expected"),
    [
        ("What's your student ID so I can log the session?", "its 3356", [("3356", "ID_NUMBER")]),
        ("What name do you log in with?", "dragonwolf", [("dragonwolf", "USERNAME")]),
        ("What's your username on the site?", "its anh_xo", [("anh_xo", "USERNAME")]),
        (
            "What number should I text the schedule to?",
            "8684608790 thats my mums",
            [("8684608790", "PHONE")],
        ),
        ("Let's use a big number, like 4815162342.", "ok 4815162342", []),
        ("What is 9351 divided by 7?", "1335.857", []),
        ("When is your birthday?", "Apr. 3rd", [("Apr. 3rd", "DATE_OF_BIRTH")]),
        ("How old are you now?", "nine lol", [("nine", "AGE")]),
        (
            "What address should the books go to?",
            "4525 Rice Mews",
            [("4525 Rice Mews", "LOCATION")],
        ),
        ("How many days are in 3 weeks?", "21", []),
        ("How old are you?", "what is 12 times 3", []),
    ],
)
def test_replies_to_a_question(rules, prev: str, text: str, expected) -> None:
    assert found(rules, text, prev) == expected


def test_detect_uses_the_previous_message(rules) -> None:
    dialogue = Dialogue(
        "d1",
        (
            Message("What's your student ID?", role="tutor", index=0),
            Message("its 48213", role="student", index=1),
            Message("and 3/4 of 48213 is?", role="tutor", index=2),
        ),
    )
    dets = rules.detect(dialogue)
    assert [d.index for d in dets] == [0, 1, 2]
    assert [(s.start, s.end, s.label) for s in dets[1].spans] == [(4, 9, "ID_NUMBER")]
    assert dets[0].spans == () and dets[2].spans == ()
    assert dets[1].spans[0].source.startswith("rules:")


def test_spans_do_not_overlap_and_fit(rules) -> None:
    text = "email ana@x.org or call 555-123-4567, id 99887766, @ana_k"
    spans = rules.find(text)
    assert len(spans) == 4
    for a, b in zip(spans, spans[1:], strict=False):
        assert a.end <= b.start
    for s in spans:
        s.check(text)


def test_labels_config_limits_output() -> None:
    detector = build("rules", {"labels": ["EMAIL"]})
    assert found(detector, "ana@x.org or 555-123-4567") == [("ana@x.org", "EMAIL")]


def test_math_filter_can_be_switched_off_for_ablation() -> None:
    detector = build("rules", {"math_filter": False})
    assert found(detector, "what is 555-123-4567 minus 2?") != []


@pytest.mark.parametrize(
    "config", [{"labels": ["NAME"]}, {"labels": "EMAIL"}, {"region": "USA"}, {"colour": 1}]
)  # fmt: skip
def test_bad_config(config) -> None:
    with pytest.raises(ConfigError):
        build("rules", config)


def test_version_and_model_version(rules) -> None:
    assert rules.version
    assert rules.model_version == f"rules@{rules.version}"
