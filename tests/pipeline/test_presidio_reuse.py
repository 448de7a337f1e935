"""A text Presidio analysed lately is not analysed again (spaCy is most of a release's second
opinion), and what the detector says is the same as when every text is analysed afresh; the phone
recognizer skips texts without a digit with the same results."""

from __future__ import annotations

import pytest

from pipeline.detectors.presidio import detector as presidio
from pipeline.registry import build
from pipeline.types import Dialogue, Message

TEXTS = ("Hi Maria, ready?", "Yeah.", "What is 12 + 30?", "Call me at (617) 555-0123.", "Yeah.",
         "Brianna, please put that away.", "My email is ana@example.org")


def dialogue(did: str, *texts: str, anchor: str = "") -> Dialogue:
    return Dialogue(did, tuple(Message(t, index=i, speaker="Maria") for i, t in enumerate(texts)), anchor=anchor)


@pytest.fixture
def spacy_texts(monkeypatch):
    """Every text spaCy is given, in order (the engine is shared by the detectors of one config)."""
    seen: list[str] = []
    engine = build("presidio", {"preset": "tuned"}).engine
    process = engine.nlp_engine.process_batch

    def counting(texts, *args, **kwargs):
        texts = list(texts)
        seen.extend(texts)
        return process(texts, *args, **kwargs)

    monkeypatch.setattr(engine.nlp_engine, "process_batch", counting)
    return seen


def test_a_repeated_text_is_analysed_once_with_the_same_detections(spacy_texts) -> None:
    first = dialogue("a", *TEXTS)
    again = dialogue("b", *reversed(TEXTS), anchor="Maria buys 3 pens.")  # other neighbours, other anchor
    reused = build("presidio", {"preset": "tuned"})
    out = list(reused.detect_many([first, again]))
    assert sorted(spacy_texts) == sorted(set(TEXTS))
    fresh = [build("presidio", {"preset": "tuned"}).detect(d) for d in (first, again)]
    assert out == fresh
    assert any(det.spans for det in out[1])


def test_without_reuse_every_text_is_analysed_each_time_with_the_same_detections(spacy_texts) -> None:
    first, again = dialogue("a", *TEXTS), dialogue("b", *TEXTS)
    detector = build("presidio", {"preset": "tuned", "reuse": False})
    out = list(detector.detect_many([first]))
    out += list(detector.detect_many([again]))
    assert len(spacy_texts) == 2 * len(TEXTS)  # every message of each dialogue went through spaCy
    assert not detector._analysed and not detector._empty
    assert [d.spans for d in out[0]] == [d.spans for d in out[1]]


def test_what_is_kept_does_not_hold_its_batch_of_token_vectors() -> None:
    """Each spaCy doc's token vectors are a view of its whole batch's array: an analysis kept for
    reuse held that array alive (hundreds of megabytes in a release's worker)."""
    texts = [f"Maria Lopez, call me on (617) 555-01{i:02d} about problem {i}" for i in range(80)]
    detector = build("presidio", {"preset": "tuned"})
    fresh = list(detector.detect_many([dialogue("a", *texts)]))
    assert len(detector._analysed) == len(texts)
    for _results, doc in detector._analysed.values():
        root = doc.tensor
        while getattr(root, "base", None) is not None:
            root = root.base
        assert root.nbytes == 0
    # and what was kept still judges the results as before
    (again,) = detector.detect_many([dialogue("b", *texts)])
    assert [d.spans for d in again] == [d.spans for d in fresh[0]]
    assert any(det.spans for det in fresh[0])


def test_what_is_kept_is_bounded(spacy_texts, monkeypatch) -> None:
    monkeypatch.setattr(presidio, "CACHE_TEXTS", 2)
    monkeypatch.setattr(presidio, "CACHE_EMPTY_TEXTS", 1)
    detector = build("presidio", {"preset": "tuned"})
    detector.detect(dialogue("a", *TEXTS))
    assert len(detector._analysed) == 2 and len(detector._empty) == 1
    spacy_texts.clear()
    detector.detect(dialogue("b", TEXTS[0], TEXTS[-1]))  # the oldest went, the latest stayed
    assert spacy_texts == [TEXTS[0]]


@pytest.mark.parametrize("text", ["no digits at all, just words", "Call (617) 555-0123 today",
                                  "call ６１７-５５５-０１２３", "+44 20 7946 0958", "twelve", "", "x" * 300,
                                  "ring 030 1234", "+49 30 1234", "9351 / 7 = 1335.857", "3/4 of 12",
                                  "mein Büro: 0 30 12 34", "+683 4002", "x1y2z3w4", "x = 12, y = 345",
                                  "3/4 of 12 is 9", "617 - 555 - 0123", "(617)555.0123 x12", "617 of 555 of 0123",
                                  "+1 617 555 0123 ext. 9", "1 2 3 4", "1     2 3 4", "1/2/3/4", "12#34 56",
                                  "617 -- 555 -- 012 -- 3", "6 -- 1 -- 7 -- 5 -- 5 -- 5 -- 0 -- 1 -- 2 -- 3"])
def test_the_phone_recognizer_finds_what_it_found_before(text: str) -> None:
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    engine = build("presidio", {"preset": "tuned"}).engine
    (gated,) = [r for r in engine.registry.recognizers if isinstance(r, PhoneRecognizer)]
    plain = PhoneRecognizer()
    assert [(r.start, r.end, r.score) for r in gated.analyze(text=text, entities=["PHONE_NUMBER"])] == \
        [(r.start, r.end, r.score) for r in plain.analyze(text=text, entities=["PHONE_NUMBER"])]


def test_no_phone_number_has_fewer_digits_than_the_gate_lets_through() -> None:
    """The gate skips texts with fewer than ``phone_min_digits`` digits: Presidio's own recognizer
    finds nothing in any of them, however the digits are written (country codes, brackets,
    extensions, Unicode digits)."""
    import random

    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    from pipeline.detectors.presidio.engine import phone_min_digits

    plain = PhoneRecognizer()
    fewest = phone_min_digits(plain)
    assert fewest > 1  # the gate skips something
    rng = random.Random(26)
    digits = "0123456789٠١٢٣٤٥٦٧٨٩０１２３４５６７８９"
    found = []
    for _ in range(3000):
        parts = [rng.choice(["+", "(", ")", " ", "-", ".", "/", "ext. ", "x", "tel: ", "call ", "#", "*"])
                 for _ in range(rng.randint(0, 5))]
        parts += [rng.choice(digits) for _ in range(rng.randint(1, fewest - 1))]
        rng.shuffle(parts)
        text = "".join(parts)
        if plain.analyze(text=text, entities=["PHONE_NUMBER"]):
            found.append(text)
    assert found == []


def test_the_gated_recognizer_says_what_presidio_s_own_says_of_digits_joined_any_way() -> None:
    """Random texts of short digit groups, joined by what the phone-number matcher allows between
    a number's blocks (up to four of its punctuation marks) or broken by words, signs and long
    gaps, with and without a lead: the gated recognizer says what Presidio's own says of every
    one, and the generator makes numbers the matcher finds (so a gate that skips one is caught)."""
    import random

    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    engine = build("presidio", {"preset": "tuned"}).engine
    (gated,) = [r for r in engine.registry.recognizers if isinstance(r, PhoneRecognizer)]
    plain = PhoneRecognizer()
    rng = random.Random(2026)
    digits = "0123456789" * 4 + "٠١٢٣٤٥٦٧٨٩０１２３４５６７８９"
    joins = [" ", "-", ".", "/", "(", ")", "x", " - ", ") ", "\u00a0", "–", "~", " -- ", ") - ", "", "", ""]
    breaks = [" of ", " = ", "+", ", ", ": ", " is ", "*", "#", "; ", "a", "     ", " and ", "=", "...."]
    found = 0
    for _ in range(2000):
        text = rng.choice(["", "call ", "+", "(", "tel ", "x = "])
        for _ in range(rng.randint(1, 6)):
            text += "".join(rng.choice(digits) for _ in range(rng.randint(1, 3)))  # a run needs its joins
            text += rng.choice(joins if rng.random() < 0.6 else breaks)
        expected = [(r.start, r.end, r.score) for r in plain.analyze(text=text, entities=["PHONE_NUMBER"])]
        assert [(r.start, r.end, r.score) for r in gated.analyze(text=text, entities=["PHONE_NUMBER"])] == expected, text
        found += bool(expected)
    assert found >= 50


def test_presidio_as_shipped_keeps_its_own_phone_recognizer_and_parser() -> None:
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    shipped = build("presidio", {"preset": "vanilla", "fast": False}).engine
    fast = build("presidio", {"preset": "vanilla"}).engine
    (own,) = [r for r in shipped.registry.recognizers if isinstance(r, PhoneRecognizer)]
    (gated,) = [r for r in fast.registry.recognizers if isinstance(r, PhoneRecognizer)]
    assert "analyze" not in vars(own) and "analyze" in vars(gated)
    assert "parser" in shipped.nlp_engine.nlp["en"].pipe_names
    assert "parser" not in fast.nlp_engine.nlp["en"].pipe_names
