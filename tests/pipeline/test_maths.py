"""Numeric ambiguity helpers: maths ranges, maths context, placeholders."""

from __future__ import annotations

import pytest

from pipeline.maths import (
    MATH_WORDS,
    has_pii_cue,
    in_math_context,
    is_placeholder,
    math_expression_spans,
)


def covered(text: str, sub: str) -> bool:
    """Is the first occurrence of ``sub`` inside one maths range of ``text``?"""
    i = text.index(sub)
    return any(s <= i and i + len(sub) <= e for s, e in math_expression_spans(text))


@pytest.mark.parametrize(
    ("text", "maths"),
    [
        ("2x + 3 = 11", "2x + 3 = 11"),
        ("What is 3/4 of the pizza?", "3/4"),
        ("simplify 10/12 first", "10/12"),
        ("9351 / 7", "9351 / 7"),
        ("1024 * 768", "1024 * 768"),
        ("what is 4815162342 divided by 2", "4815162342 divided by 2"),
        ("divide 4815162342 by 2", "divide 4815162342 by 2"),
        ("It costs $4.50 now", "$4.50"),
        ("we meet at 3:45", "3:45"),
        ("class ends at 3 pm", "3 pm"),
        ("the side is 12 cm", "12 cm"),
        ("it weighs 5 kg", "5 kg"),
        ("4 m", "4 m"),
        ("45% of the class", "45%"),
        ("round 0.875 to two places", "0.875"),
        ("the 3rd term", "3rd"),
        ("2^10 = 1024", "2^10 = 1024"),
        ("pick a number 1234567890", "pick a number 1234567890"),
        ("12 - 5 = 7", "12 - 5 = 7"),
        ("3 x 4 is 12", "3 x 4"),
        ("x + y = z", "x + y = z"),
        ("the answer is 42", "42"),
        ("half of 64 is 32", "half of 64"),
    ],
)
def test_maths_ranges_cover_maths(text: str, maths: str) -> None:
    assert covered(text, maths), math_expression_spans(text)


@pytest.mark.parametrize(
    "text",
    [
        "call me at 555-123-4567",
        "(212) 555-0123",
        "my email is ana.k@example.com",
        "I was born on 05/03/2010",
        "see you tomorrow",
        "ssn 123-45-6789",
        "I - a dog",
        "555 123 4567",
    ],
)
def test_contact_data_is_not_a_maths_range(text: str) -> None:
    spans = math_expression_spans(text)
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    assert not any(s <= i < e for s, e in spans for i in digits), spans


@pytest.mark.parametrize(
    ("text", "candidate"),
    [
        ("what is 4815162342 divided by 2", "4815162342"),
        ("pick a number 1234567890", "1234567890"),
        ("Let's use a big number, like 9876543210.", "9876543210"),
        ("In 1998 a store sold 345 apples. How many are left?", "1998"),
        ("If Sam was born in 2010, how old is he in 2024?", "2010"),
        ("9351 / 7", "9351"),
        ("1024 * 768 pixels", "768"),
        ("The train leaves at 3:45", "3:45"),
        ("The bike costs $129.99", "129.99"),
        ("Round 4815162342 to the nearest million", "4815162342"),
        ("the product is 5551234567", "5551234567"),
    ],
)
def test_in_math_context_true(text: str, candidate: str) -> None:
    i = text.index(candidate)
    assert in_math_context(text, i, i + len(candidate))


@pytest.mark.parametrize(
    ("text", "candidate"),
    [
        ("call me at 555-123-4567", "555-123-4567"),
        ("my student id is 4815162342 and 3/4 is right", "4815162342"),
        ("hi my number is 5551234567", "5551234567"),
        ("I was born on 05/03/2010", "05/03/2010"),
        ("ok 5551234567", "5551234567"),
        ("my account number is 12345678, the fraction is 3/4", "12345678"),
    ],
)
def test_in_math_context_false(text: str, candidate: str) -> None:
    i = text.index(candidate)
    assert not in_math_context(text, i, i + len(candidate))


def test_an_operator_expression_beats_a_cue() -> None:
    text = "my id 4815 / 5 = 963"
    i = text.index("4815")
    assert in_math_context(text, i, i + 4)


def test_pii_cues() -> None:
    text = "my phone is 555 0100"
    i = text.index("555")
    assert has_pii_cue(text, i, len(text))
    text = "he was born in 2010"
    i = text.index("2010")
    assert has_pii_cue(text, i, i + 4)
    assert not has_pii_cue(text, i, i + 4, weak=False)


@pytest.mark.parametrize(
    "s",
    ["Student A", "Student Z", "student b", "Student 3", "[STUDENT]", "[NAME]", "<NAME>",
     "[REDACTED]", "{name}", "[student name]", "XXX", "***", "Teacher T", "Speaker 2"],
)  # fmt: skip
def test_placeholders(s: str) -> None:
    assert is_placeholder(s)


@pytest.mark.parametrize(
    "s", ["Stuart", "Ana", "TJ", "Maria Lopez", "[Maria]", "Studentenwerk", "", "Student Anna"]
)
def test_not_placeholders(s: str) -> None:
    assert not is_placeholder(s)


def test_math_words_vocabulary() -> None:
    assert {"fraction", "denominator", "equation", "divide", "perimeter"} <= MATH_WORDS
    assert all(w == w.lower() for w in MATH_WORDS)


def test_spans_are_sorted_and_disjoint() -> None:
    text = "3/4 + 1/4 = 1, then 12 cm at 3:45 for $4.50 and 45%"
    spans = math_expression_spans(text)
    assert spans == sorted(spans)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
